"""bench/rollout's pod timings (``--pod-ready-delay 1,0``): each a cell of the matrix, kept
apart in the tables and the results file; runs dumped before the timing was recorded load as
the 1 s they were made with."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from bench._cli import ready_delays
from bench.rollout import (
    KCM,
    KCONTROL,
    Phase,
    Run,
    load,
    report,
    results_points,
    worse_of_timings,
)


def _run(impl: str, index: int, delay: float, cpu: float) -> Run:
    return Run(
        "50x3",
        "unthrottled",
        impl,
        index,
        "10:00:00",
        0.5,
        phases={
            phase: Phase(wall=10.0, cpu=cpu, writes={"POST pods": 150})
            for phase in ("create", "update")
        },
        ready_delay=delay,
    )


def _runs() -> list[Run]:
    # Pods Ready at once cost kcontrol 3 CPU-seconds a phase, after 1 s 1: mixed together,
    # every median would be 2.
    return [
        _run(impl, index, delay, (3.0 if delay == 0 else 1.0) if impl == KCONTROL else 1.0)
        for delay in (1.0, 0.0)
        for index in range(2)
        for impl in (KCM, KCONTROL)
    ]


def test_the_timings_are_parsed_in_order_each_once() -> None:
    assert ready_delays("1,0") == [1.0, 0.0]
    assert ready_delays("0, 0,1.5") == [0.0, 1.5]
    for bad in ("", "-1", "1,-0.5"):
        with pytest.raises(SystemExit):
            ready_delays(bad)


def test_the_medians_keep_the_timings_apart() -> None:
    rows = [line for line in report(_runs()).splitlines() if line.startswith("| 50x3")]
    medians = [row for row in rows if "| 2+2 |" in row]  # the medians' rows (runs per side)
    assert len(medians) == 4
    after_1s = [row for row in medians if "| 1 s |" in row]
    at_once = [row for row in medians if "| at once |" in row]
    assert len(after_1s) == len(at_once) == 2
    assert all("| 1.00 | 1.00 | 1.00 |" in row for row in after_1s)
    assert all("| 1.00 | 3.00 | 3.00 |" in row for row in at_once)


def test_the_results_file_has_a_point_per_timing() -> None:
    points = results_points(_runs())
    cpu = {
        (p["implementation"], p["pod_ready_delay_seconds"], p["phase"]): p["cpu_seconds"]
        for p in points
    }
    assert len(points) == len(cpu) == 8
    assert cpu[("kcontrol", 0.0, "update")] == 3.0
    assert cpu[("kcontrol", 1.0, "update")] == 1.0
    assert cpu[("KCM", 0.0, "create")] == 1.0


def test_runs_dumped_before_the_timing_was_recorded_load_as_1_s(tmp_path: Path) -> None:
    old = dataclasses.asdict(_run(KCONTROL, 0, 0.0, 1.0))
    del old["ready_delay"]
    path = tmp_path / "dump.json"
    path.write_text(json.dumps([old]))
    (run,) = load(str(path))
    assert run.ready_delay == 1.0
    assert run.phases["update"].cpu == 1.0


def test_each_cell_quotes_the_worse_of_its_timings() -> None:
    runs = _runs()
    for run in runs:  # at once, kcontrol's peak RSS is the better one: 1 s must be quoted
        run.peak_rss_kb = 50 * 1024 if run.impl == KCONTROL and run.ready_delay == 0 else 80 * 1024
    rows = [line for line in worse_of_timings(runs) if line.startswith("| 50x3")]
    assert rows == [
        "| 50x3 | unthrottled | create | 1.00 (1 s) | 3.00 (at once) | 1.00 (1 s) |",
        "| 50x3 | unthrottled | update | 1.00 (1 s) | 3.00 (at once) | 1.00 (1 s) |",
        "| 50x3 | unthrottled | 1.00 (1 s) | - |",
    ]
