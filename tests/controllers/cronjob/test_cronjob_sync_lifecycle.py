"""Whole syncs (``sync``: history cleanup, ``syncCronJob``, the one status write, the requeue)
on a fake client: upstream's TestControllerV2CleanupFinishedJobs,
TestControllerV2JobAlreadyExistsButNotInActiveStatus and
TestControllerV2JobAlreadyExistsButDifferentOwner, plus the active list, history limits,
events, the metric and bad input."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from cronjob_fixtures import (
    EVERY_HOUR,
    JUST_AFTER_THE_HOUR,
    JUST_AFTER_THE_PRIOR_HOUR,
    JUST_BEFORE_THE_HOUR,
    JUST_BEFORE_THE_PRIOR_HOUR,
    KEY,
    NAME,
    NS,
    ON_THE_HOUR,
    TOP_OF_THE_HOUR,
    FakeControls,
    Fixture,
    complete,
    cron_job,
    failed,
    ts,
)

from kcontrol.client import CRONJOBS, JOBS
from kcontrol.controller import Result
from kcontrol.errors import AlreadyExists, Conflict, Forbidden, InternalError, NotFound
from kcontrol.testing import Action
from kcontrol_controllers.cronjob import SCHEDULED_TIMESTAMP_ANNOTATION
from kcontrol_controllers.cronjob._jobs import job_from_template, job_reference
from kcontrol_controllers.cronjob._sync import _rfc1123z
from kcontrol_controllers.cronjob._times import NEXT_SCHEDULE_DELTA


def owned_job(name: str, started: datetime | None = None, **meta: Any) -> dict[str, Any]:
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NS,
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "CronJob", "name": NAME, "controller": True}
            ],
            **meta,
        },
        "spec": {},
        "status": {},
    }
    if started is not None:
        job["status"]["startTime"] = ts(started)
    return job


def deleted_names(fixture: Fixture) -> list[str]:
    return [a.name for a in fixture.client.actions_for("delete", "jobs")]


# -- TestControllerV2CleanupFinishedJobs ----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "now", "limit", "jobs", "create_error", "expected_deleted"),
    [
        (
            "jobs are still deleted when a cronjob can't create jobs due to jobs quota being "
            "reached (avoiding a deadlock)",
            JUST_AFTER_THE_HOUR,
            1,
            [
                ("finished-job-started-hour-ago", JUST_BEFORE_THE_PRIOR_HOUR),
                ("finished-job-started-minute-ago", JUST_BEFORE_THE_HOUR),
            ],
            InternalError("quota for # of jobs reached"),
            ["finished-job-started-hour-ago"],
        ),
        (
            "jobs are not deleted if history limit not reached",
            JUST_BEFORE_THE_HOUR,
            2,
            [("finished-job-started-hour-ago", JUST_BEFORE_THE_PRIOR_HOUR)],
            None,
            [],
        ),
    ],
)
async def test_cleanup_finished_jobs(
    name: str,
    now: datetime,
    limit: int,
    jobs: list[tuple[str, datetime]],
    create_error: Exception | None,
    expected_deleted: list[str],
) -> None:
    fixture = Fixture(now=now)
    cj = cron_job(schedule=ON_THE_HOUR, successfulJobsHistoryLimit=limit)
    cj["metadata"]["creationTimestamp"] = ts(JUST_BEFORE_THE_PRIOR_HOUR)
    cj["status"]["lastScheduleTime"] = ts(JUST_AFTER_THE_PRIOR_HOUR)
    fixture.add_cron_job(cj)
    for job_name, started in jobs:
        fixture.add_job(complete(owned_job(job_name, started, uid=job_name), started))
    FakeControls(fixture.client, create_error=create_error)

    if create_error is not None:
        with pytest.raises(InternalError):
            await fixture.controller.sync(KEY)
        assert fixture.recorder.events[-1] == (
            "Warning FailedCreate Error creating job: quota for # of jobs reached"
        )
    else:
        await fixture.controller.sync(KEY)
    assert sorted(deleted_names(fixture)) == expected_deleted


async def test_history_limits_delete_the_oldest_of_each_kind_in_the_background() -> None:
    fixture = Fixture(now=JUST_BEFORE_THE_HOUR)
    cj = cron_job(schedule=ON_THE_HOUR, successfulJobsHistoryLimit=1, failedJobsHistoryLimit=2)
    cj["status"]["lastScheduleTime"] = ts(JUST_AFTER_THE_PRIOR_HOUR)
    fixture.add_cron_job(cj)
    base = JUST_BEFORE_THE_PRIOR_HOUR
    for index in range(3):
        started = base + timedelta(minutes=index)
        fixture.add_job(complete(owned_job(f"ok-{index}", started, uid=f"ok-{index}"), started))
    for index in range(4):
        fixture.add_job(failed(owned_job(f"bad-{index}", base + timedelta(minutes=index))))
    fixture.add_job(failed(owned_job("bad-never-started")))
    fixture.add_job(owned_job("running", base))  # unfinished: never history

    result = await fixture.controller.sync(KEY)

    assert deleted_names(fixture) == ["ok-0", "ok-1", "bad-0", "bad-1", "bad-2"]
    for action in fixture.client.actions_for("delete", "jobs"):
        assert action.options["propagation_policy"] == "Background"
    assert fixture.recorder.events.count("Normal SuccessfulDelete Deleted job ok-0") == 1
    assert len(fixture.status_writes()) == 1, "deleting history writes the status"
    assert result == Result(
        requeue_after=(timedelta(minutes=1) + NEXT_SCHEDULE_DELTA).total_seconds()
    )


async def test_a_failed_history_delete_is_reported_and_the_others_go_on() -> None:
    fixture = Fixture(now=JUST_BEFORE_THE_HOUR)
    cj = cron_job(schedule=ON_THE_HOUR, successfulJobsHistoryLimit=0)
    cj["status"]["lastScheduleTime"] = ts(JUST_AFTER_THE_PRIOR_HOUR)
    fixture.add_cron_job(cj)
    for index in range(2):
        started = JUST_BEFORE_THE_PRIOR_HOUR + timedelta(minutes=index)
        fixture.add_job(complete(owned_job(f"ok-{index}", started), started))

    def refuse_first(action: Action) -> None:
        if action.name == "ok-0":
            raise Forbidden("no")

    fixture.client.prepend_reactor("delete", JOBS, refuse_first)
    await fixture.controller.sync(KEY)
    assert deleted_names(fixture) == ["ok-0", "ok-1"]
    assert "Warning FailedDelete Deleted job: no" in fixture.recorder.events
    assert "Normal SuccessfulDelete Deleted job ok-1" in fixture.recorder.events


# -- TestControllerV2JobAlreadyExists* ------------------------------------------------------------


def _already_exists_fixture(owned: bool) -> tuple[Fixture, dict[str, Any]]:
    fixture = Fixture(now=JUST_BEFORE_THE_HOUR)
    cj = cron_job(concurrencyPolicy="Forbid", schedule=EVERY_HOUR)
    cj["status"] = {"lastScheduleTime": ts(JUST_BEFORE_THE_PRIOR_HOUR), "active": []}
    fixture.add_cron_job(cj)
    job = job_from_template(cj, JUST_AFTER_THE_PRIOR_HOUR)
    job["metadata"].update(uid="1234", namespace=NS)
    if not owned:
        job["metadata"]["ownerReferences"] = []
    FakeControls(
        fixture.client,
        job=job,
        create_error=AlreadyExists(f'jobs.batch "{job["metadata"]["name"]}" already exists'),
    )
    return fixture, job


async def test_job_already_exists_but_not_in_active_status() -> None:
    """A Job we created whose status write was lost is put in the active list."""
    fixture, job = _already_exists_fixture(owned=True)
    await fixture.controller.sync(KEY)
    (written,) = fixture.status_writes()
    assert written["status"]["active"] == [job_reference(job)]
    assert not any("SuccessfulCreate" in e for e in fixture.recorder.events)


async def test_job_already_exists_but_different_owner() -> None:
    """Someone else's Job of that name: nothing is written (they keep the status)."""
    fixture, _ = _already_exists_fixture(owned=False)
    assert await fixture.controller.sync(KEY) is None
    assert fixture.status_writes() == []


