"""The registry benchmark's tables (Markdown) and result points (bench/_results.py).

Every figure is the median over a side's runs; a ratio is kcontrol's median over the other
side's, "-" when either was not measured.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from bench._results import dump_runs as dump
from bench._results import load_runs
from bench._tables import cell, median, ratio_value
from bench.registry._run import IMPLEMENTATIONS, KCONTROL, Phase, Run
from bench.registry._worker import PHASES

__all__ = ["dump", "load", "raw_table", "report", "results_points", "verdict"]

OTHERS = [name for name in IMPLEMENTATIONS if name != KCONTROL]


def _groups(runs: list[Run]) -> dict[int, dict[str, list[Run]]]:
    groups: dict[int, dict[str, list[Run]]] = {}
    for r in sorted(runs, key=lambda r: r.keys):
        groups.setdefault(r.keys, {}).setdefault(r.implementation, []).append(r)
    return groups


def phase_medians(runs: list[Run], phase: str | None) -> dict[str, float]:
    """Medians over ``runs`` of one phase, or (``None``) of each run's sum over both."""
    complete = [r for r in runs if all(p in r.phases for p in PHASES)]

    def figure(get: Any) -> float:
        names = [phase] if phase else list(PHASES)
        return median([float(sum(get(r.phases[p]) for p in names)) for r in complete])

    return {
        "runs": float(len(complete)),
        "wall_seconds": figure(lambda p: p.wall),
        "cpu_seconds": figure(lambda p: p.cpu),
        "apiserver_etcd_cpu_seconds": figure(lambda p: p.plane_cpu),
        "writes": figure(lambda p: sum(p.writes.values())),
        "conflicts": figure(lambda p: p.conflicts),
        "refused": figure(lambda p: sum(p.refused.values())),
        "reads": figure(lambda p: p.reads),
        "storage_updates": figure(lambda p: p.storage_updates),
    }


def verdict(runs: list[Run]) -> dict[str, float]:
    """kcontrol's time to converge (both phases) over each other side's, per key count."""
    out = {}
    for keys, by_side in _groups(runs).items():
        mine = phase_medians(by_side.get(KCONTROL, []), None)["wall_seconds"]
        for other in OTHERS:
            theirs = phase_medians(by_side.get(other, []), None)["wall_seconds"]
            out[f"{keys} keys, kcontrol/{other}"] = ratio_value(mine, theirs)
    return out


def report(runs: list[Run]) -> str:
    out = [
        "## Time to converge, CPU and requests (medians over runs)\n",
        "Time: from the start of the phase until every worker's last write was answered "
        "(then the ConfigMap was read and checked: all keys present after `set`, none after "
        "`remove`). Writes, 409s and reads as the API server counted them "
        "(`apiserver_request_total`, ConfigMaps); a refused write (404 before the ConfigMap "
        "exists, 409) is a write too. etcd updates: the API server's updates of ConfigMaps in "
        "storage (`etcd_requests_total`) - one per write stored, more when concurrent writes "
        "made it retry a write on the newer object, which the client never sees.\n",
        "| keys | phase | side | runs | time s | time ratio kcontrol/side | writer CPU s "
        "| apiserver+etcd CPU s | writes | refused | 409s | reads | etcd updates |",
        "|--:|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    groups = _groups(runs)
    for keys, by_side in groups.items():
        for phase in [*PHASES, None]:
            mine = phase_medians(by_side.get(KCONTROL, []), phase)
            for side in IMPLEMENTATIONS:
                if not by_side.get(side):
                    continue
                m = phase_medians(by_side[side], phase)
                out.append(
                    f"| {keys} | {phase or 'both'} | {side} | {m['runs']:.0f} "
                    f"| {cell(m['wall_seconds'])} "
                    f"| {cell(ratio_value(mine['wall_seconds'], m['wall_seconds']))} "
                    f"| {cell(m['cpu_seconds'])} | {cell(m['apiserver_etcd_cpu_seconds'])} "
                    f"| {cell(m['writes'], 0)} | {cell(m['refused'], 0)} "
                    f"| {cell(m['conflicts'], 0)} | {cell(m['reads'], 0)} "
                    f"| {cell(m['storage_updates'], 0)} |"
                )
    out.append("")
    out.append("## Target (issue 39): kcontrol converges no slower than kopf's equivalent\n")
    out.append("| comparison (both phases) | time ratio | verdict |")
    out.append("|---|--:|---|")
    for name, value in verdict(runs).items():
        met = "-" if math.isnan(value) else ("met" if value <= 1.0 else "not met")
        out.append(f"| {name} | {cell(value)} | {met} |")
    return "\n".join(out)


def raw_table(runs: list[Run]) -> str:
    out = [
        "| keys | side | run | started UTC | load | phase | time s | writer CPU s "
        "| apiserver+etcd CPU s | writes by verb | refused by code | reads | keys after "
        "| peak RSS MB |",
        "|--:|---|--:|---|--:|---|--:|--:|--:|---|---|--:|--:|--:|",
    ]
    for r in runs:
        for name, p in r.phases.items():
            writes = ", ".join(f"{v} {n}" for v, n in sorted(p.writes.items()))
            refused = ", ".join(f"{c} {n}" for c, n in sorted(p.refused.items())) or "-"
            out.append(
                f"| {r.keys} | {r.implementation} | {r.index} | {r.started} | {r.load:.2f} "
                f"| {name} | {cell(p.wall)} | {cell(p.cpu)} | {cell(p.plane_cpu)} | {writes} "
                f"| {refused} | {p.reads} | {p.keys_after} | {r.peak_rss_kb / 1024:.0f} |"
            )
    notes = [f"{r.keys} {r.implementation} {r.index}: {r.note}" for r in runs if r.note]
    if notes:
        out += ["", "Notes: " + "; ".join(notes)]
    return "\n".join(out)


def results_points(runs: list[Run]) -> list[dict[str, Any]]:
    """One point per (implementation, keys, phase; ``both``: each run's sum): medians."""
    return [
        {
            "implementation": side,
            "keys": keys,
            "workers": rs[0].workers,
            "phase": phase or "both",
            **phase_medians(rs, phase),
            "peak_rss_mb": median([r.peak_rss_kb / 1024 for r in rs]),
        }
        for keys, by_side in _groups(runs).items()
        for side, rs in by_side.items()
        for phase in [*PHASES, None]
    ]


def load(path: str | Path) -> list[Run]:
    """The runs of a :func:`dump` file."""
    return load_runs(path, _run)


def _run(raw: dict[str, Any]) -> Run:
    phases = {name: Phase(**p) for name, p in raw.pop("phases").items()}
    return Run(**raw, phases=phases)
