"""The jobs benchmark's tables (Markdown) and result points (bench/_results.py).

Every figure is the median over a side's runs at one cell - size, client limit and pod
timing (kwok's start -> Ready delay) - ; a ratio is kcontrol's median over KCM's ("-" when
either side was not measured). Writes per Job are a run's writes by the controller / N. The
tables name the timing only when a run's is not the default (1 s), so tables of runs from
before it was a cell read as they did.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._results import dump_runs as dump
from bench._tables import cell, median, ratio, ratio_value, ready_label
from bench.jobs._audit import KCM, KCONTROL
from bench.jobs._run import DEFAULT_READY_DELAY, IMPLS, Run
from bench.jobs._workload import Size
from bench.rollout import Limit

__all__ = [
    "IMPL_NAMES",
    "TARGETS",
    "dump",
    "load",
    "medians",
    "raw_table",
    "report",
    "requests_table",
    "results_points",
    "whole_run_cpu",
]

TARGETS = {"wall": 1.05, "writes": 1.0, "cpu": 1.5, "rss": 1.5}
"""Issue 21's targets for the ratios kcontrol/KCM at equal client limits: at most these."""
TARGET_NAMES = {
    "wall": "time until all Jobs complete",
    "writes": "API writes per Job",
    "cpu": "controller CPU-seconds",
    "rss": "peak RSS",
}
IMPL_NAMES = {KCM: "KCM", KCONTROL: "kcontrol"}
"""Implementation names in the results file, as the tables and the plots name them."""


def _size_key(label: str) -> tuple[int, int, int]:
    size = Size.parse(label)
    return size.jobs, size.completions, size.parallelism


Cell = tuple[str, str, float]
"""A cell of the matrix: size, client limit, kwok's start -> Ready seconds."""


def groups(runs: list[Run]) -> dict[Cell, dict[str, list[Run]]]:
    """Runs by cell, then by side; sizes in increasing order, at each size the longer ready
    delay first, then the limits as measured."""
    out: dict[Cell, dict[str, list[Run]]] = {}
    for r in sorted(runs, key=lambda r: (_size_key(r.size), -r.ready_delay)):
        out.setdefault((r.size, r.limit, r.ready_delay), {}).setdefault(r.impl, []).append(r)
    return out


def _timed(runs: list[Run]) -> bool:
    """Whether the tables name the cells' timing: some run's is not the default."""
    return any(r.ready_delay != DEFAULT_READY_DELAY for r in runs)


def whole_run_cpu(run: Run) -> tuple[float, bool]:
    """The controller process's CPU-seconds from exec to the end of the run, and whether it
    was measured: runs from before :attr:`Run.total_cpu` was recorded give ``start_cpu +
    cpu``, which leaves out the idle controller between those two windows (while the
    benchmark's own Job informer syncs and the apiserver's metrics are scraped)."""
    if run.total_cpu < 0:
        return run.start_cpu + run.cpu, False
    return run.total_cpu, True


def medians(runs: list[Run]) -> dict[str, float]:
    """One side's medians at one size and limit (NaN where it has no run)."""
    n = Size.parse(runs[0].size).jobs if runs else 1
    return {
        "runs": float(len(runs)),
        "completed": float(sum(r.completed for r in runs)),
        "wall": median([r.wall for r in runs]),
        "p50": median([r.p50 for r in runs]),
        "cpu": median([r.cpu for r in runs]),
        "total_cpu": median([whole_run_cpu(r)[0] for r in runs]),
        "total_cpu_derived": float(sum(not whole_run_cpu(r)[1] for r in runs)),
        "plane": median([r.plane_cpu for r in runs]),
        "writes": median([sum(r.writes.values()) / n for r in runs]),
        "errors": median([sum(r.errors.values()) / n for r in runs]),
        "rss": median([r.peak_rss_kb / 1024 for r in runs]),
        "start_cpu": median([r.start_cpu for r in runs]),
        "lag": median([r.lag for r in runs]),
        "syncs": median([r.timings.get("sync_count", math.nan) for r in runs]),
        "sync_ms": median([_mean_ms(r.timings, "sync") for r in runs]),
        "wait_ms": median([_mean_ms(r.timings, "queue_wait") for r in runs]),
    }