# -- a whole sync: create, status, requeue, metric ------------------------------------------------


async def test_a_due_activation_creates_its_job_and_writes_the_status_once() -> None:
    fixture = Fixture(now=JUST_AFTER_THE_HOUR)
    cj = cron_job(schedule=ON_THE_HOUR, timeZone="Europe/Rome")
    cj["metadata"]["creationTimestamp"] = ts(JUST_BEFORE_THE_HOUR)
    fixture.add_cron_job(cj)

    result = await fixture.controller.sync(KEY)

    assert result == Result(
        requeue_after=(timedelta(minutes=59) + NEXT_SCHEDULE_DELTA).total_seconds()
    )
    (job,) = fixture.server_jobs()
    minutes = int(TOP_OF_THE_HOUR.timestamp()) // 60
    assert job["metadata"]["name"] == f"{NAME}-{minutes}"
    assert job["metadata"]["annotations"] == {
        "x": "y",
        SCHEDULED_TIMESTAMP_ANNOTATION: "2016-05-19T12:00:00+02:00",
    }
    assert job["metadata"]["labels"] == {"a": "b"}
    assert job["spec"] == cj["spec"]["jobTemplate"]["spec"]
    assert fixture.actions() == [
        f"create jobs {NS}/{NAME}-{minutes}",
        f"update cronjobs {NS}/{NAME}/status",
    ]
    status = fixture.server_cron_job()["status"]
    assert status["lastScheduleTime"] == ts(TOP_OF_THE_HOUR)
    assert status["active"] == [job_reference(job)]
    assert fixture.recorder.events == [f"Normal SuccessfulCreate Created job {NAME}-{minutes}"]
    skew = fixture.registry.get_sample_value(
        "cronjob_controller_job_creation_skew_duration_seconds_sum"
    )
    assert skew == 60.0, "created (by the fake server's clock) a minute after the hour"


