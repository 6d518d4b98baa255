"""The backoff limit and the recreation backoff through syncs: upstream's TestJobBackoff,
TestJobBackoffForOnFailure and TestJobBackoffOnRestartPolicyNever (1.36 variants)."""

from __future__ import annotations

import pytest
from job_fixtures import Fixture, ago, new_job, new_pod, ts

from kcontrol.client import Object

KEY = "default/foobar"
BACKOFF = (
    "FailureTarget",
    "True",
    "BackoffLimitExceeded",
    "Job has reached the specified backoff limit",
)


def conditions(job: Object) -> list[tuple[str, str, str, str]]:
    return [
        (c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
        for c in (job.get("status") or {}).get("conditions") or []
    ]


def restarting(name: str, job: Object, phase: str, restarts: int) -> Object:
    pod = new_pod(name, job, phase)
    pod["status"]["containerStatuses"] = [{"name": "c", "restartCount": restarts, "state": {}}]
    return pod


@pytest.mark.parametrize(
    ("completions", "limit", "phase", "restarts", "want_active", "want_failed", "want_conditions"),
    [
        pytest.param(1, 0, "Running", [0], 1, 0, [], id="backoffLimit 0 should have 1 pod active"),
        pytest.param(
            1,
            1,
            "Running",
            [0],
            1,
            0,
            [],
            id="backoffLimit 1 with restartCount 0 should have 1 pod active",
        ),
        pytest.param(
            1,
            1,
            "Running",
            [1],
            0,
            1,
            [BACKOFF],
            id="backoffLimit 1 with restartCount 1 and podRunning should have 0 pod active",
        ),
        pytest.param(
            1,
            1,
            "Pending",
            [1],
            0,
            1,
            [BACKOFF],
            id="backoffLimit 1 with restartCount 1 and podPending should have 0 pod active",
        ),
        pytest.param(
            5,
            2,
            "Running",
            [2],
            0,
            1,
            [BACKOFF],
            id="too many job failures with podRunning - single pod",
        ),
        pytest.param(
            5,
            2,
            "Running",
            [1, 1],
            0,
            2,
            [BACKOFF],
            id="too many job failures with podRunning - multiple pods",
        ),
        pytest.param(5, 2, "Succeeded", [2], 1, 0, [], id="restarts of finished pods do not count"),
    ],
)
async def test_job_backoff_for_on_failure(
    completions: int,
    limit: int,
    phase: str,
    restarts: list[int],
    want_active: int,
    want_failed: int,
    want_conditions: list[tuple[str, str, str, str]],
) -> None:
    f = Fixture()
    job = new_job(len(restarts), completions, limit)
    job["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    job = f.add_job(job)
    f.add_pods([restarting(f"p{i}", job, phase, n) for i, n in enumerate(restarts)])
    await f.jc.sync(KEY)
    status = f.server_job()["status"]
    assert status.get("active", 0) == want_active
    assert status.get("failed", 0) == want_failed
    assert conditions(f.server_job()) == want_conditions


async def test_failed_pods_are_replaced_after_the_backoff() -> None:
    """One failure: the replacement waits 10 s from the failure; the sync is requeued for it."""
    f = Fixture()
    job = f.add_job(new_job(1, 1, 6))
    f.add_pod(new_pod("p", job, "Failed", finished_at=ago(4)))
    await f.jc.sync(KEY)
    assert f.created_pods() == []
    assert f.server_job()["status"]["failed"] == 1
    assert f.waiting() == 1
    f.clock.step(5.9)
    assert await f.drain() == []
    f.clock.step(0.1)
    assert await f.drain() == [KEY]
    # The next sync (the failed pod counted, its finalizer gone) creates the replacement.
    f.refresh_job_cache()
    f.refresh_pod_cache()
    await f.jc.sync(KEY)
    assert len(f.created_pods()) == 1


async def test_backoff_doubles_with_consecutive_failures() -> None:
    f = Fixture()
    job = f.add_job(new_job(1, 1, 6))
    f.add_pod(new_pod("p1", job, "Failed", finished_at=ago(30)))
    f.add_pod(new_pod("p2", job, "Failed", finished_at=ago(10)))
    await f.jc.sync(KEY)
    record = f.jc.backoff_store.get(KEY)
    assert record is not None
    assert record.failures_after_last_success == 2
    assert record.remaining_time(f.clock.wall()) == 10.0  # 20 s after the last failure
    assert f.created_pods() == []


async def test_a_success_resets_the_backoff() -> None:
    f = Fixture()
    job = f.add_job(new_job(2, 5, 6))
    f.add_pod(new_pod("p1", job, "Failed", finished_at=ago(30)))
    f.add_pod(new_pod("p2", job, "Succeeded", finished_at=ago(10)))
    await f.jc.sync(KEY)
    assert len(f.created_pods()) == 2


async def test_job_fails_when_failures_exceed_the_backoff_limit() -> None:
    f = Fixture()
    job = new_job(1, 1, 1)
    job["status"] = {"failed": 1, "startTime": ts(f.clock.wall())}
    job = f.add_job(job)
    f.add_pod(new_pod("p", job, "Failed"))
    await f.jc.sync(KEY)
    assert conditions(f.server_job()) == [
        BACKOFF,
        ("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    ]
    assert f.recorder.events == [
        "Warning BackoffLimitExceeded Job has reached the specified backoff limit"
    ]
    assert f.server_job()["status"]["failed"] == 2
