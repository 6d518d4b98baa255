"""Whether and how a Job finished (kcontrol_controllers.jobutil), which the Job, CronJob and
TTL-after-finished controllers share (upstream pkg/controller/job/util)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kcontrol_controllers.jobutil import (
    finished_condition,
    finished_condition_type,
    is_job_finished,
    is_job_succeeded,
)


def condition(kind: str, status: str = "True", at: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {"type": kind, "status": status}
    if at:
        found["lastTransitionTime"] = at
    return found


COMPLETE = condition("Complete", at="2026-01-01T11:00:00Z")
FAILED = condition("Failed", at="2026-01-01T12:00:00Z")


@dataclass(frozen=True)
class Case:
    name: str
    conditions: list[dict[str, Any]]
    finished: dict[str, Any] | None
    succeeded: bool


CASES = [
    Case("no conditions", [], None, False),
    Case("complete", [COMPLETE], COMPLETE, True),
    Case("failed", [FAILED], FAILED, False),
    Case("complete false", [condition("Complete", "False")], None, False),
    Case("failed unknown", [condition("Failed", "Unknown")], None, False),
    Case(
        "interim conditions only",
        [condition("FailureTarget"), condition("SuccessCriteriaMet")],
        None,
        False,
    ),
    Case("suspended", [condition("Suspended")], None, False),
    Case("after another condition", [condition("Suspended", "False"), COMPLETE], COMPLETE, True),
    Case("the first finished one", [FAILED, COMPLETE], FAILED, True),
    Case("a false one first", [condition("Complete", "False"), FAILED], FAILED, False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_finished(case: Case) -> None:
    job = {"status": {"conditions": case.conditions}}
    assert finished_condition(job) == case.finished
    assert finished_condition_type(job) == (case.finished or {}).get("type")
    assert is_job_finished(job) is (case.finished is not None)
    assert is_job_succeeded(job) is case.succeeded


@pytest.mark.parametrize("job", [{}, {"status": {}}, {"status": {"conditions": None}}])
def test_a_job_without_conditions_runs(job: dict[str, Any]) -> None:
    assert finished_condition(job) is None
    assert finished_condition_type(job) is None
    assert not is_job_finished(job)
    assert not is_job_succeeded(job)
