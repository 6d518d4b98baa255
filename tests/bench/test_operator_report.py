"""bench/operator's tables and result points: medians per side, ratios kcontrol/kopf."""

from __future__ import annotations

import math
from pathlib import Path

from bench.operator._report import dump, load, report, results_points
from bench.operator._run import PHASES, Phase, Run


def run(side: str, index: int, wall: float, writes: int, *, completed: bool = True) -> Run:
    phases = {
        name: Phase(wall=wall, cpu=wall / 2, writes={"POST apps/deployments": writes})
        for name in PHASES
    }
    phases["recreate"].completed = completed
    return Run(side, 10, index, "10:00:00", 1.0, ready_seconds=1.0, phases=phases)


RUNS = [
    run("kopf", 0, 2.0, 40),
    run("kopf", 1, 4.0, 60),
    run("kopf", 2, 3.0, 50),
    run("kcontrol", 0, 1.0, 30),
    run("kcontrol", 1, 2.0, 20, completed=False),
]


def test_points_are_medians_per_side_and_phase() -> None:
    points = {(p["implementation"], p["phase"]): p for p in results_points(RUNS, {"kopf": 100})}
    kopf = points[("kopf", "create")]
    assert (kopf["runs"], kopf["wall_seconds"], kopf["cpu_seconds"], kopf["writes"]) == (
        3,
        3.0,
        1.5,
        50.0,
    )
    assert kopf["writes_per_website"] == 5.0
    assert kopf["writes_by_key"] == {"POST apps/deployments": 50.0}
    assert kopf["lines"] == 100
    assert points[("kcontrol", "create")]["wall_seconds"] == 1.5
    assert points[("kcontrol", "recreate")]["completed_runs"] == 1
    assert points[("kcontrol", "create")]["lines"] is None


def test_report_ratios() -> None:
    text = report(RUNS, {"kcontrol": 80, "kopf": 100})
    assert "| lines | 80 | 100 | 0.80 | <= 0.8 |" in text
    # create: kcontrol 1.5 s, 0.75 CPU s, 25 writes; kopf 3.0 s, 1.5 CPU s, 50 writes
    assert (
        "| 10 | create | 2+3 | 1.50 | 3.00 | 0.50 | 0.75 | 1.50 | 0.50 | 25 | 50 | 0.50 |" in text
    )
    # all four: only the kcontrol run that completed every phase counts (4 x 1.0 s)
    assert "| 10 | all four | 1+3 | 4.00 | 12.00 | 0.33 |" in text


def test_report_with_one_side_only() -> None:
    text = report([r for r in RUNS if r.implementation == "kopf"], {"kopf": 100})
    assert "| lines | - | 100 | - | <= 0.8 |" in text
    assert "| 10 | create | 0+3 | - | 3.00 | - |" in text


def test_dump_and_load_round_trip(tmp_path: Path) -> None:
    runs = [*RUNS, Run("kopf", 5, 3, "10:00:00", math.nan)]
    dump(tmp_path / "dump.json", runs)
    loaded = load(tmp_path / "dump.json")
    assert [repr(r) for r in loaded] == [repr(r) for r in runs]  # repr: nan == nan
    assert math.isnan(loaded[-1].load) and math.isnan(loaded[-1].ready_seconds)
