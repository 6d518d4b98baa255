"""The event handlers: upstream's TestControllerV2UpdateCronJob (a new schedule requeues at its
next activation, anything else at once) and TestControllerV2GetJobsToBeReconciled, plus the
Job handlers (a Job event queues its controlling CronJob, and only that)."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from cronjob_fixtures import (
    JUST_A_SECOND_BEFORE_THE_HOUR,
    JUST_BEFORE_THE_HOUR,
    KEY,
    NEW_YORK,
    NS,
    UID,
    Fixture,
    cron_job,
    job_spec,
    ts,
)

from kcontrol.informers import DeletedFinalStateUnknown
from kcontrol_controllers.cronjob._times import NEXT_SCHEDULE_DELTA

# -- TestControllerV2UpdateCronJob ----------------------------------------------------------------


def _template(label: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"a": label}, "annotations": {"x": "y"}}, "spec": job_spec()}


def _cj(schedule: str | None = None, time_zone: str | None = None, label: str = "b") -> Any:
    spec: dict[str, Any] = {"jobTemplate": _template(label)}
    if schedule is not None:
        spec["schedule"] = schedule
    if time_zone is not None:
        spec["timeZone"] = time_zone
    obj = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "mycronjob", "namespace": NS, "uid": UID},
        "spec": spec,
        "status": {},
    }
    if schedule is not None:
        obj["status"]["lastScheduleTime"] = ts(JUST_BEFORE_THE_HOUR)
    return obj


@pytest.mark.parametrize(
    ("name", "old", "new", "expected_delay"),
    [
        ("spec.template changed", _cj(), _cj(label="foo"), timedelta(0)),
        (
            "spec.schedule changed",
            _cj("30 * * * *"),
            _cj("*/1 * * * *", label="foo"),
            timedelta(seconds=1) + NEXT_SCHEDULE_DELTA,
        ),
        (
            "spec.schedule with @every changed - cadence decrease",
            _cj("@every 1m"),
            _cj("@every 3m", label="foo"),
            timedelta(minutes=2, seconds=1) + NEXT_SCHEDULE_DELTA,
        ),
        (
            "spec.schedule with @every changed - cadence increase",
            _cj("@every 3m"),
            _cj("@every 1m", label="foo"),
            timedelta(seconds=1) + NEXT_SCHEDULE_DELTA,
        ),
        (
            "spec.timeZone not changed",
            _cj(time_zone=NEW_YORK),
            _cj(time_zone=NEW_YORK, label="foo"),
            timedelta(0),
        ),
        # upstream's row: a schedule-less CronJob whose time zone goes away; the empty
        # schedule does not parse, so nothing is queued (upstream's fake queue then reports
        # its zero delay).
        ("spec.timeZone changed", _cj(time_zone=NEW_YORK), _cj(label="foo"), None),
        # Not upstream's: a time zone change on a real schedule aims at the new zone's hour.
        (
            "spec.timeZone changed on an hourly schedule",
            _cj("0 * * * *"),
            _cj("0 * * * *", time_zone="Asia/Kolkata", label="foo"),
            timedelta(minutes=30, seconds=1) + NEXT_SCHEDULE_DELTA,
        ),
    ],
)
async def test_update_cron_job(
    name: str, old: Any, new: Any, expected_delay: timedelta | None
) -> None:
    fixture = Fixture(now=JUST_A_SECOND_BEFORE_THE_HOUR)
    queue = fixture.controller.controller.queue
    fixture.controller.update_cron_job(old, new)
    if expected_delay is None:
        assert len(queue) == 0
        assert fixture.waiting() == 0
        assert fixture.recorder.events == [
            "Warning UnParseableCronJobSchedule unparseable schedule for cronjob: "
        ]
        return
    if expected_delay == timedelta(0):
        assert await fixture.drain() == [KEY]
        assert fixture.waiting() == 0
        return
    assert len(queue) == 0
    assert fixture.waiting() == 1
    fixture.clock.step(expected_delay.total_seconds() - 0.001)
    assert len(queue) == 0, "not before the next activation"
    fixture.clock.step(0.001)
    assert await fixture.drain() == [KEY]


def test_update_cron_job_with_an_unparseable_schedule_queues_nothing() -> None:
    fixture = Fixture()
    fixture.controller.update_cron_job(_cj("0 * * * *"), _cj("obvious error schedule"))
    assert len(fixture.controller.controller.queue) == 0
    assert fixture.waiting() == 0
    assert fixture.recorder.events == [
        "Warning UnParseableCronJobSchedule unparseable schedule for cronjob: "
        "obvious error schedule"
    ]


def test_update_cron_job_moves_an_earlier_requeue_forward_only() -> None:
    """A requeue already waiting for a later activation is moved to the earlier one; a later
    one does not push back an earlier requeue (the delaying queue keeps the earlier)."""
    fixture = Fixture(now=JUST_A_SECOND_BEFORE_THE_HOUR)
    queue = fixture.controller.controller.queue
    fixture.controller.controller.enqueue_after(KEY, 3600)
    fixture.controller.update_cron_job(_cj("30 * * * *"), _cj("*/1 * * * *"))
    fixture.clock.step(1.1)
    assert len(queue) == 1
    fixture2 = Fixture(now=JUST_A_SECOND_BEFORE_THE_HOUR)
    fixture2.controller.controller.enqueue_after(KEY, 0.5)
    fixture2.controller.update_cron_job(_cj("*/1 * * * *"), _cj("30 * * * *"))
    fixture2.clock.step(0.5)
    assert len(fixture2.controller.controller.queue) == 1


# -- CronJob add and delete -----------------------------------------------------------------------


async def test_cron_job_add_and_delete_queue_it() -> None:
    fixture = Fixture()
    cj = cron_job()
    fixture.cron_job_informer.indexer.add(cj)
    fixture.controller.controller.enqueue_object(cj)
    assert await fixture.drain() == [KEY]
    fixture.controller.controller.enqueue_object(DeletedFinalStateUnknown(KEY, cj))
    assert await fixture.drain() == [KEY]


# -- TestControllerV2GetJobsToBeReconciled --------------------------------------------------------


def _job(name: str, namespace: str = "foo-ns", owner: str | None = None, **labels: str) -> Any:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    if owner is not None:
        meta["ownerReferences"] = [{"name": owner, "controller": True}]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta}


@pytest.mark.parametrize(
    ("name", "template_labels", "jobs", "expected"),
    [
        (
            "test getting jobs in namespace without controller reference",
            None,
            [_job("foo"), _job("foo1"), _job("foo2")],
            [],
        ),
        (
            "test getting jobs in namespace with a controller reference",
            None,
            [_job("foo"), _job("foo1", owner="fooer"), _job("foo2")],
            ["foo1"],
        ),
        (
            "test getting jobs in other namespaces",
            None,
            [_job("foo", "bar-ns"), _job("foo1", "bar-ns"), _job("foo2", "bar-ns")],
            [],
        ),
        (
            "test getting jobs whose labels do not match job template",
            {"key": "value"},
            [
                _job("foo-fooer-owner-ref", owner="fooer", key="different-value"),
                _job("foo-other-owner-ref", owner="another-cronjob", key="different-value"),
            ],
            ["foo-fooer-owner-ref"],
        ),
    ],
)
def test_jobs_to_be_reconciled(
    name: str, template_labels: dict[str, str] | None, jobs: list[Any], expected: list[str]
) -> None:
    fixture = Fixture()
    for job in jobs:
        fixture.job_informer.indexer.add(job)
    cj: dict[str, Any] = {"metadata": {"namespace": "foo-ns", "name": "fooer"}, "spec": {}}
    if template_labels is not None:
        cj["spec"]["jobTemplate"] = {"metadata": {"labels": template_labels}}
    found = fixture.controller.syncer.jobs_to_be_reconciled(cj)
    assert sorted(j["metadata"]["name"] for j in found) == expected


# -- Job events -----------------------------------------------------------------------------------


def _owned_job(
    name: str = "mycronjob-1", uid: str = UID, kind: str = "CronJob", rv: str = "1"
) -> Any:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"job-{name}",
            "resourceVersion": rv,
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": kind,
                    "name": "mycronjob",
                    "uid": uid,
                    "controller": True,
                }
            ],
        },
    }


@pytest.mark.parametrize(
    ("name", "job", "queued"),
    [
        ("controlled by the cached CronJob", _owned_job(), [KEY]),
        ("controlled by an older CronJob of that name", _owned_job(uid="old-uid"), []),
        ("controlled by something else of that name", _owned_job(kind="Deployment"), []),
        ("an orphan", {**_owned_job(), "metadata": {"name": "o", "namespace": NS}}, []),
    ],
)
async def test_job_events_queue_the_controlling_cron_job(
    name: str, job: Any, queued: list[str]
) -> None:
    fixture = Fixture()
    fixture.cron_job_informer.indexer.add(cron_job())
    controller = fixture.controller
    controller.add_job(job)
    assert await fixture.drain() == queued
    newer = copy.deepcopy(job)
    newer["metadata"]["resourceVersion"] = "2"
    controller.update_job(job, newer)
    assert await fixture.drain() == queued
    controller.delete_job(job)
    assert await fixture.drain() == queued
    controller.delete_job(DeletedFinalStateUnknown(f"{NS}/x", job))
    assert await fixture.drain() == queued


async def test_a_job_seen_first_while_terminating_counts_as_deleted() -> None:
    fixture = Fixture()
    fixture.cron_job_informer.indexer.add(cron_job())
    job = _owned_job()
    job["metadata"]["deletionTimestamp"] = ts(JUST_BEFORE_THE_HOUR)
    fixture.controller.add_job(job)
    assert await fixture.drain() == [KEY]


async def test_a_resync_of_a_job_queues_nothing() -> None:
    fixture = Fixture()
    fixture.cron_job_informer.indexer.add(cron_job())
    job = _owned_job()
    fixture.controller.update_job(job, copy.deepcopy(job))
    assert await fixture.drain() == []


async def test_a_job_moving_to_another_cron_job_queues_both() -> None:
    fixture = Fixture()
    fixture.cron_job_informer.indexer.add(cron_job())
    other = cron_job()
    other["metadata"].update(name="other", uid="other-uid")
    fixture.cron_job_informer.indexer.add(other)
    old = _owned_job()
    cur = copy.deepcopy(old)
    cur["metadata"]["resourceVersion"] = "2"
    cur["metadata"]["ownerReferences"][0].update(name="other", uid="other-uid")
    fixture.controller.update_job(old, cur)
    assert await fixture.drain() == [KEY, f"{NS}/other"]
    # released: only the old owner
    released = copy.deepcopy(old)
    released["metadata"]["resourceVersion"] = "3"
    del released["metadata"]["ownerReferences"]
    fixture.controller.update_job(old, released)
    assert await fixture.drain() == [KEY]


def test_a_tombstone_of_something_else_is_ignored() -> None:
    fixture = Fixture()
    fixture.controller.delete_job(DeletedFinalStateUnknown(f"{NS}/x", {"kind": "Pod"}))
    assert len(fixture.controller.controller.queue) == 0
