"""kcontrol's CronJob controller on the test cluster, with kcontrol's Job controller running
the Jobs (kwok plays each container from its command: ``exit N``, ``sleep N``; see
:mod:`kcontrol.envtest.cluster._kwok_job`).

kube-controller-manager's own cronjob-controller and job-controller are switched off for each
test (and put back after). Schedules fire once a minute, so the CronJobs of the policies run
side by side in one test, decided by two activations; the restart test needs two more. The
file takes three to four minutes.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from kcontrol.client import CRONJOBS, JOBS, ApiClient, Object
from kcontrol.envtest.cluster import Cluster
from kcontrol.manager import Manager
from kcontrol_controllers.cronjob import NAME, SCHEDULED_TIMESTAMP_ANNOTATION, SPEC
from kcontrol_controllers.job import NAME as JOB_CONTROLLER
from kcontrol_controllers.job import SPEC as JOB_SPEC
from tests.controllers.cluster_helpers import events_for, running_manager, without_kcm_controllers
from tests.integration.helpers import poll

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WITHIN = 240.0
"""Two activations a minute apart, plus the Jobs' runs, on a loaded machine."""


def cron_job(name: str, script: str, **spec: Any) -> Object:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": "*/1 * * * *",
            "jobTemplate": {
                "spec": {
                    "backoffLimit": 0,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "terminationGracePeriodSeconds": 0,
                            "containers": [
                                {
                                    "name": "work",
                                    "image": "registry.example/work:1",
                                    "command": ["sh", "-c", script],
                                }
                            ],
                        }
                    },
                }
            },
            **spec,
        },
    }


async def jobs_of(client: ApiClient, namespace: str, owner: str) -> list[Object]:
    listed = await client.list(JOBS, namespace=namespace)
    return sorted(
        (
            j
            for j in listed["items"]
            if any(r.get("name") == owner for r in j["metadata"].get("ownerReferences") or [])
        ),
        key=lambda j: j["metadata"]["name"],
    )


async def reasons(client: ApiClient, namespace: str, name: str) -> list[str]:
    return [reason for reason, _ in await events_for(client, namespace, name)]


async def test_schedules_policies_suspend_and_history(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with (
        without_kcm_controllers(cluster, NAME, JOB_CONTROLLER),
        running_manager(cluster, JOB_SPEC, SPEC, controllers=(JOB_CONTROLLER, NAME)),
    ):
        await asyncio.gather(
            client.create(
                CRONJOBS,
                cron_job("completes", "exit 0", successfulJobsHistoryLimit=1),
                namespace=ns,
            ),
            client.create(
                CRONJOBS, cron_job("fails", "exit 1", failedJobsHistoryLimit=1), namespace=ns
            ),
            client.create(
                CRONJOBS,
                cron_job("forbid", "sleep 3600", concurrencyPolicy="Forbid"),
                namespace=ns,
            ),
            client.create(
                CRONJOBS,
                cron_job("replace", "sleep 3600", concurrencyPolicy="Replace"),
                namespace=ns,
            ),
            client.create(CRONJOBS, cron_job("suspended", "exit 0", suspend=True), namespace=ns),
        )

        async def decided() -> bool:
            return (
                "SuccessfulDelete" in await reasons(client, ns, "completes")
                and "SuccessfulDelete" in await reasons(client, ns, "fails")
                and "JobAlreadyActive" in await reasons(client, ns, "forbid")
                and "SuccessfulDelete" in await reasons(client, ns, "replace")
            )

        async def report() -> str:
            return str({n: await reasons(client, ns, n) for n in ("completes", "fails", "forbid")})

        try:
            await poll(decided, within=WITHIN, interval=1.0, message="not decided")
        except AssertionError:
            raise AssertionError(await report()) from None

        # completes: finished Jobs beyond one deleted; lastSuccessfulTime from a completion
        completes = await client.get(CRONJOBS, "completes", namespace=ns)
        kept = await jobs_of(client, ns, "completes")
        assert len([j for j in kept if finished_as(j) == "Complete"]) <= 1
        assert completes["status"].get("lastSuccessfulTime")
        for job in kept:
            assert job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION]
            assert job["metadata"]["ownerReferences"][0]["uid"] == completes["metadata"]["uid"]
        completes_events = await reasons(client, ns, "completes")
        assert completes_events.count("SuccessfulCreate") >= 2
        assert "SawCompletedJob" in completes_events

        # fails: failed Jobs beyond one deleted; no success recorded
        fails = await client.get(CRONJOBS, "fails", namespace=ns)
        assert len([j for j in await jobs_of(client, ns, "fails") if finished_as(j)]) <= 1
        assert "lastSuccessfulTime" not in fails["status"]

        # forbid: the first Job still runs, no second one was created
        forbid_jobs = await jobs_of(client, ns, "forbid")
        assert len(forbid_jobs) == 1
        forbid = await client.get(CRONJOBS, "forbid", namespace=ns)
        assert [r["name"] for r in forbid["status"]["active"]] == [
            forbid_jobs[0]["metadata"]["name"]
        ]
        assert (await reasons(client, ns, "forbid")).count("SuccessfulCreate") == 1

        # replace: each activation deleted the Job before it; only the newest is left
        seen: dict[str, Any] = {}

        async def only_the_active_one() -> bool:
            replace = await client.get(CRONJOBS, "replace", namespace=ns)
            active = [r["name"] for r in replace["status"].get("active") or []]
            names = [j["metadata"]["name"] for j in await jobs_of(client, ns, "replace")]
            seen.update(active=active, jobs=names)
            return len(active) == 1 and names == active

        await poll(only_the_active_one, within=WITHIN, message=lambda: f"replace: {seen}")
        replace_events = await reasons(client, ns, "replace")
        assert replace_events.count("SuccessfulCreate") >= 2
        assert "SuccessfulDelete" in replace_events

        # suspended: nothing, ever
        assert await jobs_of(client, ns, "suspended") == []
        assert await reasons(client, ns, "suspended") == []


