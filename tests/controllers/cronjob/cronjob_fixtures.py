"""Shared builders of the CronJob controller tests, after upstream's
cronjob_controllerv2_test.go (``cronJob()``, ``jobSpec()``, the named times) and its fakes
(``fakeJobControl``, ``fakeCJControl``) as reactors of the fake client."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import CRONJOBS, JOBS, Object
from kcontrol.clock import FakeClock
from kcontrol.informers import SharedInformerFactory
from kcontrol.testing import Action, FakeClient, FakeRecorder
from kcontrol_controllers.cronjob import CronJobController

NS = "snazzycats"
NAME = "mycronjob"
UID = "1a2b3c"
KEY = f"{NS}/{NAME}"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# upstream's named times
JUST_BEFORE_THE_PRIOR_HOUR = at("2016-05-19T08:59:00Z")
JUST_AFTER_THE_PRIOR_HOUR = at("2016-05-19T09:01:00Z")
JUST_BEFORE_THE_HOUR = at("2016-05-19T09:59:00Z")
JUST_A_SECOND_BEFORE_THE_HOUR = at("2016-05-19T09:59:59Z")
TOP_OF_THE_HOUR = at("2016-05-19T10:00:00Z")
JUST_AFTER_THE_HOUR = at("2016-05-19T10:01:00Z")
JUST_BEFORE_THE_NEXT_HOUR = at("2016-05-19T10:59:00Z")
WEEK_AFTER_THE_HOUR = at("2016-05-26T10:00:00Z")

ON_THE_HOUR = "0 * * * ?"
EVERY_HOUR = "@every 1h"
ERROR_SCHEDULE = "obvious error schedule"
ERROR_TIME_ZONE = "bad timezone"
NEW_YORK = "America/New_York"


def ts(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def job_spec() -> dict[str, Any]:
    """upstream ``jobSpec()``."""
    return {
        "parallelism": 1,
        "completions": 1,
        "template": {
            "metadata": {"labels": {"foo": "bar"}},
            "spec": {"containers": [{"name": "c", "image": "foo/bar"}]},
        },
    }


def cron_job(**spec: Any) -> Object:
    """upstream ``cronJob()``: created just before the hour, every minute, Allow."""
    cron_spec: dict[str, Any] = {
        "schedule": "* * * * ?",
        "concurrencyPolicy": "Allow",
        "jobTemplate": {
            "metadata": {"labels": {"a": "b"}, "annotations": {"x": "y"}},
            "spec": job_spec(),
        },
    }
    cron_spec.update(spec)
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {
            "name": NAME,
            "namespace": NS,
            "uid": UID,
            "creationTimestamp": ts(JUST_BEFORE_THE_HOUR),
        },
        "spec": cron_spec,
        "status": {},
    }


def complete(job: Object, completed: datetime) -> Object:
    job.setdefault("status", {})["completionTime"] = ts(completed)
    job["status"].setdefault("conditions", []).append({"type": "Complete", "status": "True"})
    return job


def failed(job: Object) -> Object:
    job.setdefault("status", {}).setdefault("conditions", []).append(
        {"type": "Failed", "status": "True"}
    )
    return job


class FakeControls:
    """upstream's ``fakeJobControl`` and ``fakeCJControl`` on a fake client: a GET of any Job
    answers ``job`` (or ``get_error``), a create fails with ``create_error`` or goes to the
    tracker, a delete fails with ``get_error`` or is recorded, and a GET of the CronJob
    answers ``cron_job`` (the API server's, possibly newer than the cache's)."""

    def __init__(
        self,
        client: FakeClient,
        *,
        job: Object | None = None,
        cron_job: Object | None = None,
        get_error: Exception | None = None,
        create_error: Exception | None = None,
    ) -> None:
        self.job = job
        self.cron_job = cron_job
        self.get_error = get_error
        self.create_error = create_error
        client.prepend_reactor("get", JOBS, self._get_job)
        client.prepend_reactor("create", JOBS, self._create_job)
        client.prepend_reactor("delete", JOBS, self._delete_job)
        client.prepend_reactor("get", CRONJOBS, self._get_cron_job)

    def _get_job(self, action: Action) -> Object | None:
        if self.get_error is not None:
            raise self.get_error
        return copy.deepcopy(self.job) if self.job is not None else None

    def _create_job(self, action: Action) -> Object | None:
        if self.create_error is not None:
            raise self.create_error
        return None

    def _delete_job(self, action: Action) -> Object | None:
        if self.get_error is not None:
            raise self.get_error
        return {"kind": "Status", "apiVersion": "v1", "status": "Success"}

    def _get_cron_job(self, action: Action) -> Object | None:
        if self.cron_job is not None and action.name == NAME and action.namespace == NS:
            return copy.deepcopy(self.cron_job)
        return None


class Fixture:
    """A CronJob controller on a fake client, a fake clock at wall time ``now`` and
    hand-filled caches. ``add_*`` store an object on the fake server and in the cache."""

    def __init__(self, now: datetime = JUST_BEFORE_THE_HOUR) -> None:
        self.clock = FakeClock(wall_start=now)
        self.client = FakeClient(clock=self.clock)
        self.informers = SharedInformerFactory(self.client, clock=self.clock)
        self.recorder = FakeRecorder()
        self.registry = CollectorRegistry()
        self.controller = CronJobController(
            client=self.client,
            informers=self.informers,
            recorder=self.recorder,
            workers=1,
            clock=self.clock,
            registry=self.registry,
        )
        self.cron_job_informer = self.informers.for_resource(CRONJOBS)
        self.job_informer = self.informers.for_resource(JOBS)

    def add_cron_job(self, cron_job: Object) -> Object:
        stored = self.client.tracker.add(cron_job)
        self.cron_job_informer.indexer.add(stored)
        return stored

    def add_job(self, job: Object) -> Object:
        stored = self.client.tracker.add(job)
        self.job_informer.indexer.add(stored)
        return stored

    def server_cron_job(self) -> Object:
        return self.client.tracker.get(CRONJOBS, NAME, namespace=NS)

    def server_jobs(self) -> list[Object]:
        items: list[Object] = self.client.tracker.list(JOBS, namespace=NS)["items"]
        return items

    def refresh_caches(self) -> None:
        """Make both caches what the server holds (what the watches would do)."""
        for informer, resource in ((self.cron_job_informer, CRONJOBS), (self.job_informer, JOBS)):
            server = {o["metadata"]["name"]: o for o in self.client.tracker.list(resource)["items"]}
            for cached in informer.indexer.list():
                if cached["metadata"]["name"] not in server:
                    informer.indexer.delete(cached)
            for obj in server.values():
                informer.indexer.update(obj)

    def actions(self, verb: str = "*", resource: str = "*") -> list[str]:
        return [str(a) for a in self.client.actions_for(verb, resource)]

    def created_jobs(self) -> list[Object]:
        return [a.object for a in self.client.actions_for("create", "jobs") if a.object]

    def status_writes(self) -> list[Object]:
        return [
            a.object
            for a in self.client.actions_for("update", "cronjobs")
            if a.subresource == "status" and a.object
        ]

    async def drain(self) -> list[str]:
        """Every key queued now (not the delayed ones), in order; each marked done."""
        queue = self.controller.controller.queue
        keys = []
        while len(queue):
            key = await queue.get()
            queue.done(key)
            keys.append(key)
        return keys

    def waiting(self) -> int:
        """How many keys wait for a delay."""
        return self.controller.controller.queue.waiting_len()
