"""The sets benchmark's plot (``bench/results/plots/sets.png``), drawn as bench/report.py
draws ``jobs.png`` and with its helpers: one panel per target (time, CPU, writes per set, peak
RSS), a pair of bars (KCM, kcontrol-manager) per workload and client limit, the target as a
dashed line over kcontrol's bar and kcontrol's ratio under each pair. The time and CPU bars
are stacked: create below, re-template (hatched) above."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from bench.report import STYLE, _caption, _limit_label, _save
from bench.sets._report import TARGETS, ratio_digits

__all__ = ["PANELS", "plot_sets"]

PANELS = (
    ("wall_seconds", "seconds until every set rolled out", "Time", "wall"),
    ("cpu_seconds", "controller CPU-seconds (user + sys)", "CPU", "cpu"),
    ("writes_per_set", "controller's API writes per set", "API writes", "writes"),
    ("peak_rss_mb", "controller peak RSS (MB)", "Memory", "rss"),
)
"""Result key, axis label, title, key of :data:`bench.sets._report.TARGETS`."""
STACKED = ("wall_seconds", "cpu_seconds")


def plot_sets(doc: dict[str, Any], path: Path) -> Path:
    points = doc["points"]
    groups = list(dict.fromkeys((p["size"], p["client_limit"]) for p in points))
    sides = [s for s in ("KCM", "kcontrol") if any(p["implementation"] == s for p in points)]
    by = {(p["size"], p["client_limit"], p["implementation"]): p for p in points}
    width = 0.8 / max(len(sides), 1)
    fig, axes = plt.subplots(1, len(PANELS), figsize=(16, 6.4))
    for ax, (key, ylabel, title, target_key) in zip(axes, PANELS, strict=True):
        target = TARGETS[target_key]
        for i, side in enumerate(sides):
            xs = [j + (i - (len(sides) - 1) / 2) * width for j in range(len(groups))]
            rows = [by.get((*g, side)) or {} for g in groups]
            label = "kcontrol-manager" if side == "kcontrol" else STYLE[side]["label"]
            color = STYLE[side]["color"]
            if key in STACKED:
                create = [
                    ((r.get("phases") or {}).get("create") or {}).get(key) or 0.0 for r in rows
                ]
                again = [
                    ((r.get("phases") or {}).get("retemplate") or {}).get(key) or 0.0 for r in rows
                ]
                ax.bar(xs, create, width, color=color, label=label)
                bars = ax.bar(xs, again, width, bottom=create, color=color, alpha=0.55, hatch="//")
                ax.bar_label(
                    bars,
                    labels=[f"{a + b:.3g}" for a, b in zip(create, again, strict=True)],
                    fontsize=7,
                    padding=1,
                )
            else:
                ys = [r.get(key) or 0.0 for r in rows]
                bars = ax.bar(xs, ys, width, color=color, label=label)
                ax.bar_label(bars, fmt="%.3g", fontsize=7, padding=1)
        if "KCM" in sides and "kcontrol" in sides:
            for j, g in enumerate(groups):
                kcm, ours = by.get((*g, "KCM")), by.get((*g, "kcontrol"))
                if not kcm or not ours or not kcm.get(key) or ours.get(key) is None:
                    continue
                x = j + width / 2
                ax.hlines(
                    kcm[key] * target,
                    x - width / 2,
                    x + width / 2,
                    colors="black",
                    linestyles="--",
                    linewidth=1,
                    label="issue 36's target: kcontrol at most here" if j == 0 else None,
                )
                ax.annotate(
                    f"{ours[key] / kcm[key]:.{ratio_digits(ours[key] / kcm[key], target)}f}x",
                    (j, 0),
                    xytext=(0, -38),
                    textcoords="offset points",
                    ha="center",
                    fontsize=8,
                    color=STYLE["kcontrol"]["color"],
                    annotation_clip=False,
                )
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([f"{size}\n{_limit_label(limit)}" for size, limit in groups], fontsize=8)
        ax.set_ylabel(ylabel, fontsize=9)
        ax.set_title(f"{title} (target: kcontrol <= {target:g}x KCM)", fontsize=10)
        ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.12)
        ax.grid(True, axis="y", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: labels[i].startswith("issue"))
    fig.legend(
        [handles[i] for i in order],
        [labels[i] for i in order],
        loc="upper center",
        ncol=3,
        fontsize=9,
        bbox_to_anchor=(0.5, 0.94),
    )
    fig.suptitle(
        "StatefulSet and DaemonSet controllers: kcontrol-manager against "
        "kube-controller-manager (kwok cluster); sts=N StatefulSets x R replicas, "
        "ds=M DaemonSets x K nodes"
    )
    fig.tight_layout(rect=(0, 0.16, 1, 0.9))
    runs = sorted({p["runs"] for p in points}) or [0]
    delay = doc["parameters"].get("pod_ready_delay_seconds")
    caption = (
        f"Medians of {runs[0]}{f'-{runs[-1]}' if runs[-1] != runs[0] else ''} runs per bar; "
        "time and CPU stacked: create (solid), then re-template of every pod (hatched). "
        "Under each group, kcontrol's ratio to KCM; the dashed line is issue 36's target. "
        "Each side runs only the one controller, as its own process, at the same client "
        "limit; StatefulSets OrderedReady, DaemonSets maxUnavailable "
        f"{doc['parameters'].get('daemonset_max_unavailable', '?')}"
        + (f"; pods Ready {delay:g} s after they start (kwok)" if delay else "")
        + ". Writes from the apiserver's audit log by user agent, events included "
        "(details: bench/results/tables/sets.md)."
    )
    _caption(fig, doc, caption)
    return _save(fig, path)
