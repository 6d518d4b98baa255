"""The registry benchmark's plot (``bench/results/plots/registry.png``), drawn with
bench/report.py's helpers: per number of keys, each side's time to converge and its CPU for
``set`` and ``remove``, and its writes (the 409s hatched over them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from bench.registry._run import IMPLEMENTATIONS
from bench.registry._worker import PHASES
from bench.report import _caption, _save

__all__ = ["plot_registry"]

STYLE = {
    "kcontrol": {"color": "#1f77b4", "label": "kcontrol: patch_entries"},
    "kopf-rmw": {"color": "#9467bd", "label": "kopf + kubernetes client: read, patch, retry"},
    "kopf-patch": {"color": "#c5b0d5", "label": "kopf + kubernetes client: merge patch"},
}
PANELS = (
    ("wall_seconds", "seconds until every key was written"),
    ("cpu_seconds", "writer CPU-seconds (user + sys)"),
    ("writes", "API writes (409s hatched)"),
)


def plot_registry(doc: dict[str, Any], path: Path) -> Path:
    points = doc["points"]
    sizes = sorted({p["keys"] for p in points})
    sides = [s for s in IMPLEMENTATIONS if any(p["implementation"] == s for p in points)]
    by = {(p["keys"], p["implementation"], p["phase"]): p for p in points}
    width = 0.8 / max(len(sides), 1)
    fig, axes = plt.subplots(len(sizes), 3, figsize=(14, 3.8 * len(sizes) + 1.4), squeeze=False)
    for row, keys in zip(axes, sizes, strict=True):
        for ax, (key, ylabel) in zip(row, PANELS, strict=True):
            for i, side in enumerate(sides):
                xs = [j + (i - (len(sides) - 1) / 2) * width for j in range(len(PHASES))]
                rows = [by.get((keys, side, phase)) or {} for phase in PHASES]
                ys = [r.get(key) or 0.0 for r in rows]
                bars = ax.bar(xs, ys, width, color=STYLE[side]["color"], label=STYLE[side]["label"])
                ax.bar_label(bars, fmt="%.0f" if key == "writes" else "%.2g", fontsize=7, padding=1)
                if key == "writes":
                    conflicts = [r.get("conflicts") or 0.0 for r in rows]
                    ax.bar(xs, conflicts, width, fill=False, hatch="//", edgecolor="#333333")
            ax.set_xticks(range(len(PHASES)))
            ax.set_xticklabels(PHASES, fontsize=8)
            ax.set_ylabel(ylabel, fontsize=9)
            ax.set_title(f"{keys} keys, 5 writers", fontsize=10)
            ax.set_ylim(bottom=0, top=max(ax.get_ylim()[1], 1e-3) * 1.12)
            ax.grid(True, axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=3, fontsize=9, bbox_to_anchor=(0.5, 0.95))
    fig.suptitle("One ConfigMap many writers share: a key per owner, set then removed")
    fig.tight_layout(rect=(0, 0.07, 1, 0.92))
    runs = sorted({p["runs"] for p in points})
    _caption(
        fig,
        doc,
        f"Medians of {'-'.join(dict.fromkeys(f'{r:.0f}' for r in (runs[0], runs[-1])))} runs per bar, each on a fresh envtest "
        "control plane; writes and 409s as kube-apiserver counted them "
        "(details: bench/results/tables/registry.md).",
    )
    return _save(fig, path)
