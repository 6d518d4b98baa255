"""Takeover of running CronJobs (issue 22): kube-controller-manager's cronjob-controller (and
job-controller) runs four ``*/1 * * * *`` CronJobs, kcontrol's take them over for at least one
scheduled minute, and KCM's take them back; no scheduled time gets two Jobs, none is skipped,
and ``status.active`` ends listing exactly the unfinished Jobs.

The CronJobs: two ``Allow`` whose Jobs run ``sleep 3600`` (active Jobs pile up, one more each
minute, and all are running at both switches), one ``Allow`` whose Jobs exit at once
(``successfulJobsHistoryLimit`` 10, so none is deleted) and one ``Forbid`` with a
``sleep 3600`` Job (one Job, ever). The switches follow the schedule: KCM runs the first
minute; once every CronJob has its Job, KCM restarts with ``-cronjob-controller,-job-controller``
and kcontrol-manager starts with both; once kcontrol's controller has synced every CronJob, the
next scheduled minute is kcontrol's (T2); once its Jobs exist kcontrol stops and KCM restarts
with its controllers; once KCM's cronjob-controller has synced every CronJob (its
``workqueue_*{name="cronjob"}`` on its ``/metrics``), the next minute is KCM's (T3). About
three minutes, most of it waiting for minute boundaries.

What is checked, from the Jobs left at the end (none may be deleted: the audit log proves it)
and the apiserver's audit log (who created each Job):

- each CronJob has at most one Job per ``batch.kubernetes.io/cronjob-scheduled-timestamp``,
  and each Job's name is ``<cronjob>-<that time in minutes>``;
- no minute was skipped: an ``Allow`` CronJob has a Job for every minute from the first after
  its creation to T3, with one exception. A *gap* runs from the moment the outgoing controller
  began to stop until the incoming one had synced every CronJob; a controller that starts runs
  only the most recent activation it missed (upstream, ``startingDeadlineSeconds`` unset), so a
  minute may lack its Job only if it and the next minute both fall in one gap. The ``Forbid``
  CronJob has exactly its first Job;
- each Job was created by the controller running at its scheduled time - KCM's before the
  first gap and after the second, kcontrol's between them, either of the two in a gap (the
  incoming one runs a minute the outgoing one missed, late) - and KCM's cronjob and job
  controllers wrote nothing while kcontrol's ran;
- ``status.active`` names exactly the unfinished Jobs, and ``lastScheduleTime`` is the latest
  Job's scheduled time (``Allow``); no Job ever had two active pods (the Job controllers'
  takeover).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kcontrol.client import CRONJOBS, JOBS, ApiClient, Object
from kcontrol.envtest.cluster import KUBE_CONTROLLER_MANAGER, Cluster
from kcontrol_controllers.cronjob import NAME, SCHEDULED_TIMESTAMP_ANNOTATION
from kcontrol_controllers.cronjob import SPEC as CRONJOB_SPEC
from kcontrol_controllers.job import NAME as JOB_CONTROLLER
from kcontrol_controllers.job import SPEC as JOB_SPEC
from tests.controllers.cluster_helpers import running_manager
from tests.controllers.job.exactly_once import History, job_manifest, terminal
from tests.dropin.dropin_helpers import (
    NO_SECURE_SERVING,
    AuditEvent,
    AuditTail,
    describe,
    kcontrol_agent,
    sent_by,
    sent_by_kcm,
    successful_writes,
)
from tests.integration.helpers import poll

pytestmark = [pytest.mark.slow, pytest.mark.integration]

WITHIN = 150.0
"""Seconds past a scheduled minute its Jobs get to appear, and other steps to happen."""
LONG, QUICK, FORBID = ("long-a", "long-b"), "quick", "forbid"
ALLOW = (*LONG, QUICK)
ALL = (*ALLOW, FORBID)
KCM, KCONTROL = "kube-controller-manager", "kcontrol-manager"


def cron_job(name: str, script: str, **spec: Any) -> Object:
    """A ``*/1 * * * *`` CronJob whose Jobs run ``sh -c script`` once (played by kwok)."""
    template = job_manifest(name, script, backoffLimit=0)
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": template["spec"]}, **spec},
    }


def stamp() -> datetime:
    return datetime.now(UTC)


def minute_of(moment: datetime) -> int:
    return int(moment.timestamp() // 60)


def at_minute(minute: int) -> datetime:
    return datetime.fromtimestamp(minute * 60, UTC)


def scheduled_minute(job: Object) -> int:
    """The Job's scheduled time (its annotation) in minutes; fails unless on a minute."""
    moment = datetime.fromisoformat(job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION])
    assert moment.timestamp() % 60 == 0, (job["metadata"]["name"], moment)
    return minute_of(moment)


