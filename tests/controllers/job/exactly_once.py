"""The exactly-once check of Job pod tracking (issue 21), shared by the restart test here and
the takeover test in tests/dropin: a mix of Jobs to run, a recorder of every state their pods
and the Jobs went through, and the check run once every Job has finished.

What "exactly once" means, for every Job, against the pods it ever had (from one pod watch
opened before the Jobs were created, so no pod escapes it):

- ``status.succeeded`` is the number of its pods that ended ``Succeeded``, and
  ``status.failed`` the number that ended ``Failed`` or were deleted before they succeeded
  (upstream counts a terminating pod as failed; kwok kills a deleted Job pod, and once its
  finalizer is gone the pod may vanish before the kill is written; a pod deleted while it
  ran that still succeeded may have been counted either way);
- nothing is left uncounted (``uncountedTerminatedPods`` empty, no active pod) and no pod
  keeps the ``batch.kubernetes.io/job-tracking`` finalizer;
- no pod was created twice: an Indexed Job has at most one ``Succeeded`` pod per index and
  ``completedIndexes`` (``failedIndexes``) names exactly the indexes that succeeded (failed);
  a Job whose pods never fail has exactly ``completions`` pods (one per index); and in no
  state of the namespace did a Job have more active pods than ``parallelism``, or two active
  pods for one index.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcontrol.client import JOBS, PODS, ApiClient, ListOptions, Object, Resource
from kcontrol.envtest.cluster import Cluster
from kcontrol_controllers.job import JOB_TRACKING_FINALIZER, NAME
from tests.controllers.cluster_helpers import WITHIN, without_kcm_controllers
from tests.integration.helpers import poll
from tests.processes import LoggedProcess, free_port

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
INDEX = "batch.kubernetes.io/job-completion-index"
FINISHED_PHASES = ("Succeeded", "Failed")

RUN = 3
"""Seconds each pod's container runs (``sleep``) before it ends."""


# -- the Jobs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobCase:
    """One Job of the mix and the outcome it must reach.

    ``kind``: ``plain`` (NonIndexed, every pod succeeds), ``indexed`` (Indexed, every pod
    succeeds), ``failing`` (NonIndexed, every pod exits 1, ``backoffLimit`` 2: Failed with
    BackoffLimitExceeded) or ``failing-index`` (Indexed, index 1 exits 1, the others succeed,
    ``backoffLimitPerIndex`` 1: Failed with FailedIndexes once the others are done).
    """

    name: str
    kind: str
    completions: int
    parallelism: int

    @property
    def indexed(self) -> bool:
        return self.kind in ("indexed", "failing-index")

    @property
    def outcome(self) -> tuple[str, str]:
        """The terminal condition's type and reason."""
        return {
            "plain": ("Complete", "CompletionsReached"),
            "indexed": ("Complete", "CompletionsReached"),
            "failing": ("Failed", "BackoffLimitExceeded"),
            "failing-index": ("Failed", "FailedIndexes"),
        }[self.kind]

    def manifest(self) -> Object:
        spec: dict[str, Any] = {
            "completions": self.completions,
            "parallelism": self.parallelism,
        }
        script = f"sleep {RUN}"
        if self.indexed:
            spec["completionMode"] = "Indexed"
        if self.kind == "failing":
            script += "; exit 1"
            spec["backoffLimit"] = 2
        if self.kind == "failing-index":
            script += '; if [ "$JOB_COMPLETION_INDEX" = "1" ]; then exit 1; fi'
            spec["backoffLimitPerIndex"] = 1
        return job_manifest(self.name, script, **spec)


