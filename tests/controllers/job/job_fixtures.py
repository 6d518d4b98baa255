"""Shared builders of the Job controller tests, after upstream's job_controller_test.go
(``newJob``, ``newPod``, ``buildPod()``): Jobs and pods as plain dicts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import JOBS, PODS, Object
from kcontrol.clock import FakeClock
from kcontrol.informers import SharedInformerFactory
from kcontrol.testing import FakeClient, FakeRecorder
from kcontrol_controllers.job import JobController

NS = "default"
JOB_UID = "job-uid"
WALL = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
TRACKING = "batch.kubernetes.io/job-tracking"
INDEX = "batch.kubernetes.io/job-completion-index"
FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
IGNORED_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"
NO_INDEX = "-"
FINISHED_AT = "0001-01-01T00:00:01Z"
"""upstream's ``testFinishedAt``: long before any test clock, so no backoff applies."""


def ts(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ago(seconds: float) -> str:
    return ts(WALL - timedelta(seconds=seconds))


def new_job(
    parallelism: int | None = 1,
    completions: int | None = 1,
    backoff_limit: int | None = 6,
    completion_mode: str | None = None,
    *,
    name: str = "foobar",
    uid: str = JOB_UID,
    **spec: Any,
) -> Object:
    """upstream ``newJob``: ``None`` leaves completions or parallelism unset."""
    job_spec: dict[str, Any] = {
        "selector": {"matchLabels": {"foo": "bar"}},
        "template": {
            "metadata": {"labels": {"foo": "bar"}},
            "spec": {"containers": [{"name": "c", "image": "foo/bar"}]},
        },
    }
    if parallelism is not None:
        job_spec["parallelism"] = parallelism
    if completions is not None:
        job_spec["completions"] = completions
    if backoff_limit is not None:
        job_spec["backoffLimit"] = backoff_limit
    if completion_mode is not None:
        job_spec["completionMode"] = completion_mode
    job_spec.update(spec)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS, "uid": uid},
        "spec": job_spec,
    }


def controller_ref(job: Object) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": job["metadata"]["name"],
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def new_pod(
    name: str = "pod",
    job: Object | None = None,
    phase: str = "Running",
    *,
    uid: str | None = None,
    index: str | None = None,
    failure_count: str | None = None,
    ignored_count: str | None = None,
    finalizer: bool = True,
    owned: bool = True,
    ready: bool = False,
    deleted_at: str | None = None,
    finished_at: str | None = None,
    exit_code: int | None = None,
    conditions: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    **metadata: Any,
) -> Object:
    """A pod of ``job`` (``new_job()`` by default): its selector's labels, its controller
    reference unless ``owned`` is false, the tracking finalizer unless ``finalizer`` is
    false. A finished pod's container terminated at ``finished_at`` (default
    :data:`FINISHED_AT`)."""
    job = job if job is not None else new_job()
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "uid": uid if uid is not None else name,
        "labels": dict(labels if labels is not None else job["spec"]["selector"]["matchLabels"]),
        **metadata,
    }
    annotations: dict[str, str] = {}
    if index is not None and index != NO_INDEX:
        annotations[INDEX] = index
    if failure_count is not None:
        annotations[FAILURE_COUNT] = failure_count
    if ignored_count is not None:
        annotations[IGNORED_COUNT] = ignored_count
    if annotations:
        meta["annotations"] = annotations
    if owned:
        meta["ownerReferences"] = [controller_ref(job)]
    if finalizer:
        meta["finalizers"] = [TRACKING]
    if deleted_at is not None:
        meta["deletionTimestamp"] = deleted_at
    status: dict[str, Any] = {"phase": phase}
    if phase in ("Succeeded", "Failed") or finished_at is not None or exit_code is not None:
        terminated: dict[str, Any] = {"finishedAt": finished_at or FINISHED_AT}
        if exit_code is not None:
            terminated["exitCode"] = exit_code
        status["containerStatuses"] = [{"name": "c", "state": {"terminated": terminated}}]
    pod_conditions = list(conditions or [])
    if ready:
        pod_conditions.append({"type": "Ready", "status": "True"})
    if pod_conditions:
        status["conditions"] = pod_conditions
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "foo/bar"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def hollow_pods(descs: list[tuple[str, str]]) -> list[Object]:
    """upstream ``hollowPodsWithIndexPhase``: pods with only an index annotation and a phase."""
    pods = []
    for position, (index, phase) in enumerate(descs):
        meta: dict[str, Any] = {"name": f"p{position}", "uid": f"p{position}"}
        if index != NO_INDEX:
            meta["annotations"] = {INDEX: index}
        pods.append({"metadata": meta, "status": {"phase": phase}})
    return pods


