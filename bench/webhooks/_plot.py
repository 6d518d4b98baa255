"""The webhook benchmark's plot (``bench/results/plots/webhooks.png``), drawn with
bench/report.py's helpers: per number of creates, the API server's admission latency for
each webhook type (p50, p99, mean; a pair of bars, kcontrol and kopf), the webhook process's
CPU-seconds over the load, and the creates that failed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from bench.report import STYLE, _caption, _save
from bench.webhooks._run import TYPES

__all__ = ["plot_webhooks"]

SIDES = ("kcontrol", "kopf")
FIGURES = ("p50", "p99", "mean")


def plot_webhooks(doc: dict[str, Any], path: Path) -> Path:
    points = doc["points"]
    sizes = sorted({p["creates"] for p in points})
    sides = [s for s in SIDES if any(p["implementation"] == s for p in points)]
    by = {(p["creates"], p["implementation"]): p for p in points}
    width = 0.8 / max(len(sides), 1)
    fig, axes = plt.subplots(
        len(sizes),
        3,
        figsize=(14, 4.0 * len(sizes) + 1.4),
        squeeze=False,
        gridspec_kw={"width_ratios": [4, 1.3, 1.3]},
    )
    categories = [(kind, figure) for kind in TYPES.values() for figure in FIGURES]
    for row, creates in zip(axes, sizes, strict=True):
        latency, cpu, failed = row
        for i, side in enumerate(sides):
            point = by.get((creates, side)) or {}
            offset = (i - (len(sides) - 1) / 2) * width
            style = {"color": STYLE[side]["color"], "label": STYLE[side]["label"]}
            ys = [(point.get(f"{k}_{f}_seconds") or 0.0) * 1000 for k, f in categories]
            bars = latency.bar([j + offset for j in range(len(categories))], ys, width, **style)
            latency.bar_label(bars, fmt="%.0f", fontsize=7, padding=1)
            for ax, key in ((cpu, "cpu_seconds"), (failed, "errors")):
                bars = ax.bar([offset], [point.get(key) or 0.0], width, **style)
                ax.bar_label(bars, fmt="%.2g", fontsize=7, padding=1)
        latency.set_xticks(range(len(categories)))
        latency.set_xticklabels([f"{k}\n{f}" for k, f in categories], fontsize=8)
        latency.set_ylabel("admission latency (ms), API server's view", fontsize=9)
        latency.set_title(f"{creates} concurrent creates", fontsize=10)
        cpu.set_ylabel("webhook process CPU-seconds", fontsize=9)
        failed.set_ylabel("creates failed (500: webhook call failed)", fontsize=9)
        for ax in row:
            ax.set_ylim(bottom=0, top=max(ax.get_ylim()[1], 1e-3) * 1.15)
            ax.grid(True, axis="y", alpha=0.3)
        for ax in (cpu, failed):
            ax.set_xticks([])
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=2, fontsize=9, bbox_to_anchor=(0.5, 0.95))
    fig.suptitle("The same admission webhooks written with kcontrol and with kopf")
    fig.tight_layout(rect=(0, 0.08, 1, 0.93))
    lines = doc.get("lines", {})
    runs = sorted({p["runs"] for p in points})
    _caption(
        fig,
        doc,
        f"Medians of {'-'.join(dict.fromkeys(f'{r:.0f}' for r in (runs[0], runs[-1])))} runs per bar, each on a fresh envtest "
        "control plane. Latency from kube-apiserver's "
        "apiserver_admission_webhook_admission_duration_seconds histogram (growth during the "
        "load; p50/p99 interpolated in its coarse buckets - 5, 25, 100, 500 ms -, the mean "
        "exact). Lines of source: "
        + ", ".join(f"{side} {lines[side]}" for side in sides if side in lines)
        + " (details: bench/results/tables/webhooks.md).",
    )
    return _save(fig, path)
