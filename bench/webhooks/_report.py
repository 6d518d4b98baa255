"""The webhook benchmark's tables (Markdown) and result points (bench/_results.py).

Every figure is the median over a side's runs at one size; a ratio is kcontrol's median over
kopf's, "-" when either side was not measured.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from bench._results import dump_runs as dump
from bench._results import load_runs
from bench._tables import cell, median, ratio_value
from bench.webhooks._run import TYPES, Latency, Run
from bench.webhooks._sides import KCONTROL, KOPF

__all__ = ["TARGETS", "dump", "load", "medians", "raw_table", "report", "results_points", "verdict"]

SIDES = (KCONTROL, KOPF)
TARGETS = {"p99": 0.5, "cpu": 0.5, "lines": 1.0}
"""Issue 39's targets for the ratios kcontrol/kopf: at most these."""


def ms(seconds: float) -> str:
    return cell(seconds * 1000, 1)


def medians(runs: list[Run]) -> dict[str, float]:
    """The median figures of some runs of one side at one size (NaN: none measured)."""
    out = {
        "runs": float(len(runs)),
        "wall_seconds": median([r.wall for r in runs]),
        "cpu_seconds": median([r.cpu for r in runs]),
        "apiserver_etcd_cpu_seconds": median([r.plane_cpu for r in runs]),
        "client_p50_seconds": median([r.client_p50 for r in runs]),
        "client_p99_seconds": median([r.client_p99 for r in runs]),
        "ready_seconds": median([r.ready_seconds for r in runs]),
        "peak_rss_mb": median([r.peak_rss_kb / 1024 for r in runs]),
        "errors": median([float(r.errors) for r in runs]),
    }
    for kind in TYPES.values():
        for figure in ("p50", "p99", "mean"):
            values = [getattr(r.latency[kind], figure) for r in runs if kind in r.latency]
            out[f"{kind}_{figure}_seconds"] = median(values)
    return out


def _groups(runs: list[Run]) -> dict[int, dict[str, list[Run]]]:
    groups: dict[int, dict[str, list[Run]]] = {}
    for r in sorted(runs, key=lambda r: r.creates):
        groups.setdefault(r.creates, {}).setdefault(r.implementation, []).append(r)
    return groups


def verdict(runs: list[Run], lines: dict[str, int]) -> dict[str, float]:
    """Each target's ratio kcontrol/kopf (the largest size measured): ``p99`` the worse of
    the two webhook types, ``cpu``, ``lines``."""
    groups = _groups(runs)
    out = {"lines": ratio_value(*(float(lines.get(s, math.nan)) for s in SIDES))}
    if groups:
        by_side = groups[max(groups)]
        kc, kp = (medians(by_side.get(s, [])) for s in SIDES)
        out["p99"] = max(
            (ratio_value(kc[f"{k}_p99_seconds"], kp[f"{k}_p99_seconds"]) for k in TYPES.values()),
            key=lambda x: -math.inf if math.isnan(x) else x,
        )
        out["cpu"] = ratio_value(kc["cpu_seconds"], kp["cpu_seconds"])
    return out


def _met(value: float, target: float) -> str:
    return "-" if math.isnan(value) else ("met" if value <= target else "not met")


