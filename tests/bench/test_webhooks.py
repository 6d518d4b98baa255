"""bench/webhooks: the load's checks (a fake client), the tables, result points and targets,
the line counts; and both sides measured at a tiny size on envtest."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from bench.webhooks.__main__ import webhook_lines
from bench.webhooks._report import (
    TARGETS,
    dump,
    load,
    raw_table,
    report,
    results_points,
    verdict,
)
from bench.webhooks._run import Latency, Run, _load, is_valid, run_once, website
from bench.webhooks._sides import IMPLEMENTATIONS, KCONTROL, KOPF
from kcontrol.errors import ApiError, InternalError, Invalid


class FakeWebhooks:
    """A client whose creates behave as the API server with webhooks of some quality."""

    def __init__(self, *, defaults: bool = True, denies: bool = True, fail: int = 0) -> None:
        self.defaults, self.denies, self.fail = defaults, denies, fail

    async def create(self, resource: Any, obj: dict[str, Any], *, namespace: str) -> Any:
        if self.fail:
            self.fail -= 1
            raise InternalError('failed calling webhook "v": broken pipe')
        if self.denies and ":" not in obj["spec"]["image"].rsplit("/", 1)[-1]:
            raise Invalid('admission webhook "v" denied the request: the Website is invalid')
        stored = {**obj, "spec": dict(obj["spec"])}
        if self.defaults:
            stored["spec"].setdefault("replicas", 1)
        return stored


def test_a_quarter_of_the_load_is_invalid() -> None:
    assert [is_valid(i) for i in range(8)] == [True, True, True, False] * 2
    assert website("a", valid=True)["spec"] == {"image": "registry.example/web:1"}
    assert "replicas" not in website("a", valid=False)["spec"]


async def test_working_webhooks_pass_the_checks() -> None:
    run = Run(KCONTROL, 8, 0, "00:00:00", 0.0)
    assert await _load(FakeWebhooks(), 8, run) == []  # type: ignore[arg-type]
    assert (run.allowed, run.denied, run.errors) == (6, 2, 0)
    assert run.client_p50 <= run.client_p99


@pytest.mark.parametrize(
    ("name", "client", "problem"),
    [
        ("no defaulter", FakeWebhooks(defaults=False), "not defaulted"),
        ("no validator", FakeWebhooks(denies=False), "unpinned image was allowed"),
    ],
)
async def test_webhooks_that_did_not_run_are_problems(
    name: str, client: FakeWebhooks, problem: str
) -> None:
    problems = await _load(client, 8, Run(KOPF, 8, 0, "00:00:00", 0.0))  # type: ignore[arg-type]
    assert problems, name
    assert all(problem in p for p in problems), problems


async def test_failed_calls_are_counted_not_raised() -> None:
    run = Run(KCONTROL, 8, 0, "00:00:00", 0.0)
    assert await _load(FakeWebhooks(fail=3), 8, run) == []  # type: ignore[arg-type]
    assert run.errors == 3 and len(run.failed) == 3
    assert "broken pipe" in run.error_sample
    assert run.allowed + run.denied == 5


def fake_run(side: str, index: int, *, cpu: float, p99: float, errors: int = 0) -> Run:
    latency = {
        kind: Latency(calls=200, p50=p99 / 4, p99=p99, mean=p99 / 3)
        for kind in ("mutating", "validating")
    }
    return Run(
        side,
        200,
        index,
        "00:00:00",
        0.5,
        ready_seconds=2.0,
        wall=0.4,
        cpu=cpu,
        plane_cpu=0.3,
        client_p50=0.1,
        client_p99=0.2,
        allowed=150,
        denied=50 - errors,
        errors=errors,
        latency=latency,
    )


RUNS = [
    fake_run(KCONTROL, 0, cpu=0.1, p99=0.05),
    fake_run(KOPF, 0, cpu=0.4, p99=0.2),
    fake_run(KOPF, 1, cpu=0.6, p99=0.4, errors=2),
    fake_run(KCONTROL, 1, cpu=0.3, p99=0.15),
]


def test_verdict_is_kcontrol_over_kopf_at_the_largest_size() -> None:
    got = verdict(RUNS, {KCONTROL: 30, KOPF: 28})
    assert got["cpu"] == pytest.approx(0.2 / 0.5)
    assert got["p99"] == pytest.approx(0.1 / 0.3)
    assert got["lines"] == pytest.approx(30 / 28)
    assert set(got) == set(TARGETS)


def test_report_raw_table_and_points() -> None:
    tables = report(RUNS, {KCONTROL: 30, KOPF: 28})
    assert "| lines | 30 | 28 | 1.07 | <= 1.0 |" in tables
    assert "| 200 | mutating | 2+2 | 25.0 | 75.0 | 100.0 | 300.0 | 0.33 |" in tables
    assert "| CPU <= 0.5x | 0.40 | met |" in tables
    assert "| lines <= 1.0x | 1.07 | not met |" in tables
    assert "200 kopf: 2" in tables  # the failed creates are called out
    raw = raw_table(RUNS)
    assert raw.count("\n| 200 |") == 4
    points = results_points(RUNS, {KCONTROL: 30, KOPF: 28})
    assert [(p["implementation"], p["creates"]) for p in points] == [
        (KCONTROL, 200),
        (KOPF, 200),
    ]
    assert points[0]["cpu_seconds"] == pytest.approx(0.2)
    assert points[1]["errors"] == 1
    assert math.isclose(points[0]["validating_p99_seconds"], 0.1)


def test_dump_and_load_round_trip(tmp_path: Path) -> None:
    dump(tmp_path / "runs.json", RUNS)
    assert load(tmp_path / "runs.json") == RUNS


def test_both_sources_are_counted() -> None:
    lines = webhook_lines()
    assert set(lines) == set(IMPLEMENTATIONS)
    assert all(20 < n < 80 for n in lines.values()), lines


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("side", [KCONTROL, KOPF])
async def test_each_side_is_measured_on_envtest(side: str) -> None:
    run = await run_once(IMPLEMENTATIONS[side], 8, 0)
    assert (run.allowed, run.denied) == (6, 2), run
    for kind in ("mutating", "validating"):
        assert run.latency[kind].calls >= 8
        assert run.latency[kind].mean > 0
    assert run.cpu >= 0 and run.wall > 0


def test_api_errors_are_what_the_checks_read() -> None:
    error = Invalid("admission webhook denied the request")
    assert isinstance(error, ApiError) and error.code == 422
