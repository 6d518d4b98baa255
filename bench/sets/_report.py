"""The sets benchmark's tables (Markdown) and result points (bench/_results.py).

Every figure is the median over a side's runs at one size and client limit; a ratio is
kcontrol's median over KCM's ("-" when either side was not measured). Times and CPU are both
phases' sums unless a phase is named; writes per set are a run's writes by the controller /
the number of sets. The number formatting and the medians are bench/_tables.py's.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from bench._results import dump_runs as dump
from bench._results import load_runs
from bench._tables import cell, median, ratio, ratio_value
from bench.jobs._audit import KCM, KCONTROL
from bench.jobs._report import IMPL_NAMES, requests_table
from bench.rollout import Limit, Phase
from bench.sets._reaction import Reactions
from bench.sets._run import IMPLS, PHASES, Run
from bench.sets._workload import KINDS, Size

__all__ = [
    "TARGETS",
    "TARGET_NAMES",
    "dump",
    "groups",
    "load",
    "medians",
    "ratio_digits",
    "raw_table",
    "reactions_table",
    "report",
    "results_points",
    "verdict",
]

TARGETS = {"wall": 1.0, "cpu": 1.0, "writes": 1.0, "rss": 0.7}
"""Issue 36's targets for the ratios kcontrol/KCM at equal client limits: at most these."""
TARGET_NAMES = {
    "wall": "time (create + re-template)",
    "cpu": "controller CPU-seconds",
    "writes": "API writes",
    "rss": "peak RSS",
}


def _size_key(label: str) -> tuple[int, int, int]:
    size = Size.parse(label)
    return KINDS.index(size.kind), size.pods, size.sets


def groups(runs: list[Run]) -> dict[tuple[str, str], dict[str, list[Run]]]:
    """Runs by (size, client limit), then by side; StatefulSets first, then by pods."""
    out: dict[tuple[str, str], dict[str, list[Run]]] = {}
    for r in sorted(runs, key=lambda r: _size_key(r.size)):
        out.setdefault((r.size, r.limit), {}).setdefault(r.impl, []).append(r)
    return out


def _mean_ms(timings: dict[str, float], name: str) -> float:
    count = timings.get(f"{name}_count", 0.0)
    return 1000 * timings.get(f"{name}_sum", 0.0) / count if count else math.nan


def _phase(r: Run, phase: str) -> Phase:
    return r.phases.get(phase) or Phase(wall=math.nan, p50=math.nan, cpu=math.nan)


def medians(runs: list[Run]) -> dict[str, float]:
    """One side's medians at one size and limit (NaN where it has no run)."""
    n = Size.parse(runs[0].size).sets if runs else 1
    m = {
        "runs": float(len(runs)),
        "completed": float(sum(r.completed for r in runs)),
        "wall": median([r.wall for r in runs]),
        "cpu": median([r.cpu for r in runs]),
        "plane": median([r.plane_cpu for r in runs]),
        "writes": median([sum(r.writes.values()) / n for r in runs]),
        "errors": median([sum(r.errors.values()) / n for r in runs]),
        "rss": median([r.peak_rss_kb / 1024 for r in runs]),
        "start_cpu": median([r.start_cpu for r in runs]),
        "work_count": median([r.timings.get("work_count", math.nan) for r in runs]),
        "work_ms": median([_mean_ms(r.timings, "work") for r in runs]),
        "wait_ms": median([_mean_ms(r.timings, "queue_wait") for r in runs]),
        "stale_skips": median([r.timings.get("stale_skips", math.nan) for r in runs]),
    }
    for phase in PHASES:
        m[f"{phase}_wall"] = median([_phase(r, phase).wall for r in runs])
        m[f"{phase}_p50"] = median([_phase(r, phase).p50 for r in runs])
        m[f"{phase}_lag"] = median([_phase(r, phase).lag for r in runs])
        m[f"{phase}_cpu"] = median([_phase(r, phase).cpu for r in runs])
        m[f"{phase}_writes"] = median([sum(_phase(r, phase).writes.values()) / n for r in runs])
    return m


def ratio_digits(value: float, bound: float) -> int:
    """Decimals to print a ratio with: two, more (up to five) while fewer would hide which
    side of the target it is on (1.0004 is ``1.0004``, not ``1.00``)."""
    digits = 2
    while digits < 5 and (round(value, digits) <= bound) != (value <= bound):
        digits += 1
    return digits


