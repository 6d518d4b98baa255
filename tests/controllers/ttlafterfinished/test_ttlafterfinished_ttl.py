"""The expiry maths (``_ttl``): upstream's TestTimeLeft table, and tables for jobFinishTime and
needsCleanup."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from ttlafterfinished_fixtures import NOW, ago, new_job

from kcontrol_controllers.jobutil import is_job_finished
from kcontrol_controllers.ttlafterfinished._ttl import (
    NotCleanable,
    job_finish_time,
    needs_cleanup,
    time_left,
)


@dataclass(frozen=True)
class TimeLeftCase:
    name: str
    completion_time: datetime | None = None
    failed_time: datetime | None = None
    ttl: int | None = None
    error: str = ""
    time_left: float = 0.0
    expire_at: datetime = NOW


TIME_LEFT_CASES = [
    TimeLeftCase("Error case: Job unfinished", ttl=100, error="should not be cleaned up"),
    TimeLeftCase(
        "Error case: Job completed now, no TTL",
        completion_time=NOW,
        error="should not be cleaned up",
    ),
    TimeLeftCase("Job completed now, 0s TTL", completion_time=NOW, ttl=0),
    TimeLeftCase(
        "Job completed now, 10s TTL",
        completion_time=NOW,
        ttl=10,
        time_left=10,
        expire_at=NOW + timedelta(seconds=10),
    ),
    TimeLeftCase(
        "Job completed 10s ago, 15s TTL",
        completion_time=ago(10),
        ttl=15,
        time_left=5,
        expire_at=NOW + timedelta(seconds=5),
    ),
    TimeLeftCase(
        "Error case: Job failed now, no TTL", failed_time=NOW, error="should not be cleaned up"
    ),
    TimeLeftCase("Job failed now, 0s TTL", failed_time=NOW, ttl=0),
    TimeLeftCase(
        "Job failed now, 10s TTL",
        failed_time=NOW,
        ttl=10,
        time_left=10,
        expire_at=NOW + timedelta(seconds=10),
    ),
    TimeLeftCase(
        "Job failed 10s ago, 15s TTL",
        failed_time=ago(10),
        ttl=15,
        time_left=5,
        expire_at=NOW + timedelta(seconds=5),
    ),
    # Not upstream's: an expired TTL goes negative, and the future is seen as such.
    TimeLeftCase(
        "Job completed 20s ago, 15s TTL",
        completion_time=ago(20),
        ttl=15,
        time_left=-5,
        expire_at=NOW - timedelta(seconds=5),
    ),
    TimeLeftCase(
        "Job completed 30s in the future, 0s TTL",
        completion_time=NOW + timedelta(seconds=30),
        ttl=0,
        time_left=30,
        expire_at=NOW + timedelta(seconds=30),
    ),
]


@pytest.mark.parametrize("case", TIME_LEFT_CASES, ids=lambda c: c.name)
def test_time_left(case: TimeLeftCase) -> None:
    job = new_job(case.completion_time, case.failed_time, case.ttl)
    if case.error:
        with pytest.raises(NotCleanable, match=case.error):
            time_left(job, NOW)
        return
    expiry = time_left(job, NOW)
    assert expiry.remaining == case.time_left
    assert expiry.expire_at == case.expire_at
    assert expiry.expired == (case.time_left <= 0)
    assert expiry.since == NOW


@pytest.mark.parametrize(
    ("finished", "in_the_future"),
    [
        pytest.param(ago(1), False, id="finished before now"),
        pytest.param(NOW, False, id="finished now"),
        pytest.param(NOW + timedelta(seconds=1), True, id="finished after now (clock skew)"),
    ],
)
def test_finished_in_the_future(finished: datetime, in_the_future: bool) -> None:
    assert time_left(new_job(finished, ttl=5), NOW).finished_in_the_future is in_the_future


def condition(kind: str, status: str = "True", at: str | None = "2026-01-01T11:00:00Z") -> Any:
    found: dict[str, Any] = {"type": kind, "status": status}
    if at is not None:
        found["lastTransitionTime"] = at
    return found


def with_conditions(*conditions: Any, ttl: int | None = 5) -> Any:
    job = new_job(ttl=ttl)
    job["status"] = {"conditions": list(conditions)}
    return job


@pytest.mark.parametrize(
    ("job", "finished_at", "error"),
    [
        pytest.param(
            with_conditions(condition("Complete")),
            "2026-01-01T11:00:00+00:00",
            "",
            id="complete: its lastTransitionTime",
        ),
        pytest.param(
            with_conditions(condition("Failed", at="2026-01-01T10:30:00Z")),
            "2026-01-01T10:30:00+00:00",
            "",
            id="failed: its lastTransitionTime",
        ),
        pytest.param(
            with_conditions(
                condition("SuccessCriteriaMet", at="2026-01-01T09:00:00Z"),
                condition("Complete", status="False", at="2026-01-01T09:30:00Z"),
                condition("Failed", at="2026-01-01T10:00:00Z"),
                condition("Complete", at="2026-01-01T11:00:00Z"),
            ),
            "2026-01-01T10:00:00+00:00",
            "",
            id="the first true Complete or Failed condition, in order",
        ),
        pytest.param(
            with_conditions(condition("Complete", at=None)),
            None,
            "unable to find the time when the Job default/foobar finished",
            id="no lastTransitionTime",
        ),
        pytest.param(
            with_conditions(condition("Complete", at="yesterday")),
            None,
            "unable to find the time when the Job default/foobar finished",
            id="an unreadable lastTransitionTime",
        ),
        pytest.param(
            with_conditions(condition("Complete", status="False")),
            None,
            "unable to find the status of the finished Job default/foobar",
            id="not finished",
        ),
    ],
)
def test_job_finish_time(job: Any, finished_at: str | None, error: str) -> None:
    if error:
        with pytest.raises(NotCleanable, match=error):
            job_finish_time(job)
        return
    assert job_finish_time(job).isoformat() == finished_at


def test_completion_time_is_not_the_finish_time() -> None:
    """Upstream reads the condition only, not status.completionTime."""
    job = with_conditions(condition("Complete", at="2026-01-01T11:00:00Z"))
    job["status"]["completionTime"] = "2026-01-01T08:00:00Z"
    assert job_finish_time(job).isoformat() == "2026-01-01T11:00:00+00:00"


@pytest.mark.parametrize(
    ("job", "finished", "cleanup"),
    [
        pytest.param(new_job(ttl=10), False, False, id="not finished, TTL"),
        pytest.param(new_job(NOW), True, False, id="complete, no TTL"),
        pytest.param(new_job(NOW, ttl=10), True, True, id="complete, TTL"),
        pytest.param(new_job(NOW, ttl=0), True, True, id="complete, TTL 0"),
        pytest.param(new_job(failed_time=NOW, ttl=10), True, True, id="failed, TTL"),
        pytest.param(
            with_conditions(condition("Complete", status="False")),
            False,
            False,
            id="Complete False",
        ),
        pytest.param(
            with_conditions(condition("Failed", status="Unknown")),
            False,
            False,
            id="Failed Unknown",
        ),
        pytest.param(
            with_conditions(condition("FailureTarget"), condition("SuccessCriteriaMet")),
            False,
            False,
            id="interim conditions only",
        ),
        pytest.param(
            with_conditions(condition("Suspended")),
            False,
            False,
            id="suspended",
        ),
    ],
)
def test_needs_cleanup(job: Any, finished: bool, cleanup: bool) -> None:
    assert is_job_finished(job) is finished
    assert needs_cleanup(job) is cleanup