def job_manifest(name: str, script: str, **spec: Any) -> Object:
    """A Job whose one container runs ``sh -c script`` (played by kwok: see
    :mod:`kcontrol.envtest.cluster._kwok_job`), never restarted."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
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
            **spec,
        },
    }


def job_mix(counts: dict[str, int], completions: int, parallelism: int = 2) -> list[JobCase]:
    """``counts[kind]`` Jobs of each kind, named ``<kind>-<n>``."""
    return [
        JobCase(f"{kind}-{n}", kind, completions, parallelism)
        for kind, count in counts.items()
        for n in range(count)
    ]


def without_kcms_job_controller(cluster: Cluster) -> contextlib.AbstractAsyncContextManager[None]:
    """kube-controller-manager without its job-controller until the block ends."""
    return without_kcm_controllers(cluster, NAME)


# -- reading pods and Jobs -----------------------------------------------------------------------


def labels(obj: Object) -> dict[str, str]:
    return obj["metadata"].get("labels") or {}  # type: ignore[no-any-return]


def phase(pod: Object) -> str:
    return str((pod.get("status") or {}).get("phase", ""))


def has_finalizer(pod: Object) -> bool:
    return JOB_TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or [])


def is_active(pod: Object) -> bool:
    """Neither terminating nor finished (upstream's active pod)."""
    return not pod["metadata"].get("deletionTimestamp") and phase(pod) not in FINISHED_PHASES


def conditions(job: Object) -> list[tuple[str, str, str]]:
    return [
        (c["type"], c["status"], c.get("reason", ""))
        for c in (job.get("status") or {}).get("conditions") or []
    ]


def terminal(job: Object) -> tuple[str, str] | None:
    """The Job's terminal condition (type, reason), or None while it runs."""
    for kind, status, reason in conditions(job):
        if kind in ("Complete", "Failed") and status == "True":
            return kind, reason
    return None


def uncounted(job: Object) -> int:
    pending = (job.get("status") or {}).get("uncountedTerminatedPods") or {}
    return len(pending.get("succeeded") or []) + len(pending.get("failed") or [])


def index_list(indexes: Iterable[int]) -> str:
    """Indexes as the API writes them: ascending, runs of three or more as ``a-b``."""
    ordered = sorted(set(indexes))
    parts: list[str] = []
    start = 0
    while start < len(ordered):
        end = start
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        first, last = ordered[start], ordered[end]
        if last - first >= 2:
            parts.append(f"{first}-{last}")
        else:
            parts.extend(str(i) for i in range(first, last + 1))
        start = end + 1
    return ",".join(parts)


@dataclass
class PodRecord:
    """One pod's last state; whether it is gone; whether it was ever seen terminating while
    not ``Succeeded`` (upstream counts such a pod as failed)."""

    pod: Object
    deleted: bool = False
    terminating_unsucceeded: bool = False


@dataclass
class History:
    """Every pod and Job state of a namespace, from :meth:`recording` on.

    One LIST and one watch per resource; after each event the per-Job bounds (active pods
    at most ``parallelism``, at most one active pod per index) are checked against the
    state at that event, and any :meth:`when` predicates are evaluated.
    """

    client: ApiClient
    namespace: str
    parallelism: dict[str, int] = field(default_factory=dict)
    """Job UID -> its parallelism, filled as Jobs are seen."""
    pods: dict[str, PodRecord] = field(default_factory=dict)
    jobs: dict[str, Object] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    _waiters: list[tuple[Callable[[History], bool], asyncio.Event]] = field(default_factory=list)

    @contextlib.asynccontextmanager
    async def recording(self) -> AsyncIterator[History]:
        tasks = []
        for resource in (PODS, JOBS):
            listed = await self.client.list(resource, namespace=self.namespace)
            for obj in listed["items"]:
                self._apply(resource, "ADDED", obj)
            version = listed["metadata"]["resourceVersion"]
            tasks.append(asyncio.create_task(self._watch(resource, version)))
        try:
            yield self
        finally:
            for task in tasks:
                task.cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            for result in results:
                if isinstance(result, Exception):
                    raise result

    def when(self, predicate: Callable[[History], bool]) -> asyncio.Event:
        """An event set (checked after every watch event) once ``predicate`` holds."""
        done = asyncio.Event()
        if predicate(self):
            done.set()
        else:
            self._waiters.append((predicate, done))
        return done

    async def _watch(self, resource: Resource, version: str) -> None:
        while True:  # a watch may end (timeouts); resume from the last version seen
            options = ListOptions(resource_version=version, timeout_seconds=300)
            async with self.client.watch(
                resource, namespace=self.namespace, options=options
            ) as stream:
                async for event in stream:
                    obj = event.object
                    version = obj["metadata"].get("resourceVersion", version)
                    if event.type == "BOOKMARK":
                        continue
                    if event.type == "ERROR":
                        raise AssertionError(f"{resource.plural} watch failed: {obj}")
                    self._apply(resource, event.type, obj)

    def _apply(self, resource: Resource, kind: str, obj: Object) -> None:
        if resource is JOBS:
            self.jobs[obj["metadata"]["name"]] = obj
            self.parallelism[obj["metadata"]["uid"]] = obj["spec"].get("parallelism", 1)
        else:
            uid = obj["metadata"]["uid"]
            record = self.pods.setdefault(uid, PodRecord(obj))
            record.pod = obj
            record.deleted = record.deleted or kind == "DELETED"
            if obj["metadata"].get("deletionTimestamp") and phase(obj) != "Succeeded":
                record.terminating_unsucceeded = True
            self._check_bounds(labels(obj).get(CONTROLLER_UID, ""))
        for predicate, done in list(self._waiters):
            if predicate(self):
                done.set()
                self._waiters.remove((predicate, done))

    def _check_bounds(self, job_uid: str) -> None:
        if not job_uid:
            return
        active = [r.pod for r in self.of_job(job_uid) if not r.deleted and is_active(r.pod)]
        limit = self.parallelism.get(job_uid)
        if limit is not None and len(active) > limit:
            self.violations.append(f"Job {job_uid}: {len(active)} active pods > {limit}")
        per_index: dict[str, int] = {}
        for pod in active:
            index = labels(pod).get(INDEX)
            if index is not None:
                per_index[index] = per_index.get(index, 0) + 1
        for index, count in per_index.items():
            if count > 1:
                self.violations.append(f"Job {job_uid}: {count} active pods for index {index}")

    def of_job(self, job_uid: str) -> list[PodRecord]:
        return [r for r in self.pods.values() if labels(r.pod).get(CONTROLLER_UID) == job_uid]

    def finished_with_finalizer(self) -> int:
        """Finished pods still carrying the tracking finalizer: counted by nobody yet, or
        counted and not yet released."""
        return sum(
            1
            for r in self.pods.values()
            if not r.deleted and phase(r.pod) in FINISHED_PHASES and has_finalizer(r.pod)
        )

    def released(self) -> int:
        """Finished pods whose tracking finalizer is gone (counted and released)."""
        return sum(
            1
            for r in self.pods.values()
            if not r.deleted and phase(r.pod) in FINISHED_PHASES and not has_finalizer(r.pod)
        )

    def counted_but_held(self) -> int:
        """Pods a Job's latest status lists as uncounted that still carry the finalizer: the
        tracking protocol stopped between its two writes."""
        held = {
            uid
            for uid, r in self.pods.items()
            if not r.deleted and phase(r.pod) in FINISHED_PHASES and has_finalizer(r.pod)
        }
        total = 0
        for job in self.jobs.values():
            pending = (job.get("status") or {}).get("uncountedTerminatedPods") or {}
            listed = [*(pending.get("succeeded") or []), *(pending.get("failed") or [])]
            total += sum(1 for uid in listed if uid in held)
        return total


# -- the check -----------------------------------------------------------------------------------


def check_job(case: JobCase, job: Object, history: History, pods_now: list[Object]) -> list[str]:
    """Everything wrong with one finished Job's counts (the module docstring's list)."""
    problems: list[str] = []
    status = job.get("status") or {}
    name = case.name

    def problem(text: str) -> None:
        problems.append(f"{name}: {text}")

    if terminal(job) != case.outcome:
        problem(f"ended {terminal(job)}, expected {case.outcome}; {conditions(job)}")
    records = history.of_job(job["metadata"]["uid"])
    succeeded = [r.pod for r in records if phase(r.pod) == "Succeeded"]
    failed = [
        r.pod
        for r in records
        if phase(r.pod) == "Failed" or (r.terminating_unsucceeded and phase(r.pod) != "Succeeded")
    ]
    # Deleted while running, then succeeded before it was killed: the controller may have
    # counted it either way (as failed if it saw it terminating first).
    either = sum(1 for r in records if r.terminating_unsucceeded and phase(r.pod) == "Succeeded")
    unfinished = [
        r.pod["metadata"]["name"]
        for r in records
        if not r.deleted and phase(r.pod) not in FINISHED_PHASES and not r.terminating_unsucceeded
    ]
    counted_succeeded, counted_failed = status.get("succeeded", 0), status.get("failed", 0)
    if not (
        len(succeeded) - either <= counted_succeeded <= len(succeeded)
        and counted_succeeded + counted_failed == len(succeeded) + len(failed)
    ):
        problem(
            f"status counts succeeded={status.get('succeeded', 0)} "
            f"failed={status.get('failed', 0)}, but {len(succeeded)} pods succeeded and "
            f"{len(failed)} failed ({either} of them either)"
        )
    if unfinished:
        problem(f"pods never finished: {unfinished}")
    if uncounted(job) or status.get("active", 0):
        problem(f"left active={status.get('active', 0)}, uncounted={uncounted(job)}")
    kept = [
        p["metadata"]["name"]
        for p in pods_now
        if labels(p).get(CONTROLLER_UID) == job["metadata"]["uid"] and has_finalizer(p)
    ]
    if kept:
        problem(f"pods keep the tracking finalizer: {kept}")

    if case.indexed:
        by_index: dict[int, int] = {}
        for pod in succeeded:
            index = int(labels(pod)[INDEX])
            by_index[index] = by_index.get(index, 0) + 1
        twice = {index: n for index, n in by_index.items() if n > 1}
        if twice:
            problem(f"indexes with more than one Succeeded pod: {twice}")
        if status.get("completedIndexes", "") != index_list(by_index):
            problem(
                f"completedIndexes {status.get('completedIndexes')!r}, but indexes "
                f"{index_list(by_index)!r} succeeded"
            )
        if case.kind == "failing-index" and status.get("failedIndexes") != "1":
            problem(f"failedIndexes {status.get('failedIndexes')!r}, expected '1'")
    elif len(succeeded) > case.completions:
        problem(f"{len(succeeded)} pods succeeded for {case.completions} completions")
    if case.kind in ("plain", "indexed") and len(records) != case.completions:
        names = sorted(r.pod["metadata"]["name"] for r in records)
        problem(f"{len(records)} pods for {case.completions} completions: {names}")
    return problems


async def check_exactly_once(
    client: ApiClient, namespace: str, cases: list[JobCase], history: History
) -> None:
    """Assert the module docstring's list for every Job of ``cases`` (all finished)."""
    pods_now = (await client.list(PODS, namespace=namespace))["items"]
    problems = list(history.violations)
    for case in cases:
        job = await client.get(JOBS, case.name, namespace=namespace)
        problems.extend(check_job(case, job, history, pods_now))
    assert not problems, "\n".join(problems)


async def wait_all_finished(client: ApiClient, namespace: str, cases: list[JobCase]) -> None:
    """Until every Job has its terminal condition and nothing uncounted."""
    waiting: dict[str, Any] = {}

    async def done() -> bool:
        listed = await client.list(JOBS, namespace=namespace)
        jobs = {job["metadata"]["name"]: job for job in listed["items"]}
        waiting.clear()
        for case in cases:
            job = jobs[case.name]
            if terminal(job) is None or uncounted(job):
                waiting[case.name] = job.get("status")
        return not waiting

    await poll(
        done,
        within=WITHIN * 2,
        interval=0.5,
        message=lambda: f"Jobs never finished: {waiting}",
    )


# -- kcontrol-manager as a process ---------------------------------------------------------------


class JobManagerProcess(LoggedProcess):
    """``kcontrol-manager`` running only the job-controller (no leader election, no HTTPS),
    logging JSON lines to ``log_path`` (appended: one file for every start)."""

    def __init__(self, kubeconfig: Path, log_path: Path) -> None:
        super().__init__(
            [
                str(Path(sys.executable).parent / "kcontrol-manager"),
                f"--kubeconfig={kubeconfig}",
                f"--controllers={NAME}",
                "--leader-elect=false",
                "--secure-port=0",
                "--bind-address=127.0.0.1",
                f"--metrics-port={free_port()}",
                "--log-format=json",
                "-v=2",
            ],
            log_path,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            append=True,
        )
