"""The operator benchmark's tables (Markdown) and result points (bench/_results.py).

Every figure is the median over a side's runs; a ratio is kcontrol's median over kopf's, "-"
when either side was not measured.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from bench._results import dump_runs as dump
from bench._results import load_runs
from bench._tables import cell, median, ratio
from bench.operator._operators import KCONTROL, KOPF
from bench.operator._run import PHASES, Phase, Run

__all__ = ["dump", "load", "raw_table", "report", "results_points"]

SIDES = (KCONTROL, KOPF)
TARGETS = {"lines": 0.8, "wall": 1.0, "cpu": 0.6, "writes": 0.7}
"""Issue 19's targets for the ratios kcontrol/kopf: at most these."""


def _groups(runs: list[Run]) -> dict[int, dict[str, list[Run]]]:
    groups: dict[int, dict[str, list[Run]]] = {}
    for r in sorted(runs, key=lambda r: r.websites):
        groups.setdefault(r.websites, {}).setdefault(r.implementation, []).append(r)
    return groups


def _phase_medians(runs: list[Run], phase: str) -> dict[str, float]:
    phases = [r.phases[phase] for r in runs if phase in r.phases]
    return {
        "runs": float(len(phases)),
        "wall": median([p.wall for p in phases]),
        "cpu": median([p.cpu for p in phases]),
        "writes": median([float(sum(p.writes.values())) for p in phases]),
        "plane": median([p.plane_cpu for p in phases]),
    }


def _total_medians(runs: list[Run]) -> dict[str, float]:
    """Over the phases every run completed: the median of each run's sums."""
    complete = [r for r in runs if all(p in r.phases and r.phases[p].completed for p in PHASES)]
    return {
        "runs": float(len(complete)),
        "wall": median([sum(r.phases[p].wall for p in PHASES) for r in complete]),
        "cpu": median([sum(r.phases[p].cpu for p in PHASES) for r in complete]),
        "writes": median(
            [float(sum(sum(r.phases[p].writes.values()) for p in PHASES)) for r in complete]
        ),
        "plane": median([sum(r.phases[p].plane_cpu for p in PHASES) for r in complete]),
    }