def index_phases(pods: list[Object]) -> list[tuple[str, str]]:
    """upstream ``toIndexPhases``."""
    return [
        ((p["metadata"].get("annotations") or {}).get(INDEX, NO_INDEX), p["status"]["phase"])
        for p in pods
    ]


class Fixture:
    """A Job controller on a fake client, fake clock and hand-filled caches.

    ``add_*`` store an object on the fake server *and* in the cache (as the server stored
    it). The clock's wall time starts at :data:`WALL`.
    """

    def __init__(self, *, wall: datetime = WALL, workers: int = 1) -> None:
        self.clock = FakeClock(wall_start=wall)
        self.client = FakeClient(clock=self.clock)
        self.informers = SharedInformerFactory(self.client, clock=self.clock)
        self.recorder = FakeRecorder()
        self.registry = CollectorRegistry()
        self.jc = JobController(
            client=self.client,
            informers=self.informers,
            recorder=self.recorder,
            workers=workers,
            clock=self.clock,
            registry=self.registry,
        )
        self.job_informer = self.informers.for_resource(JOBS)
        self.pod_informer = self.informers.for_resource(PODS)

    def add_job(self, job: Object) -> Object:
        stored = self.client.tracker.add(job)
        self.job_informer.indexer.add(stored)
        return stored

    def add_pod(self, pod: Object) -> Object:
        stored = self.client.tracker.add(pod)
        self.pod_informer.indexer.add(stored)
        return stored

    def add_pods(self, pods: list[Object]) -> None:
        for pod in pods:
            self.add_pod(pod)

    def server_job(self, name: str = "foobar") -> Object:
        return self.client.tracker.get(JOBS, name, namespace=NS)

    def server_pods(self) -> list[Object]:
        items: list[Object] = self.client.tracker.list(PODS, namespace=NS)["items"]
        return items

    def refresh_job_cache(self, name: str = "foobar") -> Object:
        stored = self.server_job(name)
        self.job_informer.indexer.update(stored)
        return stored

    def refresh_pod_cache(self) -> None:
        """Make the pod cache what the server holds (what the watch would do)."""
        server = {p["metadata"]["name"]: p for p in self.server_pods()}
        for cached in self.pod_informer.indexer.list():
            if cached["metadata"]["name"] not in server:
                self.pod_informer.indexer.delete(cached)
        for pod in server.values():
            self.pod_informer.indexer.update(pod)

    def actions(self, verb: str = "*", resource: str = "*") -> list[str]:
        return [str(a) for a in self.client.actions_for(verb, resource)]

    def pod_patches(self) -> int:
        return len(self.client.actions_for("patch", "pods"))

    def created_pods(self) -> list[Object]:
        return [a.object for a in self.client.actions_for("create", "pods") if a.object]

    def status_writes(self) -> list[Object]:
        return [
            a.object
            for a in self.client.actions_for("update", "jobs")
            if a.subresource == "status" and a.object
        ]

    async def drain(self, *, orphans: bool = False) -> list[str]:
        """Every key queued now (not the delayed ones) on the Job queue (or the orphan pod
        queue), in order; each marked done."""
        controller = self.jc.orphan_controller if orphans else self.jc.controller
        queue = controller.queue
        keys = []
        while len(queue):
            key = await queue.get()
            queue.done(key)
            keys.append(key)
        return keys

    def waiting(self, *, orphans: bool = False) -> int:
        """How many keys wait for a delay."""
        controller = self.jc.orphan_controller if orphans else self.jc.controller
        return controller.queue.waiting_len()