async def test_the_next_sync_at_the_same_time_creates_nothing() -> None:
    fixture = Fixture(now=JUST_AFTER_THE_HOUR)
    fixture.add_cron_job(cron_job(schedule=ON_THE_HOUR))
    await fixture.controller.sync(KEY)
    fixture.refresh_caches()
    fixture.client.clear_actions()
    fixture.recorder.events.clear()
    result = await fixture.controller.sync(KEY)
    assert fixture.actions() == []
    assert fixture.recorder.events == []
    assert result == Result(
        requeue_after=(timedelta(minutes=59) + NEXT_SCHEDULE_DELTA).total_seconds()
    )


async def test_a_lost_status_write_does_not_run_the_activation_twice() -> None:
    """Created, then the status write failed: the retry finds its Job by name."""
    fixture = Fixture(now=JUST_AFTER_THE_HOUR)
    fixture.add_cron_job(cron_job(schedule=ON_THE_HOUR))
    failures = [InternalError("etcd is sad")]

    def fail_once(action: Action) -> None:
        if failures:
            raise failures.pop()

    fixture.client.prepend_reactor("update", CRONJOBS, fail_once)
    with pytest.raises(InternalError):
        await fixture.controller.sync(KEY)
    fixture.refresh_caches()  # the Job is seen, the CronJob's status is not changed
    fixture.recorder.events.clear()
    await fixture.controller.sync(KEY)
    assert len(fixture.server_jobs()) == 1
    assert fixture.recorder.events == [
        "Warning UnexpectedJob Saw a job that the controller did not create or forgot: "
        f"{fixture.server_jobs()[0]['metadata']['name']}"
    ]
    assert fixture.server_cron_job()["status"]["active"] == [
        job_reference(fixture.server_jobs()[0])
    ]


