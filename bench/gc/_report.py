"""The garbage-collector benchmark's tables (Markdown) and result points (bench/_results.py).

Every figure is the median over a side's runs at one size and client limit; a ratio is
kcontrol's median over KCM's ("-" when either side was not measured). The number
formatting and the medians are bench/_tables.py's, the verdicts bench/sets's.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from bench._results import dump_runs as dump
from bench._results import load_runs
from bench._tables import cell, median, ratio, ratio_value
from bench.gc._measures import IMPLS, Phase, Run, Startup
from bench.jobs._audit import KCM, KCONTROL
from bench.jobs._report import IMPL_NAMES
from bench.rollout import Limit
from bench.sets._report import verdict

__all__ = [
    "TARGETS",
    "TARGET_NAMES",
    "dump",
    "groups",
    "load",
    "medians",
    "raw_table",
    "report",
    "results_points",
]

TARGETS = {
    "graph_seconds": 1.0,
    "graph_cpu": 1.2,
    "cascade_seconds": 1.0,
    "cascade_cpu": 1.2,
    "rss": 1.0,
}
"""The issue's targets for the ratios kcontrol/KCM at equal client limits: at most these."""
TARGET_NAMES = {
    "graph_seconds": "start-up time",
    "graph_cpu": "start-up CPU",
    "cascade_seconds": "cascade time",
    "cascade_cpu": "cascade CPU",
    "rss": "peak RSS",
}


def groups(runs: list[Run]) -> dict[tuple[str, str], dict[str, list[Run]]]:
    """Runs by (size, client limit), then by side, in the order first run."""
    out: dict[tuple[str, str], dict[str, list[Run]]] = {}
    for r in runs:
        out.setdefault((r.size, r.limit), {}).setdefault(r.impl, []).append(r)
    return out


def _writes(r: Run, deletes_only: bool = False) -> float:
    writes = r.cascade.writes
    if deletes_only:
        return float(sum(c for k, c in writes.items() if k.startswith("DELETE ")))
    return float(sum(writes.values()))


def medians(runs: list[Run]) -> dict[str, float]:
    """One side's medians at one size and limit (NaN where it has no run)."""
    return {
        "runs": float(len(runs)),
        "completed": float(sum(r.completed for r in runs)),
        "sync_seconds": median([r.startup.sync_seconds for r in runs]),
        "sync_cpu": median([r.startup.sync_cpu for r in runs]),
        "graph_seconds": median([r.startup.graph_seconds for r in runs]),
        "graph_cpu": median([r.startup.graph_cpu for r in runs]),
        "startup_rss": median([r.startup.rss_kb / 1024 for r in runs]),
        "startup_plane": median([r.startup.plane_cpu for r in runs]),
        "backlog": median([float(r.startup.backlog) for r in runs if r.startup.backlog >= 0]),
        "cascade_seconds": median([r.cascade.wall for r in runs]),
        "cascade_cpu": median([r.cascade.cpu for r in runs]),
        "cascade_plane": median([r.cascade.plane_cpu for r in runs]),
        "cascade_lag": median([r.cascade.lag for r in runs]),
        "writes": median([_writes(r) for r in runs]),
        "deletes": median([_writes(r, deletes_only=True) for r in runs]),
        "errors": median([float(sum(r.cascade.errors.values())) for r in runs]),
        "rss": median([r.peak_rss_kb / 1024 for r in runs]),
        "total_cpu": median([r.total_cpu for r in runs]),
        "work_count": median([r.timings.get("work_count", math.nan) for r in runs]),
        "work_ms": median(
            [
                1000 * r.timings["work_sum"] / r.timings["work_count"]
                if r.timings.get("work_count")
                else math.nan
                for r in runs
            ]
        ),
    }


