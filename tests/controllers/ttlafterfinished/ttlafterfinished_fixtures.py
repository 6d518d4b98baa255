"""Shared pieces of the TTL-after-finished tests, after upstream's
ttlafterfinished_controller_test.go: ``new_job`` builds a Job finished (or not) at given times
with a TTL (or none); :class:`Fixture` builds the controller on a fake client and a fake
clock whose wall time starts at :data:`NOW`, with a Job cache the test fills by hand."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import JOBS, Object
from kcontrol.clock import FakeClock
from kcontrol.informers import SharedInformerFactory
from kcontrol.testing import Action, FakeClient
from kcontrol_controllers.ttlafterfinished import TTLAfterFinishedController

NS = "default"
NAME = "foobar"
KEY = f"{NS}/{NAME}"
UID = "job-uid"
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def ts(moment: datetime) -> str:
    """A ``metav1.Time`` as the API server writes it (seconds, UTC)."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def new_job(
    completion_time: datetime | None = None,
    failed_time: datetime | None = None,
    ttl: int | None = None,
    *,
    name: str = NAME,
    uid: str = UID,
    **metadata: Any,
) -> Object:
    """Upstream's ``newJob``: a ``Complete`` condition at ``completion_time`` and a ``Failed``
    one at ``failed_time`` when given (both ``True``), ``ttlSecondsAfterFinished`` = ``ttl``."""
    conditions = []
    if completion_time is not None:
        conditions.append(
            {"type": "Complete", "status": "True", "lastTransitionTime": ts(completion_time)}
        )
    if failed_time is not None:
        conditions.append(
            {"type": "Failed", "status": "True", "lastTransitionTime": ts(failed_time)}
        )
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"foo": "bar"}},
        "template": {
            "metadata": {"labels": {"foo": "bar"}},
            "spec": {"containers": [{"name": "c", "image": "foo/bar"}]},
        },
    }
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    job: Object = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS, "uid": uid, **metadata},
        "spec": spec,
    }
    if conditions:
        job["status"] = {"conditions": conditions}
    return job


class Fixture:
    """The controller on a fake client and a fake clock (wall time :data:`NOW`).

    ``add_job`` stores a Job on the fake server *and* in the cache (as the server stored
    it); ``cache_job`` only in the cache, ``server_job`` only on the server, to make the two
    disagree.
    """

    def __init__(self) -> None:
        self.clock = FakeClock(wall_start=NOW)
        self.client = FakeClient(clock=self.clock)
        self.informers = SharedInformerFactory(self.client, clock=self.clock)
        self.registry = CollectorRegistry()
        self.ttl = TTLAfterFinishedController(
            client=self.client,
            informers=self.informers,
            clock=self.clock,
            registry=self.registry,
        )
        self.job_informer = self.informers.for_resource(JOBS)

    def add_job(self, job: Object) -> Object:
        stored = self.server_job(job)
        self.job_informer.indexer.add(stored)
        return stored

    def cache_job(self, job: Object) -> Object:
        cached = copy.deepcopy(job)
        self.job_informer.indexer.add(cached)
        return cached

    def server_job(self, job: Object) -> Object:
        stored: Object = self.client.tracker.add(job)
        return stored

    def deletes(self) -> list[Action]:
        return self.client.actions_for("delete", JOBS)

    def verbs(self) -> list[str]:
        return [f"{a.verb} {a.resource.plural} {a.namespace}/{a.name}" for a in self.client.actions]

    def deletion_durations(self) -> tuple[float | None, float | None]:
        """(count, sum) of ttl_after_finished_controller_job_deletion_duration_seconds."""
        name = "ttl_after_finished_controller_job_deletion_duration_seconds"
        return (
            self.registry.get_sample_value(f"{name}_count"),
            self.registry.get_sample_value(f"{name}_sum"),
        )