# -- the active list ------------------------------------------------------------------------------


def _active_fixture(*, job_on_server: bool) -> tuple[Fixture, dict[str, Any]]:
    fixture = Fixture(now=JUST_BEFORE_THE_HOUR)
    cj = cron_job(schedule=ON_THE_HOUR)
    cj["status"]["lastScheduleTime"] = ts(JUST_AFTER_THE_PRIOR_HOUR)
    job = job_from_template(cj, JUST_AFTER_THE_PRIOR_HOUR)
    job["metadata"].update(uid="gone", namespace=NS)
    cj["status"]["active"] = [job_reference(job)]
    fixture.add_cron_job(cj)
    if job_on_server:
        fixture.client.tracker.add(job)  # not in the cache yet: a slow watch
    return fixture, job


async def test_an_active_job_gone_from_the_server_is_dropped() -> None:
    fixture, job = _active_fixture(job_on_server=False)
    await fixture.controller.sync(KEY)
    assert f"get jobs {NS}/{job['metadata']['name']}" in fixture.actions()
    assert fixture.recorder.events == [
        f"Normal MissingJob Active job went missing: {job['metadata']['name']}"
    ]
    assert fixture.server_cron_job()["status"]["active"] == []


async def test_an_active_job_only_the_cache_misses_is_kept() -> None:
    fixture, _ = _active_fixture(job_on_server=True)
    await fixture.controller.sync(KEY)
    assert fixture.recorder.events == []
    assert fixture.status_writes() == []


async def test_a_failed_read_of_an_active_job_is_retried() -> None:
    fixture, _ = _active_fixture(job_on_server=True)
    FakeControls(fixture.client, get_error=InternalError("boom"))
    with pytest.raises(InternalError):
        await fixture.controller.sync(KEY)


async def test_a_finished_job_leaves_the_active_list_and_sets_last_successful_time() -> None:
    fixture = Fixture(now=JUST_BEFORE_THE_HOUR)
    cj = cron_job(schedule=ON_THE_HOUR)
    cj["status"]["lastScheduleTime"] = ts(JUST_AFTER_THE_PRIOR_HOUR)
    done = job_from_template(cj, JUST_AFTER_THE_PRIOR_HOUR)
    done["metadata"].update(uid="done", namespace=NS)
    bad = job_from_template(cj, JUST_BEFORE_THE_PRIOR_HOUR)
    bad["metadata"].update(uid="bad", namespace=NS)
    older = job_from_template(cj, JUST_BEFORE_THE_PRIOR_HOUR - timedelta(hours=1))
    older["metadata"].update(uid="older", namespace=NS)
    cj["status"]["active"] = [job_reference(done), job_reference(bad)]
    cj["status"]["lastSuccessfulTime"] = ts(JUST_BEFORE_THE_PRIOR_HOUR - timedelta(hours=2))
    fixture.add_cron_job(cj)
    fixture.add_job(complete(done, JUST_AFTER_THE_PRIOR_HOUR + timedelta(seconds=30)))
    fixture.add_job(failed(bad))
    fixture.add_job(complete(older, JUST_BEFORE_THE_PRIOR_HOUR))  # not active, older success

    await fixture.controller.sync(KEY)

    status = fixture.server_cron_job()["status"]
    assert status["active"] == []
    assert status["lastSuccessfulTime"] == ts(JUST_AFTER_THE_PRIOR_HOUR + timedelta(seconds=30))
    assert sorted(fixture.recorder.events) == [
        f"Normal SawCompletedJob Saw completed job: {bad['metadata']['name']}, condition: Failed",
        f"Normal SawCompletedJob Saw completed job: {done['metadata']['name']}, "
        "condition: Complete",
    ]