def report(runs: list[Run], lines: dict[str, int]) -> str:
    """The findings tables: lines, then per size and phase time, CPU and writes."""
    out = ["## Lines of source (non-blank, non-comment, docstrings as comments)\n"]
    k, c = (float(lines.get(s, math.nan)) for s in (KCONTROL, KOPF))
    out.append("| | kcontrol | kopf | kcontrol/kopf | target |")
    out.append("|---|--:|--:|--:|--:|")
    out.append(f"| lines | {cell(k, 0)} | {cell(c, 0)} | {ratio(k, c)} | <= {TARGETS['lines']} |")
    out.append("")

    out.append("## Medians per phase (ratios kcontrol/kopf of the medians)\n")
    out.append(
        "| Websites | phase | runs kcontrol+kopf | kcontrol s | kopf s | ratio "
        "| kcontrol CPU s | kopf CPU s | ratio | kcontrol writes | kopf writes | ratio "
        "| apiserver+etcd CPU s kcontrol / kopf |"
    )
    out.append("|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for websites, by_side in _groups(runs).items():
        rows = [(p, {s: _phase_medians(by_side.get(s, []), p) for s in SIDES}) for p in PHASES]
        rows.append(("all four", {s: _total_medians(by_side.get(s, [])) for s in SIDES}))
        for phase, m in rows:
            kc, kp = m[KCONTROL], m[KOPF]
            out.append(
                f"| {websites} | {phase} | {kc['runs']:.0f}+{kp['runs']:.0f} "
                f"| {cell(kc['wall'])} | {cell(kp['wall'])} | {ratio(kc['wall'], kp['wall'])} "
                f"| {cell(kc['cpu'])} | {cell(kp['cpu'])} | {ratio(kc['cpu'], kp['cpu'])} "
                f"| {cell(kc['writes'], 0)} | {cell(kp['writes'], 0)} "
                f"| {ratio(kc['writes'], kp['writes'])} "
                f"| {cell(kc['plane'], 1)} / {cell(kp['plane'], 1)} |"
            )
    out.append("")
    out.append(
        f"Targets (issue 19): time <= {TARGETS['wall']}x, CPU <= {TARGETS['cpu']}x, writes "
        f"<= {TARGETS['writes']}x kopf's."
    )
    out.append("")
    out.append("| Websites | side | ready s | start CPU s | peak RSS MB |")
    out.append("|--:|---|--:|--:|--:|")
    for websites, by_side in _groups(runs).items():
        for side in SIDES:
            rs = by_side.get(side, [])
            if rs:
                out.append(
                    f"| {websites} | {side} | {cell(median([r.ready_seconds for r in rs]))} "
                    f"| {cell(median([r.start_cpu for r in rs]))} "
                    f"| {cell(median([r.peak_rss_kb / 1024 for r in rs]), 0)} |"
                )
    out.append("")

    out.append("## The operators' API writes by verb and resource (medians per run)\n")
    for websites, by_side in _groups(runs).items():
        keys = sorted(
            {
                key
                for rs in by_side.values()
                for r in rs
                for p in r.phases.values()
                for key in [*p.writes, *(f"non-2xx: {e}" for e in p.errors)]
            }
        )
        out.append(f"{websites} Websites:\n")
        out.append(
            "| verb resource | " + " | ".join(f"{s} {p}" for p in PHASES for s in SIDES) + " |"
        )
        out.append("|---|" + "--:|" * (len(PHASES) * len(SIDES)))
        for key in keys:
            cells = []
            for phase in PHASES:
                for side in SIDES:
                    values = [
                        float(
                            r.phases[phase].errors.get(key.removeprefix("non-2xx: "), 0)
                            if key.startswith("non-2xx: ")
                            else r.phases[phase].writes.get(key, 0)
                        )
                        for r in by_side.get(side, [])
                        if phase in r.phases
                    ]
                    cells.append(cell(median(values), 0) if values else "-")
            out.append(f"| {key} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def raw_table(runs: list[Run]) -> str:
    out = [
        "| Websites | side | run | started UTC | load | ready s | start CPU s | phase | wall s "
        "| p50 s | lag s | CPU s | apiserver+etcd CPU s | writes | non-2xx | other writers |",
        "|--:|---|--:|---|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for r in runs:
        for name, p in r.phases.items():
            others = ", ".join(f"{w} {n}" for w, n in sorted(p.others.items(), key=lambda x: -x[1]))
            out.append(
                f"| {r.websites} | {r.implementation} | {r.index} | {r.started} | {r.load:.2f} "
                f"| {cell(r.ready_seconds)} | {cell(r.start_cpu)} "
                f"| {name}{'' if p.completed else ' (TIMED OUT)'} | {cell(p.wall)} "
                f"| {cell(p.p50)} | {cell(p.lag, 1)} | {cell(p.cpu)} | {cell(p.plane_cpu, 1)} "
                f"| {sum(p.writes.values())} | {sum(p.errors.values())} | {others} |"
            )
    notes = [f"{r.websites} {r.implementation} {r.index}: {r.note}" for r in runs if r.note]
    if notes:
        out += ["", "Notes: " + "; ".join(notes)]
    return "\n".join(out)


def results_points(runs: list[Run], lines: dict[str, int]) -> list[dict[str, Any]]:
    """One point per (implementation, Websites, phase): the medians over its runs."""
    points = []
    for websites, by_side in _groups(runs).items():
        for side, rs in by_side.items():
            for phase in PHASES:
                phases = [r.phases[phase] for r in rs if phase in r.phases]
                if not phases:
                    continue
                keys = sorted({k for p in phases for k in p.writes})
                writes = median([float(sum(p.writes.values())) for p in phases])
                points.append(
                    {
                        "implementation": side,
                        "websites": websites,
                        "phase": phase,
                        "runs": len(phases),
                        "completed_runs": sum(p.completed for p in phases),
                        "wall_seconds": median([p.wall for p in phases]),
                        "p50_seconds": median([p.p50 for p in phases]),
                        "lag_seconds": median([p.lag for p in phases]),
                        "cpu_seconds": median([p.cpu for p in phases]),
                        "apiserver_etcd_cpu_seconds": median([p.plane_cpu for p in phases]),
                        "writes": writes,
                        "writes_per_website": writes / websites,
                        "writes_by_key": {
                            k: median([float(p.writes.get(k, 0)) for p in phases]) for k in keys
                        },
                        "non_2xx": median([float(sum(p.errors.values())) for p in phases]),
                        "ready_seconds": median([r.ready_seconds for r in rs]),
                        "start_cpu_seconds": median([r.start_cpu for r in rs]),
                        "peak_rss_mb": median([r.peak_rss_kb / 1024 for r in rs]),
                        "lines": lines.get(side),
                    }
                )
    return points


def load(path: str | Path) -> list[Run]:
    """The runs of a :func:`dump` file."""
    return load_runs(path, _run)


def _run(raw: dict[str, Any]) -> Run:
    phases = {name: Phase(**p) for name, p in raw.pop("phases").items()}
    return Run(**raw, phases=phases)