def owner_name(job: Object) -> str:
    for ref in job["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "CronJob":
            return str(ref["name"])
    return ""


@dataclass(frozen=True)
class Gap:
    """From the moment ``outgoing`` began to stop until ``incoming`` had synced every CronJob:
    neither is known to run the schedules."""

    start: datetime
    end: datetime
    outgoing: str
    incoming: str

    def holds(self, minute: int) -> bool:
        return self.start <= at_minute(minute) <= self.end


def creators_allowed(minute: int, gaps: tuple[Gap, Gap]) -> set[str]:
    """Who may have created the Job of ``minute``: the controller running then, or in a gap
    either of the two."""
    for gap in gaps:
        if gap.holds(minute):
            return {gap.outgoing, gap.incoming}
    first, second = gaps
    if at_minute(minute) < first.start:
        return {first.outgoing}
    if at_minute(minute) < second.start:
        return {first.incoming}
    return {second.incoming}


def may_be_skipped(minute: int, gaps: Iterable[Gap]) -> bool:
    """Only the most recent missed activation is run: a minute followed, in the same gap, by
    the next one."""
    return any(gap.holds(minute) and gap.holds(minute + 1) for gap in gaps)


# -- "synced every CronJob", from a work queue's metrics -------------------------------------------


def cronjob_queue(exposition: str) -> dict[str, float]:
    """The ``workqueue_*{name="cronjob"}`` samples of a Prometheus text exposition."""
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name.startswith("workqueue_") and sample.labels.get("name") == "cronjob"
    }


def synced_all(queue: dict[str, float], count: int) -> bool:
    """``count`` CronJobs were queued and processed, and nothing waits: each was synced."""
    return (
        queue.get("workqueue_adds_total", 0) >= count
        and queue.get("workqueue_work_duration_seconds_count", 0) >= count
        and queue.get("workqueue_depth", 1) == 0
    )


def kcm_port(cluster: Cluster) -> str:
    """kube-controller-manager's secure port, from its command line."""
    pid = cluster.component_pid(KUBE_CONTROLLER_MANAGER)
    argv = Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    return next(a.split("=", 1)[1] for a in argv if a.startswith("--secure-port="))


async def kcm_metrics(cluster: Cluster) -> str:
    """kube-controller-manager's ``/metrics``, as the cluster's admin; empty while it does not
    answer."""
    port = kcm_port(cluster)
    headers = {"Authorization": f"Bearer {cluster.token()}"}
    try:
        async with (
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as session,
            session.get(f"https://127.0.0.1:{port}/metrics", headers=headers) as response,
        ):
            return await response.text() if response.status == 200 else ""
    except aiohttp.ClientError:
        return ""


# -- the test ------------------------------------------------------------------------------------


