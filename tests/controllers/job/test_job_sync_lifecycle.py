"""Syncs around a Job's lifetime: the active deadline (upstream TestSyncJobPastDeadline,
TestSingleJobFailedCondition), finished and deleted Jobs, ``managedBy``
(TestSyncJobWhenManagedBy), suspend and resume, events, and writing only what changed."""

from __future__ import annotations

from typing import Any

import pytest
from job_fixtures import FINISHED_AT, WALL, Fixture, ago, new_job, new_pod, ts

from kcontrol.client import Object

KEY = "default/foobar"
DEADLINE = "Job was active longer than specified deadline"
BACKOFF = "Job has reached the specified backoff limit"


def conditions(job: Object) -> list[tuple[str, str, str, str]]:
    return [
        (c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
        for c in (job.get("status") or {}).get("conditions") or []
    ]


def _pods(job: Object, active: int = 0, succeeded: int = 0, failed: int = 0) -> list[Object]:
    pods = [new_pod(f"a{i}", job, "Running", finished_at=FINISHED_AT) for i in range(active)]
    pods += [new_pod(f"s{i}", job, "Succeeded") for i in range(succeeded)]
    pods += [new_pod(f"f{i}", job, "Failed") for i in range(failed)]
    return pods


@pytest.mark.parametrize(
    ("parallelism", "completions", "deadline", "started", "limit", "suspend", "pods", "want"),
    [
        pytest.param(
            1,
            1,
            10,
            15,
            6,
            False,
            (1, 0, 0),
            ((1, 0, 1), [("FailureTarget", "True", "DeadlineExceeded", DEADLINE)]),
            id="activeDeadlineSeconds less than single pod execution",
        ),
        pytest.param(
            1,
            2,
            10,
            15,
            6,
            False,
            (1, 1, 0),
            ((1, 1, 1), [("FailureTarget", "True", "DeadlineExceeded", DEADLINE)]),
            id="activeDeadlineSeconds bigger than single pod execution",
        ),
        pytest.param(
            1,
            1,
            10,
            10,
            6,
            False,
            (0, 0, 0),
            (
                (0, 0, 0),
                [
                    ("FailureTarget", "True", "DeadlineExceeded", DEADLINE),
                    ("Failed", "True", "DeadlineExceeded", DEADLINE),
                ],
            ),
            id="activeDeadlineSeconds times-out before any pod starts",
        ),
        pytest.param(
            1,
            1,
            1,
            10,
            0,
            False,
            (0, 0, 1),
            (
                (0, 0, 1),
                [
                    ("FailureTarget", "True", "BackoffLimitExceeded", BACKOFF),
                    ("Failed", "True", "BackoffLimitExceeded", BACKOFF),
                ],
            ),
            id="activeDeadlineSeconds with backofflimit reach",
        ),
        pytest.param(
            1,
            2,
            10,
            15,
            6,
            True,
            (0, 0, 0),
            ((0, 0, 0), [("Suspended", "True", "JobSuspended", "Job suspended")]),
            id="activeDeadlineSeconds is not triggered when Job is suspended",
        ),
    ],
)
async def test_sync_job_past_deadline(
    parallelism: int,
    completions: int,
    deadline: int,
    started: int,
    limit: int,
    suspend: bool,
    pods: tuple[int, int, int],
    want: tuple[tuple[int, int, int], list[Any]],
) -> None:
    f = Fixture()
    job = new_job(parallelism, completions, limit, activeDeadlineSeconds=deadline, suspend=suspend)
    job["status"] = {"startTime": ago(started)}
    job = f.add_job(job)
    f.add_pods(_pods(job, *pods))
    await f.jc.sync(KEY)
    (deletions, succeeded, failed), want_conditions = want
    assert f.actions("create", "pods") == []
    assert len(f.client.actions_for("delete", "pods")) == deletions
    status = f.server_job()["status"]
    assert status.get("active", 0) == 0
    assert (status.get("succeeded", 0), status.get("failed", 0)) == (succeeded, failed)
    assert conditions(f.server_job()) == want_conditions
    if suspend:
        assert "startTime" not in status, "a suspended Job's start time is cleared"
    else:
        assert status.get("startTime") == ago(started)


async def test_deadline_failure_is_announced_with_the_failed_condition() -> None:
    """The Warning event comes with the terminal condition, once nothing runs any more."""
    f = Fixture()
    job = new_job(activeDeadlineSeconds=10)
    job["status"] = {"startTime": ago(15)}
    job = f.add_job(job)
    f.add_pods(_pods(job, active=1))
    await f.jc.sync(KEY)
    assert "Warning DeadlineExceeded " + DEADLINE not in f.recorder.events
    assert f.jc.finished_jobs == set()
    # The pod goes (its finalizer was removed by the sync), the informer catches up.
    f.refresh_pod_cache()
    for pod in f.pod_informer.indexer.list():
        f.pod_informer.indexer.delete(pod)
    f.refresh_job_cache()
    await f.jc.sync(KEY)
    assert conditions(f.server_job())[-1] == ("Failed", "True", "DeadlineExceeded", DEADLINE)
    assert f.recorder.events[-1] == "Warning DeadlineExceeded " + DEADLINE
    assert f.jc.finished_jobs == {"job-uid"}


async def test_active_deadline_requeues_for_the_deadline() -> None:
    f = Fixture()
    job = new_job(activeDeadlineSeconds=30)
    job["status"] = {"startTime": ago(10)}
    job = f.add_job(job)
    f.add_pods(_pods(job, active=1))
    await f.jc.sync(KEY)
    assert conditions(f.server_job()) == []
    assert f.waiting() == 1
    f.clock.step(19.5)
    assert await f.drain() == []
    f.clock.step(0.5)
    assert await f.drain() == [KEY]


async def test_single_job_failed_condition() -> None:
    """A ``Failed=False`` condition is turned ``True``, not duplicated."""
    f = Fixture()
    job = new_job(activeDeadlineSeconds=10)
    job["status"] = {
        "startTime": ago(15),
        "conditions": [
            {"type": "Failed", "status": "False", "reason": "DeadlineExceeded", "message": DEADLINE}
        ],
    }
    f.add_job(job)
    await f.jc.sync(KEY)
    assert f.actions("delete", "pods") == []
    failed = [c for c in conditions(f.server_job()) if c[0] == "Failed"]
    assert failed == [("Failed", "True", "DeadlineExceeded", DEADLINE)]


async def test_sync_job_complete() -> None:
    f = Fixture()
    job = new_job()
    job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    f.add_job(job)
    f.jc.backoff_store.update(f.jc.backoff_store.new_record(KEY, [], []))
    await f.jc.sync(KEY)
    assert f.client.actions == []
    assert f.jc.backoff_store.get(KEY) is None


async def test_sync_job_deleted() -> None:
    f = Fixture()
    f.jc.expectations.expect_creations(KEY, 2)
    f.jc.finalizer_expectations.expect_finalizers_removed(KEY, ["a"])
    f.jc.backoff_store.update(f.jc.backoff_store.new_record(KEY, [], []))
    await f.jc.sync(KEY)
    assert f.client.actions == []
    assert f.jc.expectations.get_expectations(KEY) is None
    assert f.jc.finalizer_expectations.expected_uids(KEY) == frozenset()
    assert f.jc.backoff_store.get(KEY) is None


@pytest.mark.parametrize(
    ("managed_by", "want_updated"),
    [
        pytest.param("custom-managed-by", False, id="job with custom value of managedBy"),
        pytest.param(
            "kubernetes.io/job-controller", True, id="job with well known value of the managedBy"
        ),
        pytest.param(None, True, id="job without the managedBy"),
    ],
)
async def test_sync_job_when_managed_by(managed_by: str | None, want_updated: bool) -> None:
    f = Fixture()
    spec = {"managedBy": managed_by} if managed_by else {}
    job = new_job(2, 2, 6, **spec)
    job["status"] = {"active": 1, "ready": 1, "startTime": ts(WALL)}
    f.add_job(job)
    await f.jc.sync(KEY)
    if want_updated:
        status = f.server_job()["status"]
        assert (status["active"], status["ready"], status["terminating"]) == (2, 0, 0)
        assert len(f.created_pods()) == 2
    else:
        assert f.client.actions == []


async def test_job_with_an_unknown_completion_mode_is_not_synced() -> None:
    f = Fixture()
    f.add_job(new_job(completion_mode="Chaotic"))
    await f.jc.sync(KEY)
    assert f.client.actions == []
    assert f.recorder.events == [
        "Warning UnknownCompletionMode Skipped Job sync because completion mode is unknown"
    ]


async def test_a_job_marked_finished_waits_for_the_informer() -> None:
    f = Fixture()
    job = f.add_job(new_job())
    f.add_pod(new_pod("p", job, "Succeeded"))
    await f.jc.sync(KEY)
    assert conditions(f.server_job())[-1][0] == "Complete"
    f.client.clear_actions()
    await f.jc.sync(KEY)  # the cache still shows the Job running
    assert f.client.actions == []
    f.refresh_job_cache()
    await f.jc.sync(KEY)
    assert f.jc.finished_jobs == set()


async def test_events_of_a_completed_job() -> None:
    f = Fixture()
    job = f.add_job(new_job(2, 2, 6))
    f.add_pods([new_pod("a", job, "Succeeded"), new_pod("b", job, "Succeeded")])
    await f.jc.sync(KEY)
    assert f.recorder.events == ["Normal Completed Job completed"]
    status = f.server_job()["status"]
    assert status["completionTime"] == ts(WALL)
    assert status["succeeded"] == 2


async def test_too_many_succeeded_pods_event() -> None:
    f = Fixture()
    job = f.add_job(new_job(2, 1, 6))
    f.add_pods([new_pod("a", job, "Succeeded"), new_pod("b", job, "Succeeded")])
    await f.jc.sync(KEY)
    assert f.recorder.events == [
        "Warning TooManySucceededPods Too many succeeded pods running after completion count "
        "reached",
        "Normal Completed Job completed",
    ]


# -- suspend and resume ----------------------------------------------------------------------


async def test_suspending_a_running_job_deletes_its_pods_and_clears_the_start_time() -> None:
    f = Fixture()
    job = new_job(2, 4, 6, suspend=True, activeDeadlineSeconds=5)
    job["status"] = {"startTime": ago(100), "active": 2}
    job = f.add_job(job)
    f.add_pods(_pods(job, active=2))
    await f.jc.sync(KEY)
    status = f.server_job()["status"]
    assert "startTime" not in status
    assert conditions(f.server_job()) == [("Suspended", "True", "JobSuspended", "Job suspended")]
    assert len(f.client.actions_for("delete", "pods")) == 2
    assert status["active"] == 0
    assert f.recorder.events.count("Normal Suspended Job suspended") == 1
    assert sum(e.startswith("Normal SuccessfulDelete") for e in f.recorder.events) == 2


async def test_resuming_resets_the_start_time() -> None:
    f = Fixture()
    job = new_job(2, 4, 6, suspend=False)
    job["status"] = {
        "startTime": ago(1000),
        "conditions": [
            {"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "x"}
        ],
    }
    f.add_job(job)
    await f.jc.sync(KEY)
    status = f.server_job()["status"]
    assert status["startTime"] == ts(WALL)
    assert conditions(f.server_job()) == [("Suspended", "False", "JobResumed", "Job resumed")]
    assert "Normal Resumed Job resumed" in f.recorder.events


# -- writes: only what changed -------------------------------------------------------------------


async def test_a_sync_with_nothing_to_change_writes_nothing() -> None:
    f = Fixture()
    job = new_job(2, 5, 6)
    job["status"] = {"startTime": ts(WALL), "active": 2, "ready": 1, "terminating": 0}
    job = f.add_job(job)
    f.add_pods([new_pod("a", job, ready=True), new_pod("b", job)])
    await f.jc.sync(KEY)
    assert f.client.actions == []


async def test_a_changed_active_count_is_written() -> None:
    f = Fixture()
    job = new_job(2, 5, 6)
    job["status"] = {"startTime": ts(WALL), "active": 1, "ready": 0, "terminating": 0}
    job = f.add_job(job)
    f.add_pods([new_pod("a", job), new_pod("b", job)])
    await f.jc.sync(KEY)
    assert [s["status"]["active"] for s in f.status_writes()] == [2]


async def test_an_index_already_recorded_needs_no_status_write() -> None:
    """A succeeded pod whose index is in completedIndexes only loses its finalizer."""
    f = Fixture()
    job = new_job(2, 2, 6, "Indexed")
    job["status"] = {
        "startTime": ts(WALL),
        "active": 1,
        "ready": 0,
        "terminating": 0,
        "succeeded": 1,
        "completedIndexes": "0",
    }
    job = f.add_job(job)
    f.add_pods([new_pod("a", job, "Succeeded", index="0"), new_pod("b", job, index="1")])
    await f.jc.sync(KEY)
    assert f.actions() == ["patch pods default/a"]