def finished_as(job: Object) -> str:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition["type"] in ("Complete", "Failed") and condition["status"] == "True":
            return str(condition["type"])
    return ""


async def test_a_restarted_controller_neither_skips_nor_duplicates(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    """Restarted at once after a run: no second Job for that minute. Down across the next
    activation: the restarted controller runs the missed one, once."""
    ns = cluster_namespace

    def minutes(jobs: list[Object]) -> list[int]:
        return [int(j["metadata"]["name"].rsplit("-", 1)[1]) for j in jobs]

    async def first_job() -> bool:
        return len(await jobs_of(client, ns, "restart")) == 1

    async with without_kcm_controllers(cluster, NAME, JOB_CONTROLLER):
        async with running_manager(cluster, JOB_SPEC, SPEC, controllers=(JOB_CONTROLLER, NAME)):
            await client.create(CRONJOBS, cron_job("restart", "sleep 3600"), namespace=ns)
            await poll(first_job, within=WITHIN, interval=0.5, message="no first Job")
        (first,) = minutes(await jobs_of(client, ns, "restart"))

        async with running_manager(
            cluster, JOB_SPEC, SPEC, controllers=(JOB_CONTROLLER, NAME)
        ) as manager:
            await poll(
                lambda: _syncs(manager) >= 1,
                within=WITHIN,
                message="the restarted controller never synced the CronJob",
            )
            assert minutes(await jobs_of(client, ns, "restart")) == [first]

        # down across the next activation
        next_activation = (first + 1) * 60
        await asyncio.sleep(max(0.0, next_activation + 2 - time.time()))
        assert minutes(await jobs_of(client, ns, "restart")) == [first]

        async with running_manager(cluster, JOB_SPEC, SPEC, controllers=(JOB_CONTROLLER, NAME)):

            async def missed_run() -> bool:
                return len(await jobs_of(client, ns, "restart")) >= 2

            await poll(missed_run, within=WITHIN, interval=0.5, message="missed run not made")
            found = minutes(await jobs_of(client, ns, "restart"))
            assert found[:2] == [first, first + 1], found
            assert len(found) == len(set(found)), "no activation twice"
            cron = await client.get(CRONJOBS, "restart", namespace=ns)
            assert len(cron["status"]["active"]) == len(found)


def _syncs(manager: Manager) -> float:
    """The CronJob syncs the manager's controller finished, whatever their result."""
    total = 0.0
    for result in ("success", "error", "requeue", "requeue_after"):
        value = manager.registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "cronjob", "result": result}
        )
        total += value or 0.0
    return total