@pytest.mark.timeout(600)  # three minute boundaries, on a loaded machine
async def test_cronjobs_taken_over_from_kcm_and_back_run_every_minute_once(
    cluster: Cluster, cluster_namespace: str, client: ApiClient, audit_log: Path
) -> None:
    ns = cluster_namespace
    began = stamp()
    history = History(client, ns)
    tail = AuditTail(audit_log, ns)
    original = cluster.controllers
    problems: list[str] = []
    assert f"-{NAME}" not in original and f"-{JOB_CONTROLLER}" not in original
    manifests = [
        *(cron_job(name, "sleep 3600") for name in LONG),
        cron_job(QUICK, "exit 0", successfulJobsHistoryLimit=10),
        cron_job(FORBID, "sleep 3600", concurrencyPolicy="Forbid"),
    ]

    def has_jobs(names: Iterable[str], minute: int) -> bool:
        return all(f"{name}-{minute}" in history.jobs for name in names)

    async def wait_minute(names: Iterable[str], minute: int, who: str) -> None:
        names = tuple(names)
        left = (at_minute(minute) - stamp()).total_seconds()
        await poll(
            lambda: has_jobs(names, minute),
            within=max(0.0, left) + WITHIN,
            interval=0.2,
            message=lambda: f"{who}: no Jobs for {at_minute(minute)}; seen {sorted(history.jobs)}",
        )

    async with history.recording(), contextlib.AsyncExitStack() as stack:
        try:
            created = await asyncio.gather(
                *(client.create(CRONJOBS, m, namespace=ns) for m in manifests)
            )
            first = {
                c["metadata"]["name"]: minute_of(
                    datetime.fromisoformat(c["metadata"]["creationTimestamp"])
                )
                + 1
                for c in created
            }

            # KCM runs the first minute.
            await poll(
                lambda: all(has_jobs((name,), first[name]) for name in ALL),
                within=60 + WITHIN,
                interval=0.2,
                message=lambda: f"KCM ran no first minute; seen {sorted(history.jobs)}",
            )

            # KCM -> kcontrol.
            gap1_start = stamp()
            await cluster.set_controller_manager_controllers(
                (*original, f"-{NAME}", f"-{JOB_CONTROLLER}")
            )
            manager = await stack.enter_async_context(
                running_manager(cluster, JOB_SPEC, CRONJOB_SPEC, **NO_SECURE_SERVING)
            )
            await poll(
                lambda: synced_all(
                    cronjob_queue(generate_latest(manager.registry).decode()), len(ALL)
                ),
                within=WITHIN,
                message="kcontrol's cronjob-controller never synced every CronJob",
            )
            gap1 = Gap(gap1_start, stamp(), KCM, KCONTROL)
            t2 = minute_of(gap1.end) + 1
            await wait_minute(ALLOW, t2, "kcontrol")

            # kcontrol -> KCM.
            gap2_start = stamp()
            await stack.aclose()
            await cluster.set_controller_manager_controllers(original)

            async def kcm_synced() -> bool:
                return synced_all(cronjob_queue(await kcm_metrics(cluster)), len(ALL))

            await poll(
                kcm_synced,
                within=WITHIN,
                interval=0.5,
                message="KCM's cronjob-controller never synced every CronJob",
            )
            gap2 = Gap(gap2_start, stamp(), KCONTROL, KCM)
            t3 = minute_of(gap2.end) + 1
            await wait_minute(ALLOW, t3, "KCM")

            # The end: the quick Jobs done, every active list true.
            seen: dict[str, Any] = {}

            async def settled() -> bool:
                jobs = (await client.list(JOBS, namespace=ns))["items"]
                crons = (await client.list(CRONJOBS, namespace=ns))["items"]
                unfinished = {
                    name: sorted(
                        j["metadata"]["name"]
                        for j in jobs
                        if owner_name(j) == name and terminal(j) is None
                    )
                    for name in ALL
                }
                active = {
                    c["metadata"]["name"]: sorted(
                        ref["name"] for ref in (c.get("status") or {}).get("active") or []
                    )
                    for c in crons
                }
                seen.update(jobs=jobs, crons=crons, active=active, unfinished=unfinished)
                return not unfinished[QUICK] and all(
                    active.get(name) == unfinished[name] for name in ALL
                )

            try:
                await poll(
                    settled,
                    within=WITHIN,
                    interval=0.5,
                    message=lambda: (
                        f"active lists {seen.get('active')} != unfinished Jobs "
                        f"{seen.get('unfinished')}"
                    ),
                )
            except AssertionError as error:  # reported with everything else wrong, below
                problems.append(str(error))
        finally:
            await stack.aclose()
            if cluster.controllers != original:
                await cluster.set_controller_manager_controllers(original)

    ended = stamp()
    gaps = (gap1, gap2)
    agent = kcontrol_agent(manager.identity)
    events = tail.refresh()
    writes = successful_writes(events)
    job_creates = [e for e in events if e.resource == "jobs" and not e.subresource]
    job_creates = [e for e in job_creates if e.verb == "create"]

    def creator(event: AuditEvent) -> str:
        if sent_by_kcm(event, NAME):
            return KCM
        if sent_by(event, agent) and event.user_agent.endswith(f"/{NAME}"):
            return KCONTROL
        return event.user_agent

    made = Counter(e.name for e in job_creates if e.succeeded)
    made_by = {e.name: creator(e) for e in job_creates if e.succeeded}
    jobs: list[Object] = seen["jobs"]

    # Nothing deleted, and every Job created once: the Jobs left are every Job there was.
    deleted = [
        e for e in writes if e.resource == "jobs" and e.verb in ("delete", "deletecollection")
    ]
    if deleted:
        problems.append(f"Jobs deleted:\n{describe(deleted)}")
    if twice := {name: n for name, n in made.items() if n > 1}:
        problems.append(f"Jobs created more than once: {twice}")
    if set(made) != {j["metadata"]["name"] for j in jobs}:
        problems.append(
            f"created {sorted(made)} but found {sorted(j['metadata']['name'] for j in jobs)}"
        )

    for name in ALL:
        owned = [j for j in jobs if owner_name(j) == name]
        by_time = Counter(scheduled_minute(j) for j in owned)
        # At most one Job per scheduled time, named by it.
        if twice := {at_minute(m).isoformat(): n for m, n in by_time.items() if n > 1}:
            problems.append(f"{name}: more than one Job for {twice}")
        for job in owned:
            if job["metadata"]["name"] != f"{name}-{scheduled_minute(job)}":
                problems.append(
                    f"{name}: Job {job['metadata']['name']} for {scheduled_minute(job)}"
                )
        # No minute skipped.
        minutes = sorted(by_time)
        if name == FORBID:
            if minutes != [first[name]]:
                problems.append(f"{name}: Jobs for minutes {minutes}, expected [{first[name]}]")
        else:
            wanted = [m for m in range(first[name], t3 + 1) if not may_be_skipped(m, gaps)]
            if missing := sorted(set(wanted) - set(minutes)):
                problems.append(f"{name}: no Job for minutes {missing} (of {minutes})")
            if early := [m for m in minutes if m < first[name]]:
                problems.append(f"{name}: Jobs before its first minute: {early}")
        # Created by the controller that was running then.
        for job in owned:
            minute, job_name = scheduled_minute(job), job["metadata"]["name"]
            allowed = creators_allowed(minute, gaps)
            if made_by.get(job_name) not in allowed:
                problems.append(f"{job_name}: created by {made_by.get(job_name)}, not {allowed}")
        # The status, at the end.
        cron = next(c for c in seen["crons"] if c["metadata"]["name"] == name)
        if name in ALLOW and minutes:
            last = (cron.get("status") or {}).get("lastScheduleTime")
            if last is None or minute_of(datetime.fromisoformat(last)) != minutes[-1]:
                problems.append(f"{name}: lastScheduleTime {last}, latest Job {minutes[-1]}")
        if name == QUICK and not (cron.get("status") or {}).get("lastSuccessfulTime"):
            problems.append(f"{name}: no lastSuccessfulTime")

    # kcontrol did minute T2; KCM's batch controllers were silent meanwhile.
    ours = [n for n, who in made_by.items() if who == KCONTROL]
    if not all(f"{name}-{t2}" in ours for name in ALLOW):
        problems.append(f"kcontrol created {sorted(ours)}, not every Job of minute {t2}")
    kcm_meanwhile = [
        e
        for e in events
        if (sent_by_kcm(e, NAME) or sent_by_kcm(e, JOB_CONTROLLER))
        and e.is_write
        and gap1.end < e.received < gap2.start
    ]
    if kcm_meanwhile:
        problems.append(f"KCM wrote while kcontrol ran:\n{describe(kcm_meanwhile)}")
    if history.violations:
        problems.append(f"Jobs with two active pods: {history.violations[:10]}")

    refused = [e for e in job_creates if not e.succeeded]
    print(
        f"Jobs by creator {Counter(made_by.values())}; creates refused "
        f"{Counter((e.code, creator(e)) for e in refused)}; minutes: first "
        f"{sorted(set(first.values()))}, T2 {t2}, T3 {t3}; gaps "
        f"{(gap1.end - gap1.start).total_seconds():.1f} s, "
        f"{(gap2.end - gap2.start).total_seconds():.1f} s; "
        f"took {(ended - began).total_seconds():.0f} s"
    )
    assert not problems, "\n".join(problems)