def report(runs: list[Run], lines: dict[str, int]) -> str:
    """The findings: lines, then per size the API server's latencies and the CPU."""
    out = ["## Lines of source (non-blank, non-comment, docstrings as comments)\n"]
    k, c = (float(lines.get(s, math.nan)) for s in SIDES)
    out.append("| | kcontrol | kopf | kcontrol/kopf | target |")
    out.append("|---|--:|--:|--:|--:|")
    out.append(
        f"| lines | {cell(k, 0)} | {cell(c, 0)} | {cell(ratio_value(k, c))} | <= {TARGETS['lines']} |"
    )
    out.append("")
    out.append(
        "## Admission latency as the API server measures it (ms; medians over runs)\n\n"
        "From `apiserver_admission_webhook_admission_duration_seconds`, the growth of its "
        "buckets during the load; p50/p99 interpolated as `histogram_quantile` does, inside "
        "the API server's buckets (5, 25, 100, 500 ms, ...) - coarse: the mean (from `_sum` "
        "and `_count`) is exact.\n"
    )
    out.append(
        "| creates | webhook | runs kcontrol+kopf | kcontrol p50 | kopf p50 | kcontrol p99 "
        "| kopf p99 | p99 ratio | kcontrol mean | kopf mean | mean ratio |"
    )
    out.append("|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    groups = _groups(runs)
    for creates, by_side in groups.items():
        kc, kp = (medians(by_side.get(s, [])) for s in SIDES)
        for kind in TYPES.values():
            p50, p99, mean = (f"{kind}_{f}_seconds" for f in ("p50", "p99", "mean"))
            out.append(
                f"| {creates} | {kind} | {kc['runs']:.0f}+{kp['runs']:.0f} "
                f"| {ms(kc[p50])} | {ms(kp[p50])} | {ms(kc[p99])} | {ms(kp[p99])} "
                f"| {cell(ratio_value(kc[p99], kp[p99]))} | {ms(kc[mean])} | {ms(kp[mean])} "
                f"| {cell(ratio_value(kc[mean], kp[mean]))} |"
            )
    out.append("")
    out.append("## The webhook process's CPU during the load, and the client's view\n")
    out.append(
        "| creates | side | CPU s | CPU ratio | load wall s | client p50 ms | client p99 ms "
        "| failed creates | apiserver+etcd CPU s | ready s | peak RSS MB |"
    )
    out.append("|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for creates, by_side in groups.items():
        kp = medians(by_side.get(KOPF, []))
        for side in SIDES:
            if not by_side.get(side):
                continue
            m = medians(by_side[side])
            out.append(
                f"| {creates} | {side} | {cell(m['cpu_seconds'])} "
                f"| {cell(ratio_value(m['cpu_seconds'], kp['cpu_seconds']))} | {cell(m['wall_seconds'])} "
                f"| {ms(m['client_p50_seconds'])} | {ms(m['client_p99_seconds'])} "
                f"| {cell(m['errors'], 0)} "
                f"| {cell(m['apiserver_etcd_cpu_seconds'])} | {cell(m['ready_seconds'])} "
                f"| {cell(m['peak_rss_mb'], 0)} |"
            )
    out.append("")
    v = verdict(runs, lines)
    out.append("## Targets (issue 39), at the largest size\n")
    out.append("| target | kcontrol/kopf | verdict |")
    out.append("|---|--:|---|")
    for name, label in (
        ("p99", "admission p99 (the worse webhook)"),
        ("cpu", "CPU"),
        ("lines", "lines"),
    ):
        value = v.get(name, math.nan)
        out.append(
            f"| {label} <= {TARGETS[name]}x | {cell(value)} | {_met(value, TARGETS[name])} |"
        )
    failed = {
        f"{creates} {side}": sum(r.errors for r in rs)
        for creates, by_side in groups.items()
        for side, rs in by_side.items()
        if any(r.errors for r in rs)
    }
    if failed:
        out.append("")
        out.append(
            "Creates that failed (not denied: a webhook call failed, the API server answered "
            "500), summed over runs: "
            + ", ".join(f"{key}: {n}" for key, n in failed.items())
            + ". A side that fails creates under the load does not meet the issue's bar, "
            "whatever its latency."
        )
    return "\n".join(out)


def raw_table(runs: list[Run]) -> str:
    out = [
        "| creates | side | run | started UTC | load | ready s | wall s | CPU s "
        "| apiserver+etcd CPU s | allowed | denied | failed | mutating calls p50/p99/mean ms "
        "| validating calls p50/p99/mean ms | client p50/p99 ms |",
        "|--:|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|---|",
    ]
    for r in runs:
        hooks = []
        for kind in TYPES.values():
            lat = r.latency.get(kind, Latency())
            hooks.append(f"{lat.calls:.0f}: {ms(lat.p50)} / {ms(lat.p99)} / {ms(lat.mean)}")
        out.append(
            f"| {r.creates} | {r.implementation} | {r.index} | {r.started} | {r.load:.2f} "
            f"| {cell(r.ready_seconds)} | {cell(r.wall)} | {cell(r.cpu)} | {cell(r.plane_cpu)} "
            f"| {r.allowed} | {r.denied} | {r.errors} | {hooks[0]} | {hooks[1]} "
            f"| {ms(r.client_p50)} / {ms(r.client_p99)} |"
        )
    notes = [f"{r.creates} {r.implementation} {r.index}: {r.note}" for r in runs if r.note]
    if notes:
        out += ["", "Notes: " + "; ".join(notes)]
    return "\n".join(out)


def results_points(runs: list[Run], lines: dict[str, int]) -> list[dict[str, Any]]:
    """One point per (implementation, creates): the medians over its runs."""
    return [
        {"implementation": side, "creates": creates, **medians(rs), "lines": lines.get(side)}
        for creates, by_side in _groups(runs).items()
        for side, rs in by_side.items()
    ]


def load(path: str | Path) -> list[Run]:
    """The runs of a :func:`dump` file."""
    return load_runs(path, _run)


def _run(raw: dict[str, Any]) -> Run:
    latency = {kind: Latency(**lat) for kind, lat in raw.pop("latency").items()}
    return Run(**raw, latency=latency)
