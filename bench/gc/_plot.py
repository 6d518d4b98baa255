"""The garbage-collector benchmark's plot (``bench/results/plots/gc.png``), drawn with
bench/report.py's helpers as bench/sets's is: one panel per figure (start-up time, CPU and
peak RSS; cascade time, CPU and writes), a pair of bars (KCM, kcontrol-manager) per size and
client limit, the issue's target as a dashed line over kcontrol's bar where it has one, and
kcontrol's ratio under each pair."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from bench.gc._report import TARGETS
from bench.report import STYLE, _caption, _limit_label, _save
from bench.sets._report import ratio_digits

__all__ = ["PANELS", "plot_gc"]

PANELS = (
    ("startup_seconds", "seconds from exec to graph synced", "Start-up time", "graph_seconds"),
    ("startup_cpu_seconds", "CPU-seconds to graph synced", "Start-up CPU", "graph_cpu"),
    ("peak_rss_mb", "peak RSS over the run (MB)", "Memory", "rss"),
    ("cascade_seconds", "seconds until every dependent gone", "Cascade time", "cascade_seconds"),
    ("cascade_cpu_seconds", "collector CPU-seconds in the cascade", "Cascade CPU", "cascade_cpu"),
    ("cascade_writes", "collector's API writes in the cascade", "Cascade writes", None),
)
"""Result key, axis label, title, key of :data:`bench.gc._report.TARGETS` (None: none)."""


def _number(value: float) -> str:
    """A bar's label: whole numbers with thousands separators from 1000 on, else 3 digits."""
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def plot_gc(doc: dict[str, Any], path: Path) -> Path:
    points = doc["points"]
    groups = list(dict.fromkeys((p["size"], p["client_limit"]) for p in points))
    sides = [s for s in ("KCM", "kcontrol") if any(p["implementation"] == s for p in points)]
    by = {(p["size"], p["client_limit"], p["implementation"]): p for p in points}
    width = 0.8 / max(len(sides), 1)
    fig, grid = plt.subplots(2, 3, figsize=(14, 9))
    for ax, (key, ylabel, title, target_key) in zip(grid.flat, PANELS, strict=True):
        target = TARGETS[target_key] if target_key else None
        for i, side in enumerate(sides):
            xs = [j + (i - (len(sides) - 1) / 2) * width for j in range(len(groups))]
            ys = [(by.get((*g, side)) or {}).get(key) or 0.0 for g in groups]
            label = "kcontrol-manager" if side == "kcontrol" else STYLE[side]["label"]
            bars = ax.bar(xs, ys, width, color=STYLE[side]["color"], label=label)
            ax.bar_label(bars, labels=[_number(y) for y in ys], fontsize=7, padding=1)
        if "KCM" in sides and "kcontrol" in sides:
            for j, g in enumerate(groups):
                kcm, ours = by.get((*g, "KCM")), by.get((*g, "kcontrol"))
                if not kcm or not ours or not kcm.get(key) or ours.get(key) is None:
                    continue
                value = ours[key] / kcm[key]
                if target is not None:
                    x = j + width / 2
                    ax.hlines(
                        kcm[key] * target,
                        x - width / 2,
                        x + width / 2,
                        colors="black",
                        linestyles="--",
                        linewidth=1,
                        label="the issue's target: kcontrol at most here" if j == 0 else None,
                    )
                digits = ratio_digits(value, target) if target is not None else 2
                ax.annotate(
                    f"{value:.{digits}f}x",
                    (j, 0),
                    xytext=(0, -34),
                    textcoords="offset points",
                    ha="center",
                    fontsize=8,
                    color=STYLE["kcontrol"]["color"],
                    annotation_clip=False,
                )
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([f"{size}\n{_limit_label(limit)}" for size, limit in groups], fontsize=8)
        ax.set_ylabel(ylabel, fontsize=9)
        suffix = f" (target: kcontrol <= {target:g}x KCM)" if target is not None else ""
        ax.set_title(title + suffix, fontsize=10)
        ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.12)
        ax.grid(True, axis="y", alpha=0.3)
    handles, labels = grid.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=3, fontsize=9, bbox_to_anchor=(0.5, 0.95))
    fig.suptitle(
        "Garbage collector: kcontrol-manager against kube-controller-manager; size = "
        "start-up objects / kinds, owners x dependents"
    )
    fig.tight_layout(rect=(0, 0.08, 1, 0.92))
    runs = sorted({p["runs"] for p in points}) or [0]
    caption = (
        f"Medians of {runs[0]}{f'-{runs[-1]}' if runs[-1] != runs[0] else ''} runs per bar. "
        "Under each pair, kcontrol's ratio to KCM; the dashed line is the issue's target. Each "
        "side runs only its garbage collector, as its own process, at the same client limit. "
        "Start-up: exec until the graph-changes queue is empty after every start-up object; "
        "cascade: the owners' background deletes until every dependent is gone (writes from "
        "the apiserver's audit log; details: bench/results/tables/gc.md)."
    )
    _caption(fig, doc, caption)
    return _save(fig, path)
