"""bench/jobs's tables, result points and plot: medians per side, ratios kcontrol/KCM."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from bench.jobs._report import dump, load, medians, raw_table, report, results_points
from bench.jobs._run import Run


def run(
    impl: str,
    index: int,
    wall: float,
    writes: int,
    *,
    rss_mb: float = 100.0,
    limit: str = "20:30",
    completed: bool = True,
) -> Run:
    return Run(
        size="10x4x2",
        limit=limit,
        impl=impl,
        index=index,
        started="10:00:00",
        load=1.0,
        start_cpu=0.5,
        peak_rss_kb=int(rss_mb * 1024),
        wall=wall,
        p50=wall / 2,
        completed=completed,
        cpu=wall / 10,
        plane_cpu=wall,
        writes={"POST pods": 40, "PUT batch/jobs/status": writes - 40},
        errors={"PUT batch/jobs/status 409": 1} if impl == "kcontrol" else {},
        succeeded=40,
    )


RUNS = [
    run("kcm", 0, 10.0, 200, rss_mb=80),
    run("kcm", 1, 30.0, 220, rss_mb=80),
    run("kcm", 2, 20.0, 210, rss_mb=80),
    run("kcontrol", 0, 21.0, 230, rss_mb=100),
    run("kcontrol", 1, 23.0, 250, rss_mb=140, completed=False),
]


def test_medians() -> None:
    m = medians([r for r in RUNS if r.impl == "kcm"])
    assert (m["runs"], m["wall"], m["cpu"], m["writes"], m["rss"]) == (3, 20.0, 2.0, 21.0, 80.0)
    k = medians([r for r in RUNS if r.impl == "kcontrol"])
    assert (k["wall"], k["writes"], k["errors"], k["completed"]) == (22.0, 24.0, 0.1, 1)
    assert math.isnan(medians([])["wall"])


def test_points_are_medians_per_side_and_limit() -> None:
    points = {(p["implementation"], p["client_limit"]): p for p in results_points(RUNS)}
    assert set(points) == {("KCM", "20:30"), ("kcontrol", "20:30")}
    kcm = points[("KCM", "20:30")]
    assert (kcm["jobs"], kcm["completions"], kcm["parallelism"], kcm["pods"]) == (10, 4, 2, 40)
    assert (kcm["qps"], kcm["burst"], kcm["runs"], kcm["completed_runs"]) == (20.0, 30, 3, 3)
    assert (kcm["wall_seconds"], kcm["writes_per_job"], kcm["peak_rss_mb"]) == (20.0, 21.0, 80.0)
    assert kcm["writes_per_job_by_key"] == {"POST pods": 4.0, "PUT batch/jobs/status": 17.0}
    ours = points[("kcontrol", "20:30")]
    assert (ours["completed_runs"], ours["wall_seconds"], ours["peak_rss_mb"]) == (1, 22.0, 120.0)


def test_unthrottled_points_have_no_limit() -> None:
    point = results_points([run("kcm", 0, 5.0, 100, limit="unthrottled")])[0]
    assert (point["qps"], point["burst"]) == (None, None)


def test_report_ratios_and_targets() -> None:
    text = report(RUNS)
    # time 22/20 = 1.10 (> 1.05), CPU 2.2/2.0, writes 24/21 = 1.14, RSS 120/80 = 1.50
    assert "| 10x4x2 | 20:30 | 3+2 | 20.0 | 22.0 | 1.10 | 2.00 | 2.20 | 1.10 " in text
    assert "| 21.00 | 24.00 | 1.14 | 80 | 120 | 1.50 |" in text
    assert "| 10x4x2 | 20:30 | 1.10 (missed) | 1.14 (missed) | 1.10 (met) | 1.50 (met) |" in text
    assert "| PUT batch/jobs/status | 17.00 | 20.00 |" in text
    assert "| non-2xx | 0.00 | 0.10 |" in text


def test_report_with_one_side_only() -> None:
    text = report([r for r in RUNS if r.impl == "kcm"])
    assert "| 10x4x2 | 20:30 | 3+0 | 20.0 | - | - |" in text
    assert "| 10x4x2 | 20:30 | - | - | - | - |" in text


def test_raw_table_marks_timeouts() -> None:
    text = raw_table(RUNS)
    assert "| 23.0 (TIMED OUT) |" in text
    assert text.count("(TIMED OUT)") == 1


def test_dump_and_load(tmp_path: Path) -> None:
    path = tmp_path / "runs.json"
    dump(path, RUNS)
    assert load(path) == RUNS


def test_plot(tmp_path: Path) -> None:
    from bench.report import plot_jobs  # noqa: PLC0415 - matplotlib only here

    doc = {
        "measured": {"date": "2026-11-25"},
        "machine": {"cpus": 2, "python": "3.11.7", "load_average": [1.0, 2.0]},
        "parameters": {"pod_seconds": 1.0},
        "points": results_points([*RUNS, run("kcm", 0, 5.0, 100, limit="unthrottled")]),
    }
    written = plot_jobs(doc, tmp_path)
    assert written == [tmp_path / "jobs.png"]
    assert written[0].read_bytes()[:4] == b"\x89PNG"


def test_sync_timings() -> None:
    timed = [
        dataclasses.replace(
            r,
            timings={
                "sync_count": 10.0 * (i + 1),
                "sync_sum": 0.5 * (i + 1),  # 50 ms a sync
                "queue_wait_count": 4.0,
                "queue_wait_sum": 0.4 * (i + 1),  # 100, 200, 300 ms
            },
        )
        for i, r in enumerate(RUNS[:3])
    ]
    m = medians(timed)
    assert (m["syncs"], m["sync_ms"], m["wait_ms"]) == (20.0, 50.0, 200.0)
    assert "| KCM | 10.0 | 0.0 | 0.50 | 20 | 50.0 | 200.0 |" in report(timed)
    point = results_points(timed)[0]
    assert (point["job_syncs"], point["mean_sync_ms"]) == (20.0, 50.0)
    assert math.isnan(medians(RUNS)["sync_ms"])  # runs without the controller's metrics


def test_target_shows_a_third_decimal_when_rounding_hides_a_miss() -> None:
    runs = [run("kcm", 0, 20.0, 200), run("kcontrol", 0, 21.02, 200)]  # 1.051x
    assert "| 10x4x2 | 20:30 | 1.051 (missed) | 1.00 (met) |" in report(runs)


def test_two_pod_timings_are_cells_of_their_own_with_whole_run_cpu() -> None:
    instant = [
        dataclasses.replace(r, ready_delay=0.0, wall=r.wall / 2, total_cpu=r.cpu + 1.0)
        for r in RUNS
    ]
    text = report(RUNS + instant)
    rows = [line for line in text.splitlines() if line.startswith("| 10x4x2 | 20:30 | ")]
    assert any(line.startswith("| 10x4x2 | 20:30 | 1 s | 3+2 | 20.0 | 22.0 |") for line in rows)
    assert any(line.startswith("| 10x4x2 | 20:30 | at once | 3+2 | 10.0 | 11.0 |") for line in rows)
    # Whole-run CPU: recorded (run CPU + 1 s here) where measured; start + run, marked, where not.
    assert "| 3.00 | 3.20 | 1.07 " in text
    assert "| 2.50* | 2.70* | 1.08 " in text
    points = results_points(RUNS + instant)
    delays = {(p["implementation"], p["pod_ready_delay_seconds"]) for p in points}
    assert delays == {("KCM", 1.0), ("kcontrol", 1.0), ("KCM", 0.0), ("kcontrol", 0.0)}


def test_one_timing_keeps_the_tables_as_they_were() -> None:
    assert "pods Ready" not in report(RUNS).split("## ")[1]