def verdict(value: float, bound: float) -> str:
    """``"0.93 (met)"``, ``"1.001 (missed)"`` (see :func:`ratio_digits`)."""
    if math.isnan(value):
        return "-"
    return f"{value:.{ratio_digits(value, bound)}f} ({'met' if value <= bound else 'missed'})"


def _what(size: str) -> str:
    s = Size.parse(size)
    if s.kind == "sts":
        return f"{s.sets} StatefulSets x {s.n}"
    return f"{s.sets} DaemonSets x {s.n} nodes"


def report(runs: list[Run]) -> str:
    """The findings: medians and ratios per size and limit, the targets, phases, writes."""
    table = {key: {i: medians(by.get(i, [])) for i in IMPLS} for key, by in groups(runs).items()}
    out = ["## Medians, both phases (kcontrol/KCM ratios of the medians)\n"]
    out.append(
        "| workload | client limit | runs KCM+kcontrol | KCM s | kcontrol s | ratio "
        "| KCM CPU s | kcontrol CPU s | ratio | KCM writes/set | kcontrol writes/set | ratio "
        "| KCM peak RSS MB | kcontrol peak RSS MB | ratio | apiserver+etcd CPU s KCM / kcontrol |"
    )
    out.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for (size, limit), m in table.items():
        k, c = m[KCM], m[KCONTROL]
        out.append(
            f"| {size} | {limit} | {k['runs']:.0f}+{c['runs']:.0f} "
            f"| {cell(k['wall'], 1)} | {cell(c['wall'], 1)} | {ratio(c['wall'], k['wall'])} "
            f"| {cell(k['cpu'])} | {cell(c['cpu'])} | {ratio(c['cpu'], k['cpu'])} "
            f"| {cell(k['writes'], 1)} | {cell(c['writes'], 1)} "
            f"| {ratio(c['writes'], k['writes'])} "
            f"| {cell(k['rss'], 0)} | {cell(c['rss'], 0)} | {ratio(c['rss'], k['rss'])} "
            f"| {cell(k['plane'], 1)} / {cell(c['plane'], 1)} |"
        )
    out.append("")
    out.append(
        "## Issue 36's targets (kcontrol/KCM at equal client limits)\n\n"
        + ", ".join(f"{TARGET_NAMES[t]} <= {v:g}x" for t, v in TARGETS.items())
        + ".\n"
    )
    out.append("| workload | client limit | " + " | ".join(TARGET_NAMES.values()) + " |")
    out.append("|---|---|" + "---|" * len(TARGETS))
    for (size, limit), m in table.items():
        cells = [
            verdict(ratio_value(m[KCONTROL][t], m[KCM][t]), bound) for t, bound in TARGETS.items()
        ]
        out.append(f"| {size} | {limit} | " + " | ".join(cells) + " |")
    out.append("")
    out.append(
        "## By phase\n\ncreate: every set POSTed until all are rolled out; retemplate: an "
        "annotation of every pod template changed until all are rolled out again. Seconds "
        "until the last set (p50: the median set), the controller's CPU-seconds and writes "
        "per set in the phase (its quiet tail included).\n"
    )
    out.append(
        "| workload | client limit | phase | KCM s | kcontrol s | ratio | KCM p50 s "
        "| kcontrol p50 s | KCM CPU s | kcontrol CPU s | ratio | KCM writes/set "
        "| kcontrol writes/set | ratio |"
    )
    out.append("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for (size, limit), m in table.items():
        k, c = m[KCM], m[KCONTROL]
        for phase in PHASES:
            w, p, u, x = (f"{phase}_{s}" for s in ("wall", "p50", "cpu", "writes"))
            out.append(
                f"| {size} | {limit} | {phase} | {cell(k[w], 1)} | {cell(c[w], 1)} "
                f"| {ratio(c[w], k[w])} | {cell(k[p], 1)} | {cell(c[p], 1)} "
                f"| {cell(k[u])} | {cell(c[u])} | {ratio(c[u], k[u])} "
                f"| {cell(k[x], 1)} | {cell(c[x], 1)} | {ratio(c[x], k[x])} |"
            )
    out.append("")
    out.append(
        "lag: the controller's last write after the last set rolled out (events, status); "
        "queue items, mean work and mean queue wait: the set queue's "
        "`workqueue_work_duration_seconds` and `workqueue_queue_duration_seconds` over the "
        "process's life; stale skips: syncs put off because the informers had not seen "
        "the controller's own writes (`*_stale_sync_skips_total`, both managers; - where "
        "the series never appeared: KCM v1.36.3 defines its StatefulSet controller's "
        "counter but never registers it, so KCM's StatefulSet skips are not known).\n"
    )
    out.append(
        "| workload | client limit | side | lag create / retemplate s | start CPU s "
        "| queue items | mean work ms | mean queue wait ms | stale skips |"
    )
    out.append("|---|---|---|--:|--:|--:|--:|--:|--:|")
    for (size, limit), m in table.items():
        for impl in IMPLS:
            s = m[impl]
            if s["runs"]:
                out.append(
                    f"| {size} | {limit} | {IMPL_NAMES[impl]} "
                    f"| {cell(s['create_lag'], 1)} / {cell(s['retemplate_lag'], 1)} "
                    f"| {cell(s['start_cpu'])} | {cell(s['work_count'], 0)} "
                    f"| {cell(s['work_ms'], 1)} | {cell(s['wait_ms'], 1)} "
                    f"| {cell(s['stale_skips'], 0)} |"
                )
    out.append("")
    out.extend(reactions_table(runs))

    out.append("## The controllers' API writes per set by verb and resource (medians)\n")
    for (size, limit), by in groups(runs).items():
        n = Size.parse(size).sets
        keys = sorted(
            {k for rs in by.values() for r in rs for p in r.phases.values() for k in p.writes}
        )
        out.append(f"{size} ({_what(size)}), client limit {limit}:\n")
        out.append(
            "| verb resource | KCM create | kcontrol create | KCM retemplate "
            "| kcontrol retemplate |"
        )
        out.append("|---|--:|--:|--:|--:|")
        for key in [*keys, "total", "non-2xx"]:
            cells = []
            for phase in PHASES:
                for impl in IMPLS:
                    values = []
                    for r in by.get(impl, []):
                        p = _phase(r, phase)
                        if key == "total":
                            values.append(sum(p.writes.values()) / n)
                        elif key == "non-2xx":
                            values.append(sum(p.errors.values()) / n)
                        else:
                            values.append(p.writes.get(key, 0) / n)
                    cells.append(cell(median(values)))
            out.append(f"| {key} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def reactions_table(runs: list[Run]) -> list[str]:
    """The controller's reactions by phase (bench/sets/_reaction.py): medians over a side's
    runs of each run's median and 90th percentile; nothing when no run measured them."""
    if not any(r.reactions for r in runs):
        return []
    out = [
        "## The controller's reactions\n\n"
        "From the event a set's controller waits for (the benchmark's write of the set, one "
        "of its pods Ready, one of its pods gone) to the controller's next action on that "
        "set's pods (a pod created, a pod deleted), as the benchmark's own pod watch sees "
        "both; milliseconds, the median over runs of each run's p50 and p90, and the "
        "actions per run. The rest of each step of a rollout is the scheduler's and kwok's, "
        "the same for both sides.\n",
        "| workload | client limit | phase | actions KCM / kcontrol | KCM p50 ms "
        "| kcontrol p50 ms | ratio | KCM p90 ms | kcontrol p90 ms | ratio |",
        "|---|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for (size, limit), by in groups(runs).items():
        for phase in PHASES:
            found = {
                impl: [r.reactions[phase] for r in by.get(impl, []) if phase in r.reactions]
                for impl in IMPLS
            }
            if not all(found.values()):
                continue
            m = {
                impl: {
                    s: median([getattr(x, s) for x in found[impl]]) for s in ("count", "p50", "p90")
                }
                for impl in IMPLS
            }
            k, c = m[KCM], m[KCONTROL]
            out.append(
                f"| {size} | {limit} | {phase} | {cell(k['count'], 0)} / {cell(c['count'], 0)} "
                f"| {cell(k['p50'], 1)} | {cell(c['p50'], 1)} | {ratio(c['p50'], k['p50'])} "
                f"| {cell(k['p90'], 1)} | {cell(c['p90'], 1)} | {ratio(c['p90'], k['p90'])} |"
            )
    out.append("")
    return out


def raw_table(runs: list[Run]) -> str:
    out = [
        "| workload | limit | side | run | started UTC | load | phase | wall s | p50 s | lag s "
        "| CPU s | apiserver+etcd CPU s | writes | non-2xx | other writers "
        "| all writers (metrics / audit) | peak RSS MB | start CPU s |",
        "|---|---|---|--:|---|--:|---|--:|--:|--:|--:|--:|--:|---|---|---|--:|--:|",
    ]
    for r in runs:
        for phase, p in r.phases.items():
            others = ", ".join(f"{w} {c}" for w, c in sorted(p.others.items(), key=lambda x: -x[1]))
            errors = ", ".join(f"{k} x{c}" for k, c in sorted(p.errors.items())) or "0"
            out.append(
                f"| {r.size} | {r.limit} | {r.impl} | {r.index} | {r.started} | {r.load:.2f} "
                f"| {phase} | {p.wall:.1f}{'' if p.completed else ' (TIMED OUT)'} "
                f"| {p.p50:.1f} | {p.lag:.1f} | {p.cpu:.2f} | {p.plane_cpu:.1f} "
                f"| {sum(p.writes.values())} | {errors} | {others} "
                f"| {p.metric_writes} / {p.audit_writes} "
                f"| {r.peak_rss_kb / 1024:.0f} | {r.start_cpu:.2f} |"
            )
    out += requests_table(runs, "workload")
    return "\n".join(out)


def results_points(runs: list[Run]) -> list[dict[str, Any]]:
    """One point per (size, client limit, implementation): the medians over its runs."""
    points = []
    for (size, limit), by in groups(runs).items():
        parsed, bound = Size.parse(size), Limit.parse(limit)
        for impl in IMPLS:
            rs = by.get(impl, [])
            if not rs:
                continue
            m = medians(rs)
            dropped = [float(r.events_dropped) for r in rs if r.events_dropped >= 0]
            phases = {}
            for phase in PHASES:
                keys = sorted({k for r in rs for k in _phase(r, phase).writes})
                phases[phase] = {
                    "wall_seconds": m[f"{phase}_wall"],
                    "p50_seconds": m[f"{phase}_p50"],
                    "lag_seconds": m[f"{phase}_lag"],
                    "cpu_seconds": m[f"{phase}_cpu"],
                    "writes_per_set": m[f"{phase}_writes"],
                    "writes_per_set_by_key": {
                        k: median([_phase(r, phase).writes.get(k, 0) / parsed.sets for r in rs])
                        for k in keys
                    },
                }
            points.append(
                {
                    "implementation": IMPL_NAMES[impl],
                    "size": size,
                    "kind": parsed.kind,
                    "sets": parsed.sets,
                    "replicas" if parsed.kind == "sts" else "nodes": parsed.n,
                    "pods": parsed.pods,
                    "client_limit": limit,
                    "qps": bound.qps,
                    "burst": bound.burst if bound.qps is not None else None,
                    "runs": len(rs),
                    "completed_runs": sum(r.completed for r in rs),
                    "wall_seconds": m["wall"],
                    "cpu_seconds": m["cpu"],
                    "apiserver_etcd_cpu_seconds": m["plane"],
                    "writes_per_set": m["writes"],
                    "non_2xx_per_set": m["errors"],
                    "peak_rss_mb": m["rss"],
                    "start_cpu_seconds": m["start_cpu"],
                    "events_dropped": median(dropped) if dropped else None,
                    "queue_items": m["work_count"],
                    "mean_work_ms": m["work_ms"],
                    "mean_queue_wait_ms": m["wait_ms"],
                    "phases": phases,
                }
            )
    return points


def load(path: str | Path) -> list[Run]:
    """The runs of a :func:`dump` file."""
    return load_runs(path, _run)


def _run(raw: dict[str, Any]) -> Run:
    phases = {name: Phase(**p) for name, p in raw.pop("phases").items()}
    found = {name: Reactions(**r) for name, r in raw.pop("reactions", {}).items()}
    return Run(**raw, phases=phases, reactions=found)