async def test_a_stale_cron_job_cache_goes_on_with_the_server_copy_and_its_write_conflicts() -> (
    None
):
    """upstream: an unfinished Job missing from the cached active list but present in the
    API server's goes on with that CronJob; what the sync writes is still its own (stale)
    copy, which the API server refuses: the key is retried with a fresher cache."""
    fixture = Fixture(now=JUST_AFTER_THE_HOUR)
    cj = cron_job(schedule=ON_THE_HOUR)
    cj["status"]["lastScheduleTime"] = ts(JUST_AFTER_THE_PRIOR_HOUR)
    stored = fixture.add_cron_job(cj)
    running = job_from_template(cj, JUST_AFTER_THE_PRIOR_HOUR)
    running["metadata"]["namespace"] = NS
    running = fixture.add_job(running)
    newer = fixture.server_cron_job()
    newer["status"]["active"] = [job_reference(running)]
    fixture.client.tracker.update(CRONJOBS, newer, subresource="status")

    with pytest.raises(Conflict):
        await fixture.controller.sync(KEY)
    assert (
        stored["metadata"]["resourceVersion"]
        != fixture.server_cron_job()["metadata"]["resourceVersion"]
    )
    assert not any("UnexpectedJob" in e for e in fixture.recorder.events)
    fixture.refresh_caches()
    await fixture.controller.sync(KEY)  # retried: the Job created by the first try is found
    assert len(fixture.server_jobs()) == 2
    assert len(fixture.server_cron_job()["status"]["active"]) == 2


# -- what stops a sync ----------------------------------------------------------------------------


async def test_a_cron_job_being_deleted_only_keeps_its_status_true() -> None:
    fixture, _ = _active_fixture(job_on_server=False)
    cached = fixture.cron_job_informer.indexer.list()[0]
    cached["metadata"]["deletionTimestamp"] = ts(JUST_BEFORE_THE_HOUR)
    fixture.clock.step(3600)
    assert await fixture.controller.sync(KEY) is None
    assert fixture.server_jobs() == []
    assert len(fixture.status_writes()) == 1  # the missing Job dropped


async def test_a_deleted_cron_job_is_forgotten() -> None:
    fixture = Fixture()
    assert await fixture.controller.sync(KEY) is None
    assert fixture.actions() == []


@pytest.mark.parametrize(
    ("name", "spec", "event"),
    [
        (
            "unparseable schedule",
            {"schedule": "obvious error schedule"},
            'Warning UnparseableSchedule unparseable schedule: "obvious error schedule" : '
            "expected exactly 5 fields, found 3: [obvious error schedule]",
        ),
        (
            "unknown time zone",
            {"schedule": ON_THE_HOUR, "timeZone": "bad timezone"},
            'Warning UnknownTimeZone invalid timeZone: "bad timezone": '
            "unknown time zone bad timezone",
        ),
        (
            "unknown zone in the schedule",
            {"schedule": "TZ=Bad/Zone 0 * * * *"},
            'Warning UnparseableSchedule unparseable schedule: "TZ=Bad/Zone 0 * * * *" : '
            "provided bad location Bad/Zone: unknown time zone Bad/Zone",
        ),
        (
            "never fires",
            {"schedule": "59 23 31 2 *"},
            "Warning InvalidSchedule invalid schedule: 59 23 31 2 * : "
            "time difference between two schedules is less than 1 second",
        ),
    ],
)
async def test_bad_input_is_reported_and_not_requeued(
    name: str, spec: dict[str, Any], event: str
) -> None:
    fixture = Fixture(now=JUST_AFTER_THE_HOUR)
    fixture.add_cron_job(cron_job(**spec))
    assert await fixture.controller.sync(KEY) is None
    assert event in fixture.recorder.events
    assert fixture.server_jobs() == []
    assert fixture.status_writes() == []


async def test_suspended_creates_nothing_and_is_not_requeued() -> None:
    fixture = Fixture(now=JUST_AFTER_THE_HOUR)
    fixture.add_cron_job(cron_job(schedule=ON_THE_HOUR, suspend=True))
    assert await fixture.controller.sync(KEY) is None
    assert fixture.actions() == []
    assert fixture.recorder.events == []