def report(runs: list[Run]) -> str:
    """The findings: medians and ratios per size and limit, the targets, the writes."""
    table = {key: {i: medians(by.get(i, [])) for i in IMPLS} for key, by in groups(runs).items()}
    out = [
        "## Medians (kcontrol/KCM ratios of the medians)\n",
        "Size: start-up objects / kinds, owners x dependents. Start-up: from exec to the "
        "monitors' sync log line, and to the graph synced (its changes queue empty after "
        "every start-up object); CPU-seconds and RSS (VmHWM) at graph synced. Cascade: "
        "first owner DELETE until every dependent gone; the collector's CPU-seconds over it "
        "and its 2 s quiet tail. Peak RSS: VmHWM at the end of the run; whole-run CPU: from exec "
        "to then (start-up, the graph taking the cascade's objects, the cascade).\n",
        "| size | client limit | runs KCM+kcontrol | phase | figure | KCM | kcontrol | ratio |",
        "|---|---|--:|---|---|--:|--:|--:|",
    ]
    rows = (
        ("start-up", "monitors synced s", "sync_seconds", 1),
        ("start-up", "graph synced s", "graph_seconds", 1),
        ("start-up", "CPU s to monitors synced", "sync_cpu", 2),
        ("start-up", "CPU s to graph synced", "graph_cpu", 2),
        ("start-up", "RSS MB at graph synced", "startup_rss", 0),
        ("start-up", "apiserver+etcd CPU s", "startup_plane", 1),
        ("start-up", "graph events queued at monitors synced", "backlog", 0),
        ("cascade", "time s", "cascade_seconds", 1),
        ("cascade", "CPU s", "cascade_cpu", 2),
        ("cascade", "writes", "writes", 0),
        ("cascade", "of which DELETE", "deletes", 0),
        ("cascade", "non-2xx answers", "errors", 0),
        ("cascade", "apiserver+etcd CPU s", "cascade_plane", 1),
        ("cascade", "last write after done s", "cascade_lag", 1),
        ("run", "peak RSS MB", "rss", 0),
        ("run", "CPU s, exec to the end of the run", "total_cpu", 2),
        ("run", "attempt-to-delete items", "work_count", 0),
        ("run", "mean attempt-to-delete ms", "work_ms", 2),
    )
    for (size, limit), m in table.items():
        k, c = m[KCM], m[KCONTROL]
        for phase, name, key, digits in rows:
            out.append(
                f"| {size} | {limit} | {k['runs']:.0f}+{c['runs']:.0f} | {phase} | {name} "
                f"| {cell(k[key], digits)} | {cell(c[key], digits)} | {ratio(c[key], k[key])} |"
            )
    out.append("")
    out.append(
        "## The issue's targets (kcontrol/KCM at equal client limits)\n\n"
        + ", ".join(f"{TARGET_NAMES[t]} <= {v:g}x" for t, v in TARGETS.items())
        + ".\n"
    )
    out.append("| size | client limit | " + " | ".join(TARGET_NAMES.values()) + " |")
    out.append("|---|---|" + "---|" * len(TARGETS))
    for (size, limit), m in table.items():
        cells = [
            verdict(ratio_value(m[KCONTROL][t], m[KCM][t]), bound) for t, bound in TARGETS.items()
        ]
        out.append(f"| {size} | {limit} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("## The collectors' writes in the cascade by verb and resource (medians)\n")
    for (size, limit), by in groups(runs).items():
        keys = sorted({k for rs in by.values() for r in rs for k in r.cascade.writes})
        out.append(f"{size}, client limit {limit}:\n")
        out.append("| verb resource | KCM | kcontrol |")
        out.append("|---|--:|--:|")
        for key in keys:
            cells = [
                cell(median([float(r.cascade.writes.get(key, 0)) for r in by.get(i, [])]), 0)
                for i in IMPLS
            ]
            out.append(f"| {key} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def raw_table(runs: list[Run]) -> str:
    out = [
        "| size | limit | side | run | started UTC | load | monitors synced s | graph synced s "
        "| start-up CPU s | start-up RSS MB | cascade create s | cascade s | cascade CPU s "
        "| apiserver+etcd CPU s | writes | non-2xx | other writers "
        "| all writers (metrics / audit) | peak RSS MB | whole-run CPU s | verification |",
        "|---|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|---|--:|--:|---|",
    ]
    for r in runs:
        s, c = r.startup, r.cascade
        others = ", ".join(f"{w} {n}" for w, n in sorted(c.others.items(), key=lambda x: -x[1]))
        errors = ", ".join(f"{k} x{n}" for k, n in sorted(c.errors.items())) or "0"
        timed_out = " (its sync timed out)" if s.timed_out else ""
        out.append(
            f"| {r.size} | {r.limit} | {r.impl} | {r.index} | {r.started} | {r.load:.2f} "
            f"| {s.sync_seconds:.1f}{timed_out} | {s.graph_seconds:.1f} | {s.graph_cpu:.2f} "
            f"| {s.rss_kb / 1024:.0f} | {c.create_seconds:.1f} "
            f"| {c.wall:.1f}{'' if c.completed else ' (TIMED OUT)'} | {c.cpu:.2f} "
            f"| {c.plane_cpu:.1f} | {sum(c.writes.values())} | {errors} | {others} "
            f"| {c.metric_writes} / {c.audit_writes} | {r.peak_rss_kb / 1024:.0f} "
            f"| {cell(r.total_cpu)} | {'; '.join(r.problems) or 'ok'} |"
        )
    out.append("")
    out.append(
        "Requests the collector's own client sent over its whole life (its "
        "`rest_client_requests_total`, start-up included):"
    )
    out.append("")
    out.append("| size | limit | side | run | requests by method |")
    out.append("|---|---|---|--:|---|")
    for r in runs:
        if r.requests:
            methods = ", ".join(f"{m} {n}" for m, n in sorted(r.requests.items()))
            out.append(f"| {r.size} | {r.limit} | {r.impl} | {r.index} | {methods} |")
    return "\n".join(out)


def results_points(runs: list[Run]) -> list[dict[str, Any]]:
    """One point per (size, client limit, implementation): the medians over its runs."""
    points = []
    for (size, limit), by in groups(runs).items():
        bound = Limit.parse(limit)
        objects_kinds, _, cascade = size.partition(" ")
        objects, _, kinds = objects_kinds.partition("/")
        owners, _, dependents = cascade.partition("x")
        for impl in IMPLS:
            rs = by.get(impl, [])
            if not rs:
                continue
            m = medians(rs)
            points.append(
                {
                    "implementation": IMPL_NAMES[impl],
                    "size": size,
                    "objects": int(objects),
                    "kinds": int(kinds),
                    "owners": int(owners),
                    "dependents_per_owner": int(dependents),
                    "client_limit": limit,
                    "qps": bound.qps,
                    "burst": bound.burst if bound.qps is not None else None,
                    "runs": len(rs),
                    "verified_runs": sum(r.completed for r in rs),
                    "monitors_synced_seconds": m["sync_seconds"],
                    "monitors_synced_cpu_seconds": m["sync_cpu"],
                    "startup_seconds": m["graph_seconds"],
                    "startup_cpu_seconds": m["graph_cpu"],
                    "startup_rss_mb": m["startup_rss"],
                    "startup_apiserver_etcd_cpu_seconds": m["startup_plane"],
                    "graph_backlog_at_monitors_synced": m["backlog"],
                    "cascade_seconds": m["cascade_seconds"],
                    "cascade_cpu_seconds": m["cascade_cpu"],
                    "cascade_apiserver_etcd_cpu_seconds": m["cascade_plane"],
                    "cascade_writes": m["writes"],
                    "cascade_deletes": m["deletes"],
                    "cascade_non_2xx": m["errors"],
                    "peak_rss_mb": m["rss"],
                    "process_cpu_seconds": m["total_cpu"],
                    "cascade_writes_by_key": {
                        k: median([float(r.cascade.writes.get(k, 0)) for r in rs])
                        for k in sorted({k for r in rs for k in r.cascade.writes})
                    },
                }
            )
    return points


def load(path: str | Path) -> list[Run]:
    """The runs of a :func:`dump` file."""
    return load_runs(path, _run)


def _run(raw: dict[str, Any]) -> Run:
    startup = Startup(**raw.pop("startup"))
    cascade = Phase(**raw.pop("cascade"))
    return Run(**raw, startup=startup, cascade=cascade)