def _mean_ms(timings: dict[str, float], name: str) -> float:
    """Milliseconds per observation of a histogram in :attr:`Run.timings` (NaN: none)."""
    count = timings.get(f"{name}_count", 0.0)
    return 1000 * timings.get(f"{name}_sum", 0.0) / count if count else math.nan


def report(runs: list[Run]) -> str:
    """The findings: medians and ratios per cell, the targets, writes by key."""
    timed = _timed(runs)
    head = "| N x M x P | client limit | " + ("pods Ready | " if timed else "")
    rule = "|---|---|" + ("---|" if timed else "")

    def lead(size: str, limit: str, delay: float) -> str:
        return f"| {size} | {limit} | " + (f"{ready_label(delay)} | " if timed else "")

    out = ["## Medians (kcontrol/KCM ratios of the medians)\n"]
    if timed:
        out.append(
            "pods Ready: kwok's delay from a pod's start to Ready (`--pod-ready-delay`), each "
            "timing on a cluster of its own.\n"
        )
    out.append(
        head + "runs KCM+kcontrol | KCM s | kcontrol s | ratio "
        "| KCM CPU s | kcontrol CPU s | ratio "
        "| KCM whole-run CPU s | kcontrol whole-run CPU s | ratio "
        "| KCM writes/Job | kcontrol writes/Job | ratio "
        "| KCM peak RSS MB | kcontrol peak RSS MB | ratio | apiserver+etcd CPU s KCM / kcontrol |"
    )
    out.append(rule + "--:|" * 17)
    table = {key: {i: medians(by.get(i, [])) for i in IMPLS} for key, by in groups(runs).items()}
    derived = False
    for (size, limit, delay), m in table.items():
        k, c = m[KCM], m[KCONTROL]
        marks = ["*" if s["total_cpu_derived"] else "" for s in (k, c)]
        derived = derived or any(marks)
        out.append(
            f"{lead(size, limit, delay)}{k['runs']:.0f}+{c['runs']:.0f} "
            f"| {cell(k['wall'], 1)} | {cell(c['wall'], 1)} | {ratio(c['wall'], k['wall'])} "
            f"| {cell(k['cpu'])} | {cell(c['cpu'])} | {ratio(c['cpu'], k['cpu'])} "
            f"| {cell(k['total_cpu'])}{marks[0]} | {cell(c['total_cpu'])}{marks[1]} "
            f"| {ratio(c['total_cpu'], k['total_cpu'])} "
            f"| {cell(k['writes'])} | {cell(c['writes'])} | {ratio(c['writes'], k['writes'])} "
            f"| {cell(k['rss'], 0)} | {cell(c['rss'], 0)} | {ratio(c['rss'], k['rss'])} "
            f"| {cell(k['plane'], 1)} / {cell(c['plane'], 1)} |"
        )
    out.append("")
    out.append(
        "CPU: the controller process's CPU-seconds over the run (first POST to the end of its "
        "quiet tail); whole-run: from its exec to the same end (start-up, cache sync and the 2 "
        "idle seconds included, as a CPU counter from outside the process sees it)."
        + (
            " * start CPU + run CPU: runs from before whole-run CPU was recorded, a little "
            "under it (the idle controller between the two windows, while the benchmark's own "
            "Job informer synced, is left out)."
            if derived
            else ""
        )
        + "\n"
    )
    out.append(
        "## Issue 21's targets (kcontrol/KCM at equal client limits)\n\n"
        + ", ".join(f"{TARGET_NAMES[t]} <= {v:g}x" for t, v in TARGETS.items())
        + ".\n"
    )
    out.append(head + " | ".join(TARGET_NAMES.values()) + " |")
    out.append(rule + "---|" * len(TARGETS))
    for (size, limit, delay), m in table.items():
        cells = []
        for target, bound in TARGETS.items():
            value = ratio_value(m[KCONTROL][target], m[KCM][target])
            if math.isnan(value):
                cells.append("-")
            else:
                # a third decimal where two would hide which side of the target it is on
                digits = 3 if (round(value, 2) <= bound) != (value <= bound) else 2
                cells.append(f"{value:.{digits}f} ({'met' if value <= bound else 'missed'})")
        out.append(lead(size, limit, delay) + " | ".join(cells) + " |")
    out.append("")
    out.append(
        "p50: the median Job's finish time; lag: the controller's last write after the last "
        "Job finished (events, mostly); syncs, mean sync and mean queue wait: the "
        "controller's own `job_controller_job_sync_duration_seconds` and the `job` queue's "
        "`workqueue_queue_duration_seconds` (medians over runs of each run's count or mean).\n"
    )
    out.append(
        head + "side | p50 Job s | lag s | start CPU s | Job syncs "
        "| mean sync ms | mean queue wait ms |"
    )
    out.append(rule + "---|--:|--:|--:|--:|--:|--:|")
    for (size, limit, delay), m in table.items():
        for impl in IMPLS:
            s = m[impl]
            if s["runs"]:
                out.append(
                    f"{lead(size, limit, delay)}{IMPL_NAMES[impl]} | {cell(s['p50'], 1)} "
                    f"| {cell(s['lag'], 1)} | {cell(s['start_cpu'])} | {cell(s['syncs'], 0)} "
                    f"| {cell(s['sync_ms'], 1)} | {cell(s['wait_ms'], 1)} |"
                )
    out.append("")

    out.append("## The controllers' API writes per Job by verb and resource (medians)\n")
    for (size, limit, delay), by in groups(runs).items():
        n = Size.parse(size).jobs
        keys = sorted({k for rs in by.values() for r in rs for k in r.writes})
        timing = f", pods Ready {ready_label(delay)}" if timed else ""
        out.append(f"{size}, client limit {limit}{timing}:\n")
        out.append("| verb resource | KCM | kcontrol |")
        out.append("|---|--:|--:|")
        for key in [*keys, "total", "non-2xx"]:
            cells = []
            for impl in IMPLS:
                values = []
                for r in by.get(impl, []):
                    if key == "total":
                        values.append(sum(r.writes.values()) / n)
                    elif key == "non-2xx":
                        values.append(sum(r.errors.values()) / n)
                    else:
                        values.append(r.writes.get(key, 0) / n)
                cells.append(cell(median(values)))
            out.append(f"| {key} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def raw_table(runs: list[Run]) -> str:
    timed = _timed(runs)
    out = [
        "| N x M x P | limit | " + ("pods Ready | " if timed else "") + "side | run "
        "| started UTC | load | wall s | p50 s | lag s | CPU s "
        "| apiserver+etcd CPU s | writes | non-2xx | succeeded / failed pods | other writers "
        "| all writers (metrics / audit) | peak RSS MB | start CPU s | whole-run CPU s |",
        "|---|---|" + ("---|" if timed else "") + "---|--:|---|--:|--:|--:|--:|--:|--:|--:|---"
        "|---|---|---|--:|--:|--:|",
    ]
    for r in runs:
        others = ", ".join(f"{w} {c}" for w, c in sorted(r.others.items(), key=lambda x: -x[1]))
        errors = ", ".join(f"{k} x{c}" for k, c in sorted(r.errors.items())) or "0"
        timing = f"{ready_label(r.ready_delay)} | " if timed else ""
        out.append(
            f"| {r.size} | {r.limit} | {timing}{r.impl} | {r.index} | {r.started} | {r.load:.2f} "
            f"| {r.wall:.1f}{'' if r.completed else ' (TIMED OUT)'} | {r.p50:.1f} | {r.lag:.1f} "
            f"| {r.cpu:.2f} | {r.plane_cpu:.1f} | {sum(r.writes.values())} | {errors} "
            f"| {r.succeeded} / {r.failed} | {others} | {r.metric_writes} / {r.audit_writes} "
            f"| {r.peak_rss_kb / 1024:.0f} | {r.start_cpu:.2f} "
            f"| {cell(r.total_cpu) if r.total_cpu >= 0 else '-'} |"
        )
    label = (lambda r: f"{r.size}, Ready {ready_label(r.ready_delay)}") if timed else None
    out += requests_table(runs, "N x M x P", label)
    return "\n".join(out)


def requests_table(
    runs: list[Any], size_header: str, label: Callable[[Any], str] | None = None
) -> list[str]:
    """The lines that follow a controller suite's raw runs (bench/jobs's, bench/sets's): the
    requests each run's controller sent, by method, the events it dropped, then the runs'
    notes; ``size_header`` heads the column of the runs' sizes, ``label`` names a run's
    size there (default: its ``size``)."""
    name = label or (lambda r: str(r.size))
    out = [
        "",
        "Requests the controller process's own client sent over its whole life (its "
        "`rest_client_requests_total`, start-up included), and the events kcontrol's "
        "recorder dropped (`kcontrol_events_dropped_total`; KCM has no such counter):",
        "",
        f"| {size_header} | limit | side | run | requests by method | events dropped |",
        "|---|---|---|--:|---|--:|",
    ]
    for r in runs:
        if r.requests:
            methods = ", ".join(f"{m} {c}" for m, c in sorted(r.requests.items()))
            dropped = "-" if r.events_dropped < 0 else str(r.events_dropped)
            out.append(f"| {name(r)} | {r.limit} | {r.impl} | {r.index} | {methods} | {dropped} |")
    notes = [f"{name(r)} {r.limit} {r.impl} {r.index}: {r.note}" for r in runs if r.note]
    if notes:
        out += ["", "Notes: " + "; ".join(notes)]
    return out


def results_points(runs: list[Run]) -> list[dict[str, Any]]:
    """One point per (size, client limit, pod timing, implementation): the medians over its
    runs."""
    points = []
    for (size, limit, delay), by in groups(runs).items():
        parsed, bound = Size.parse(size), Limit.parse(limit)
        for impl in IMPLS:
            rs = by.get(impl, [])
            if not rs:
                continue
            m = medians(rs)
            keys = sorted({k for r in rs for k in r.writes})
            dropped = [float(r.events_dropped) for r in rs if r.events_dropped >= 0]
            points.append(
                {
                    "implementation": IMPL_NAMES[impl],
                    "size": size,
                    "jobs": parsed.jobs,
                    "completions": parsed.completions,
                    "parallelism": parsed.parallelism,
                    "pods": parsed.pods,
                    "client_limit": limit,
                    "qps": bound.qps,
                    "burst": bound.burst if bound.qps is not None else None,
                    "pod_ready_delay_seconds": delay,
                    "runs": len(rs),
                    "completed_runs": sum(r.completed for r in rs),
                    "wall_seconds": m["wall"],
                    "p50_seconds": m["p50"],
                    "lag_seconds": m["lag"],
                    "cpu_seconds": m["cpu"],
                    "process_cpu_seconds": m["total_cpu"],
                    "process_cpu_runs_from_start_plus_run": int(m["total_cpu_derived"]),
                    "apiserver_etcd_cpu_seconds": m["plane"],
                    "writes_per_job": m["writes"],
                    "writes_per_job_by_key": {
                        k: median([r.writes.get(k, 0) / parsed.jobs for r in rs]) for k in keys
                    },
                    "non_2xx_per_job": m["errors"],
                    "peak_rss_mb": m["rss"],
                    "start_cpu_seconds": m["start_cpu"],
                    "events_dropped": median(dropped) if dropped else None,
                    "job_syncs": m["syncs"],
                    "mean_sync_ms": m["sync_ms"],
                    "mean_queue_wait_ms": m["wait_ms"],
                }
            )
    return points


def load(path: str | Path) -> list[Run]:
    """The runs of a :func:`dump` file, or of a results file (``--json``: its ``runs``).
    Runs from before the pod timing was a cell take the results file's
    ``pod_ready_delay_seconds`` (1 s in a dump)."""
    document = json.loads(Path(path).read_text())
    raws: list[dict[str, Any]]
    if isinstance(document, dict):
        raws = document["runs"]
        delay = document.get("parameters", {}).get("pod_ready_delay_seconds")
    else:
        raws, delay = document, None
    default = DEFAULT_READY_DELAY if delay is None else float(delay)
    return [Run(**{"ready_delay": default, **raw}) for raw in raws]