def test_missed_schedule_time_format_is_rfc1123z_in_utc() -> None:
    """``MissSchedule``'s time, as Go's ``RFC1123Z`` (the event itself cannot happen: the
    activation it reports is never older than the deadline that finds it)."""
    assert _rfc1123z(JUST_AFTER_THE_HOUR) == "Thu, 19 May 2016 10:01:00 +0000"


async def test_tz_in_the_schedule_is_reported_as_unsupported() -> None:
    fixture = Fixture(now=JUST_BEFORE_THE_HOUR)
    fixture.add_cron_job(cron_job(schedule="CRON_TZ=UTC 0 * * * *", timeZone="Europe/Rome"))
    await fixture.controller.sync(KEY)
    assert fixture.recorder.events == [
        'Warning UnsupportedSchedule CRON_TZ or TZ used in schedule "CRON_TZ=UTC 0 * * * *" is '
        "not officially supported, see "
        "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"
    ]


async def test_forbid_with_a_running_job_skips_with_an_event() -> None:
    fixture = Fixture(now=JUST_AFTER_THE_HOUR)
    cj = cron_job(schedule=ON_THE_HOUR, concurrencyPolicy="Forbid")
    cj["status"]["lastScheduleTime"] = ts(JUST_AFTER_THE_PRIOR_HOUR)
    running = job_from_template(cj, JUST_AFTER_THE_PRIOR_HOUR)
    running["metadata"].update(uid="running", namespace=NS)
    cj["status"]["active"] = [job_reference(running)]
    fixture.add_cron_job(cj)
    fixture.add_job(running)
    result = await fixture.controller.sync(KEY)
    assert fixture.recorder.events == [
        "Normal JobAlreadyActive Not starting job because prior execution is running and "
        "concurrency policy is Forbid"
    ]
    assert len(fixture.server_jobs()) == 1
    assert result == Result(
        requeue_after=(timedelta(minutes=59) + NEXT_SCHEDULE_DELTA).total_seconds()
    )


async def test_replace_deletes_the_running_job_before_creating() -> None:
    fixture = Fixture(now=JUST_AFTER_THE_HOUR)
    cj = cron_job(schedule=ON_THE_HOUR, concurrencyPolicy="Replace")
    cj["status"]["lastScheduleTime"] = ts(JUST_AFTER_THE_PRIOR_HOUR)
    running = job_from_template(cj, JUST_AFTER_THE_PRIOR_HOUR)
    running["metadata"]["namespace"] = NS
    cj["status"]["active"] = [job_reference(fixture.add_job(running))]
    fixture.add_cron_job(cj)
    await fixture.controller.sync(KEY)
    verbs = [a.verb for a in fixture.client.actions_for("*", "jobs")]
    assert verbs == ["get", "delete", "create"]
    (new,) = fixture.server_jobs()
    assert fixture.server_cron_job()["status"]["active"] == [job_reference(new)]
    assert fixture.recorder.events == [
        f"Normal SuccessfulDelete Deleted job {running['metadata']['name']}",
        f"Normal SuccessfulCreate Created job {new['metadata']['name']}",
    ]


async def test_replace_that_cannot_delete_creates_nothing() -> None:
    fixture = Fixture(now=JUST_AFTER_THE_HOUR)
    cj = cron_job(schedule=ON_THE_HOUR, concurrencyPolicy="Replace")
    cj["status"]["lastScheduleTime"] = ts(JUST_AFTER_THE_PRIOR_HOUR)
    running = job_from_template(cj, JUST_AFTER_THE_PRIOR_HOUR)
    running["metadata"]["namespace"] = NS
    cj["status"]["active"] = [job_reference(fixture.add_job(running))]
    fixture.add_cron_job(cj)

    def refuse(action: Action) -> None:
        raise Forbidden("nope")

    fixture.client.prepend_reactor("delete", JOBS, refuse)
    with pytest.raises(RuntimeError, match="could not replace job"):
        await fixture.controller.sync(KEY)
    assert fixture.client.actions_for("create", "jobs") == []


async def test_a_terminating_namespace_fails_the_sync_without_an_event() -> None:
    fixture = Fixture(now=JUST_AFTER_THE_HOUR)
    fixture.add_cron_job(cron_job(schedule=ON_THE_HOUR))
    terminating = Forbidden(
        "namespace is being terminated",
        details={"causes": [{"reason": "NamespaceTerminating"}]},
    )
    FakeControls(fixture.client, create_error=terminating)
    with pytest.raises(Forbidden):
        await fixture.controller.sync(KEY)
    assert fixture.recorder.events == []


async def test_a_status_change_is_written_even_when_the_sync_then_fails() -> None:
    fixture = Fixture(now=JUST_AFTER_THE_HOUR)
    cj = cron_job(schedule=ON_THE_HOUR)
    cj["status"]["lastScheduleTime"] = ts(JUST_AFTER_THE_PRIOR_HOUR)
    done = job_from_template(cj, JUST_AFTER_THE_PRIOR_HOUR)
    done["metadata"].update(uid="done", namespace=NS)
    cj["status"]["active"] = [job_reference(done)]
    fixture.add_cron_job(cj)
    fixture.add_job(complete(done, JUST_AFTER_THE_PRIOR_HOUR))
    FakeControls(fixture.client, create_error=InternalError("no"))
    with pytest.raises(InternalError):
        await fixture.controller.sync(KEY)
    (written,) = fixture.status_writes()
    assert written["status"]["active"] == []


async def test_a_cron_job_not_found_on_the_fresh_read_fails_the_sync() -> None:
    fixture = Fixture(now=JUST_AFTER_THE_HOUR)
    cj = cron_job(schedule=ON_THE_HOUR)
    fixture.cron_job_informer.indexer.add(cj)  # cache only
    running = job_from_template(cj, JUST_AFTER_THE_PRIOR_HOUR)
    running["metadata"]["namespace"] = NS
    fixture.add_job(running)
    with pytest.raises(NotFound):
        await fixture.controller.sync(KEY)


async def test_history_cleanup_alone_writes_the_status() -> None:
    fixture = Fixture(now=JUST_BEFORE_THE_HOUR)
    cj = cron_job(schedule=ON_THE_HOUR, failedJobsHistoryLimit=0)
    cj["status"]["lastScheduleTime"] = ts(JUST_AFTER_THE_PRIOR_HOUR)
    fixture.add_cron_job(cj)
    fixture.add_job(failed(owned_job("bad", JUST_AFTER_THE_PRIOR_HOUR, uid="bad")))
    outcome = await fixture.controller.syncer.sync_cron_job(cron_job(schedule=ON_THE_HOUR), [])
    assert not outcome.update_status, "the sync itself changes nothing here"
    await fixture.controller.sync(KEY)
    assert deleted_names(fixture) == ["bad"]
    assert len(fixture.status_writes()) == 1


async def test_already_exists_for_a_job_already_in_the_active_list_changes_nothing() -> None:
    fixture = Fixture(now=JUST_AFTER_THE_HOUR)
    cj = cron_job(schedule=ON_THE_HOUR)
    cj["status"]["lastScheduleTime"] = ts(JUST_AFTER_THE_PRIOR_HOUR)
    running = job_from_template(cj, JUST_AFTER_THE_PRIOR_HOUR)
    running["metadata"].update(uid="running", namespace=NS)
    cj["status"]["active"] = [job_reference(running)]
    fixture.add_cron_job(cj)
    fixture.add_job(running)
    # upstream's fake: the GET after AlreadyExists answers the running Job, already active
    FakeControls(fixture.client, job=running, create_error=AlreadyExists("exists"))
    assert await fixture.controller.sync(KEY) is None
    assert fixture.status_writes() == []
    assert fixture.recorder.events == []
