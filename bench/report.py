"""Plots of the benchmark results: reads ``bench/results/<suite>.json`` (``bench/_results.py``'s
format) and writes PNGs into ``bench/results/plots/``.

- ``informer_sync.png``: informer cold-sync time (wall and CPU-seconds) against the number
  of pods, for kcontrol, client-go and the official Python informer (and, dotted, the raw
  download of the same LIST: the floor for any client);
- ``informer_memory.png``: the same informers' peak RSS and settled bytes per cached pod;
- ``rollout_time.png``: time until every Deployment completed its rollout against the number
  of Deployments, kcontrol-manager against kube-controller-manager, unthrottled and at
  QPS 20 / burst 30, for the create and the update phase;
- ``rollout_cpu.png``: the controller process's CPU-seconds in each phase, same layout;
- ``rollout_writes.png``: the controllers' API writes per rollout, same layout (each of the
  three has a row per pod timing: pods Ready 1 s after they start, and at once);
- ``operator.png``: the Website operator written with kcontrol and with kopf, both at their
  defaults on envtest: seconds until every Website converged, the operator's CPU-seconds and
  its API writes per Website, for each phase (create, image update, Deployments ready,
  Deployments and Services deleted) and each number of Websites;
- ``jobs.png``: kcontrol-manager's job controller against kube-controller-manager's on the
  kwok cluster: seconds until every Job completed, the controller's CPU-seconds, its API
  writes per Job and its peak RSS, for each workload (N Jobs x M completions, parallelism P)
  and client limit, with issue 21's target for each (kcontrol at most that far above KCM);
- ``sets.png``: kcontrol-manager's StatefulSet and DaemonSet controllers against
  kube-controller-manager's (bench/sets: time, CPU, writes, memory, with issue 36's targets);
- ``gc.png``: kcontrol-manager's garbage collector against kube-controller-manager's
  (bench/gc: start-up time, CPU and peak RSS over a cluster of many objects, then a
  cascade's time, CPU and writes, with the issue's targets);
- ``webhooks.png``: the same admission webhooks written with kcontrol and with kopf
  (bench/webhooks: the API server's admission latency per webhook type, the webhook
  process's CPU over 200 concurrent creates, the creates that failed);
- ``registry.png``: one ConfigMap five writers share, a key per owner, with kcontrol's
  ``patch_entries`` and with what a kopf user writes (bench/registry: time to converge, CPU,
  writes and 409s).

A suite whose results file is missing is skipped. Usage (from the repository root)::

    .venv/bin/python -m bench.report [--results bench/results] [--out bench/results/plots]
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # python bench/report.py

from bench._results import RESULTS_DIR, load_results
from bench._tables import ready_label

__all__ = [
    "main",
    "plot_gc",
    "plot_informer",
    "plot_jobs",
    "plot_operator",
    "plot_registry",
    "plot_rollout",
    "plot_sets",
    "plot_webhooks",
]

# One colour per implementation across every plot: ours blue, the Go peer orange.
STYLE: dict[str, dict[str, Any]] = {
    "kcontrol": {"color": "#1f77b4", "marker": "o", "label": "kcontrol"},
    "client-go": {"color": "#ff7f0e", "marker": "s", "label": "client-go"},
    "official": {"color": "#2ca02c", "marker": "^", "label": "official Python informer"},
    "aiohttp floor": {
        "color": "#7f7f7f",
        "marker": ".",
        "linestyle": ":",
        "label": "raw LIST download (floor)",
    },
    "KCM": {"color": "#ff7f0e", "marker": "s", "label": "kube-controller-manager"},
    "kopf": {"color": "#9467bd", "marker": "D", "label": "kopf"},
    # key "kcontrol" is shared: kcontrol-manager in the rollout plots
}
INFORMERS = ("kcontrol", "client-go", "official")
PHASE_TITLES = {
    "create": "create: N new Deployments",
    "update": "update: every pod template changed",
}
OPERATOR_PHASES = {
    "create": "create",
    "update": "image\nchanged",
    "ready": "Deployments\nready",
    "recreate": "owned objects\ndeleted",
}
LIMIT_STYLE = {
    "unthrottled": {"linestyle": "-", "fillstyle": "full", "suffix": "unthrottled"},
    "20:30": {"linestyle": "--", "fillstyle": "none", "suffix": "QPS 20, burst 30"},
}


def _thousands(value: float, _: object = None) -> str:
    if value >= 1000 and value % 1000 == 0:
        return f"{value / 1000:,.0f}k"
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def _log_axis(ax: Axes, axis: str, ticks: Iterable[float] | None = None) -> None:
    """Log scale with plain numbers (1k, 10k; 0.5, 2, 10) rather than powers of ten."""
    fmt = FuncFormatter(_thousands)
    if axis == "x":
        ax.set_xscale("log")
        if ticks is not None:
            ax.set_xticks(list(ticks))
        ax.xaxis.set_major_formatter(fmt)
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())


def _caption(fig: Figure, doc: dict[str, Any], text: str) -> None:
    machine = doc.get("machine", {})
    load = machine.get("load_average")
    facts = [f"measured {doc['measured']['date']}", f"{machine.get('cpus', '?')} shared CPUs"]
    if load:
        facts.append(f"1-min load {load[0]:g}-{load[1]:g}")
    facts.append(f"Python {machine.get('python', '?')}")
    if machine.get("client_go"):
        facts.append(f"client-go {machine['client_go']}")
    if machine.get("kubernetes"):
        facts.append(f"Kubernetes {machine['kubernetes']}")
    lines = [*textwrap.wrap(text, 150), "; ".join(facts)]
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=8, color="#444444", va="bottom")


def plot_informer(doc: dict[str, Any], out: Path) -> list[Path]:
    points = doc["points"]
    counts = sorted({p["objects"] for p in points})
    runs = doc["parameters"].get("runs")

    def series(name: str, key: str) -> tuple[list[int], list[float]]:
        xs, ys = [], []
        for p in sorted(
            (p for p in points if p["implementation"] == name), key=lambda p: p["objects"]
        ):
            if p.get(key) is not None:
                xs.append(p["objects"])
                ys.append(p[key])
        return xs, ys

    note = (
        f"Cold sync of a pod informer against a local kube-apiserver, each informer at its "
        f"defaults; medians of {runs} runs (the official informer: 1 run above 20k pods)."
    )
    written = []

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    for ax, key, ylabel, title in (
        (axes[0], "wall_seconds", "wall-clock seconds to has_synced", "Sync time (wall)"),
        (axes[1], "cpu_seconds", "CPU-seconds (user + sys) to has_synced", "Sync CPU"),
    ):
        for name in (*INFORMERS, "aiohttp floor"):
            xs, ys = series(name, key)
            if xs:
                ax.plot(xs, ys, **STYLE[name])
        _log_axis(ax, "x", counts)
        _log_axis(ax, "y")
        ax.set_xlabel("pods in the cache")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].legend(loc="upper left", fontsize=9)
    fig.suptitle("Informer cold sync: time against object count")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    _caption(fig, doc, note)
    written.append(_save(fig, out / "informer_sync.png"))

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    ax = axes[0]
    for name in INFORMERS:
        xs, ys = series(name, "peak_rss_mb")
        if xs:
            ax.plot(xs, ys, **STYLE[name])
    _log_axis(ax, "x", counts)
    _log_axis(ax, "y")
    ax.set_xlabel("pods in the cache")
    ax.set_ylabel("peak RSS of the process (MB)")
    ax.set_title("Peak memory (VmHWM)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize=9)
    ax = axes[1]
    for name in INFORMERS:
        xs, ys = series(name, "settled_rss_per_object_bytes")
        if xs:
            ax.plot(xs, [y / 1024 for y in ys], **STYLE[name])
            ax.annotate(  # the largest count's figure: the lines may lie on top of each other
                f"{ys[-1] / 1024:.1f} KB",
                (xs[-1], ys[-1] / 1024),
                textcoords="offset points",
                xytext=(6, 6 if name == "kcontrol" else -12),
                ha="right",
                fontsize=8,
                color=STYLE[name]["color"],
            )
    _log_axis(ax, "x", counts)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("pods in the cache")
    ax.set_ylabel("KB of RSS per cached pod (settled)")
    ax.set_title("Memory per cached pod")
    ax.grid(True, which="major", alpha=0.3)
    fig.suptitle("Informer cold sync: memory against object count")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    _caption(
        fig,
        doc,
        "Per cached pod: (RSS after sync, a full GC and malloc_trim - the same program "
        "synced on an empty namespace) / pods.",
    )
    written.append(_save(fig, out / "informer_memory.png"))
    return written


def _ready_delay(point: dict[str, Any], doc: dict[str, Any]) -> float:
    """A rollout point's pod timing (files written before it was per point: the run's one)."""
    delay = point.get("pod_ready_delay_seconds")
    if delay is None:
        delay = doc["parameters"].get("pod_ready_delay_seconds", 1.0)
    return float(delay)


def _ready_title(delay: float) -> str:
    return f"pods Ready {ready_label(delay)}" + (" after they start" if delay else "")


ROLLOUT_PLOTS = (
    ("wall_seconds", "seconds until every Deployment is complete", "Rollout time",
     "rollout_time.png"),
    ("cpu_seconds", "controller process CPU-seconds in the phase", "Rollout CPU",
     "rollout_cpu.png"),
    ("writes_per_rollout", "API writes per Deployment (controller's own)",
     "API writes per rollout", "rollout_writes.png"),
)  # fmt: skip


def _plot_rollout_lines(
    ax: Axes, points: list[dict[str, Any]], key: str, limits: list[str]
) -> None:
    """One panel's lines: ``key`` against the number of Deployments, a line per
    implementation and client limit."""
    for limit in limits:
        for impl in ("KCM", "kcontrol"):
            rows = sorted(
                (p for p in points if p["implementation"] == impl and p["client_limit"] == limit),
                key=lambda p: p["deployments"],
            )
            if not rows:
                continue
            style = dict(STYLE[impl])
            name = "kcontrol-manager" if impl == "kcontrol" else style["label"]
            style.update(
                label=f"{name}, {LIMIT_STYLE[limit]['suffix']}",
                linestyle=LIMIT_STYLE[limit]["linestyle"],
                fillstyle=LIMIT_STYLE[limit]["fillstyle"],
                markersize=7,
            )
            ax.plot([p["deployments"] for p in rows], [p[key] for p in rows], **style)


def plot_rollout(doc: dict[str, Any], out: Path) -> list[Path]:
    """``rollout_time.png``, ``rollout_cpu.png``, ``rollout_writes.png``: a row of two panels
    (create, update) per pod timing, a line per implementation and client limit."""
    points = doc["points"]
    limits = [lim for lim in LIMIT_STYLE if any(p["client_limit"] == lim for p in points)]
    delays = sorted({_ready_delay(p, doc) for p in points}, reverse=True)
    deployments = sorted({p["deployments"] for p in points})
    sizes = {p["deployments"]: p["size"] for p in points}
    written = []
    for key, ylabel, title, name in ROLLOUT_PLOTS:
        fig, grid = plt.subplots(
            len(delays), 2, figsize=(11, 1.2 + 4.4 * len(delays)), squeeze=False
        )
        for row, delay in zip(grid, delays, strict=True):
            for ax, phase in zip(row, ("create", "update"), strict=True):
                panel = [p for p in points if p["phase"] == phase and _ready_delay(p, doc) == delay]
                _plot_rollout_lines(ax, panel, key, limits)
                _log_axis(ax, "x", deployments)
                ax.set_xticklabels([f"{n:,}\n({sizes[n]})" for n in deployments])
                ax.set_xlabel("Deployments (N x replicas each)")
                ax.set_ylabel(ylabel)
                ax.set_title(f"{PHASE_TITLES[phase]}\n{_ready_title(delay)}", fontsize=10)
                if key == "cpu_seconds":  # a ratio is the same gap at every size
                    _log_axis(ax, "y")
                else:
                    ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.1)
                ax.grid(True, which="major", alpha=0.3)
        labelled: dict[str, Any] = {}
        for ax in grid.flat:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                labelled.setdefault(label, handle)
        fig.legend(
            list(labelled.values()),
            list(labelled),
            loc="upper center",
            ncol=2,
            fontsize=9,
            bbox_to_anchor=(0.5, 1 - 0.35 / fig.get_figheight()),
        )
        fig.suptitle(f"{title}: kcontrol-manager against kube-controller-manager (kwok cluster)")
        top = 1 - 0.85 / fig.get_figheight()
        fig.tight_layout(rect=(0, 0.6 / fig.get_figheight(), 1, top))
        runs = sorted({p["runs"] for p in points})
        all_sizes = {p["size"] for p in points}
        measured = sorted({p["size"] for p in points if p["client_limit"] == "20:30"})
        caption = (
            f"Medians of {runs[0]}-{runs[-1]} runs per point"
            + (
                f"; QPS 20 / burst 30 measured at {', '.join(measured)} only"
                if measured and set(measured) != all_sizes
                else ""
            )
            + ". "
        )
        if key == "writes_per_rollout":
            caption += (
                "Writes from the apiserver's audit log, by user agent; events included "
                "(details: bench/results/rollout.md)."
            )
        elif key == "cpu_seconds":
            caption += (
                "User + system CPU of the controller process during the phase (start-up "
                "apart), on a log scale: equal ratios are equal gaps (details: "
                "bench/results/rollout.md)."
            )
        _caption(fig, doc, caption)
        written.append(_save(fig, out / name))
    return written


def plot_operator(doc: dict[str, Any], out: Path) -> list[Path]:
    points = doc["points"]
    sizes = sorted({p["websites"] for p in points})
    sides = [s for s in ("kcontrol", "kopf") if any(p["implementation"] == s for p in points)]
    phases = [ph for ph in OPERATOR_PHASES if any(p["phase"] == ph for p in points)]
    width = 0.8 / len(sides)
    fig, axes = plt.subplots(len(sizes), 3, figsize=(13, 4.2 * len(sizes) + 1.2), squeeze=False)
    for row, websites in zip(axes, sizes, strict=True):
        for ax, (key, ylabel) in zip(
            row,
            (
                ("wall_seconds", "seconds until every Website converged"),
                ("cpu_seconds", "operator CPU-seconds (user + sys)"),
                ("writes_per_website", "operator's API writes per Website"),
            ),
            strict=True,
        ):
            for i, side in enumerate(sides):
                by_phase = {
                    p["phase"]: p[key]
                    for p in points
                    if p["implementation"] == side and p["websites"] == websites
                }
                xs = [j + (i - (len(sides) - 1) / 2) * width for j in range(len(phases))]
                ys = [by_phase.get(ph) or 0.0 for ph in phases]
                bars = ax.bar(xs, ys, width, color=STYLE[side]["color"], label=STYLE[side]["label"])
                ax.bar_label(bars, fmt="%.2g", fontsize=7, padding=1)
            ax.set_xticks(range(len(phases)))
            ax.set_xticklabels([OPERATOR_PHASES[ph] for ph in phases], fontsize=8)
            ax.set_ylabel(ylabel, fontsize=9)
            ax.set_title(f"{websites:,} Websites", fontsize=10)
            ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.12)
            ax.grid(True, axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=2, fontsize=9, bbox_to_anchor=(0.5, 0.95))
    fig.suptitle("The Website operator written with kcontrol and with kopf, both at their defaults")
    fig.tight_layout(rect=(0, 0.07, 1, 0.93))
    lines = doc.get("lines", {})
    runs = sorted({p["runs"] for p in points})
    caption = (
        f"Medians of {runs[0]}{f'-{runs[-1]}' if runs[-1] != runs[0] else ''} runs per bar, "
        "each on a fresh envtest control plane (etcd + kube-apiserver, no controllers). "
        + (
            "Lines of source (non-blank, non-comment): "
            + ", ".join(f"{side} {lines[side]}" for side in sides if side in lines)
            + ". "
            if lines
            else ""
        )
        + "Writes from the apiserver's audit log, by the operator's user "
        "(details: bench/results/tables/operator.md)."
        + (f" kopf {doc['machine']['kopf']}." if doc.get("machine", {}).get("kopf") else "")
    )
    _caption(fig, doc, caption)
    return [_save(fig, out / "operator.png")]


JOBS_PANELS = (
    ("wall_seconds", "seconds until every Job completed", "Time", 1.05),
    ("cpu_seconds", "controller CPU-seconds (user + sys)", "CPU", 1.5),
    ("writes_per_job", "controller's API writes per Job", "API writes", 1.0),
    ("peak_rss_mb", "controller peak RSS (MB)", "Memory", 1.5),
)
"""The jobs plot's panels: result key, axis label, title, issue 21's target ratio."""


def _limit_label(limit: str) -> str:
    if limit == "unthrottled":
        return "unthrottled"
    qps, _, burst = limit.partition(":")
    return f"QPS {qps}/{burst}"


def _ratio_text(value: float, target: float) -> str:
    """``1.02x``; a third decimal where two would hide which side of the target it is on."""
    digits = 3 if (round(value, 2) <= target) != (value <= target) else 2
    return f"{value:.{digits}f}x"


def plot_jobs(doc: dict[str, Any], out: Path) -> list[Path]:
    points = doc["points"]

    def ready(p: dict[str, Any]) -> float:
        return float(p.get("pod_ready_delay_seconds", 1.0))

    groups = list(dict.fromkeys((p["size"], p["client_limit"], ready(p)) for p in points))
    groups.sort(key=lambda g: (next(p["pods"] for p in points if p["size"] == g[0]), -g[2], g[1]))
    sides = [s for s in ("KCM", "kcontrol") if any(p["implementation"] == s for p in points)]
    by = {(p["size"], p["client_limit"], ready(p), p["implementation"]): p for p in points}
    timed = any(g[2] != 1.0 for g in groups)
    width = 0.8 / max(len(sides), 1)
    # Twice the cells with both pod timings: wider, so that their three-line labels fit.
    fig, axes = plt.subplots(
        1, len(JOBS_PANELS), figsize=(24 if timed else 16, 5.8 if timed else 5.4)
    )
    for ax, (key, ylabel, title, target) in zip(axes, JOBS_PANELS, strict=True):
        for i, side in enumerate(sides):
            xs = [j + (i - (len(sides) - 1) / 2) * width for j in range(len(groups))]
            ys = [(by.get((*g, side)) or {}).get(key) or 0.0 for g in groups]
            label = "kcontrol-manager" if side == "kcontrol" else STYLE[side]["label"]
            bars = ax.bar(xs, ys, width, color=STYLE[side]["color"], label=label)
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
                    label="issue 21's target: kcontrol at most here" if j == 0 else None,
                )
                ax.annotate(
                    _ratio_text(ours[key] / kcm[key], target),
                    (j, 0),
                    xytext=(0, -50 if timed else -38),
                    textcoords="offset points",
                    ha="center",
                    fontsize=8,
                    color=STYLE["kcontrol"]["color"],
                    annotation_clip=False,
                )
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(
            [
                f"{size}\n{_limit_label(limit)}"
                + (f"\nReady {'at once' if delay == 0 else f'{delay:g} s'}" if timed else "")
                for size, limit, delay in groups
            ],
            fontsize=8,
        )
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
        "Job controller: kcontrol-manager against kube-controller-manager (kwok cluster), "
        "N Jobs x M completions x parallelism P"
    )
    fig.tight_layout(rect=(0, 0.1, 1, 0.9))
    runs = sorted({p["runs"] for p in points})
    pod_seconds = doc["parameters"].get("pod_seconds")
    caption = (
        f"Medians of {runs[0]}{f'-{runs[-1]}' if runs[-1] != runs[0] else ''} runs per bar; "
        "under each group, kcontrol's ratio to KCM; the dashed line is issue 21's target "
        "(QPS 20/30: QPS 20, burst 30 on both sides). "
        "Each side runs only its job controller, as its own process, at the same client "
        "limit; "
        + (f"every pod runs {pod_seconds:g} s (kwok). " if pod_seconds else "")
        + "Writes from the apiserver's audit log by user agent, events included "
        "(details: bench/results/tables/jobs.md)."
    )
    _caption(fig, doc, caption)
    return [_save(fig, out / "jobs.png")]


def plot_sets(doc: dict[str, Any], out: Path) -> list[Path]:
    """``sets.png``: bench/sets's plot (:func:`bench.sets._plot.plot_sets`)."""
    from bench.sets._plot import plot_sets as draw  # noqa: PLC0415 - matplotlib only here

    return [draw(doc, out / "sets.png")]


def plot_gc(doc: dict[str, Any], out: Path) -> list[Path]:
    """``gc.png``: bench/gc's plot (:func:`bench.gc._plot.plot_gc`)."""
    from bench.gc._plot import plot_gc as draw  # noqa: PLC0415 - matplotlib only here

    return [draw(doc, out / "gc.png")]


def plot_webhooks(doc: dict[str, Any], out: Path) -> list[Path]:
    """``webhooks.png``: bench/webhooks's plot (:func:`bench.webhooks._plot.plot_webhooks`)."""
    from bench.webhooks._plot import plot_webhooks as draw  # noqa: PLC0415 - matplotlib only here

    return [draw(doc, out / "webhooks.png")]


def plot_registry(doc: dict[str, Any], out: Path) -> list[Path]:
    """``registry.png``: bench/registry's plot (:func:`bench.registry._plot.plot_registry`)."""
    from bench.registry._plot import plot_registry as draw  # noqa: PLC0415 - matplotlib only here

    return [draw(doc, out / "registry.png")]


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=str(RESULTS_DIR), help="where the JSON files are")
    parser.add_argument("--out", default=str(RESULTS_DIR / "plots"), help="where to write PNGs")
    args = parser.parse_args()
    results, out = Path(args.results), Path(args.out)
    written: list[Path] = []
    for suite, plot in (
        ("informer", plot_informer),
        ("rollout", plot_rollout),
        ("operator", plot_operator),
        ("jobs", plot_jobs),
        ("sets", plot_sets),
        ("gc", plot_gc),
        ("webhooks", plot_webhooks),
        ("registry", plot_registry),
    ):
        path = results / f"{suite}.json"
        if not path.exists():
            print(f"no {path}: {suite} plots skipped", file=sys.stderr)
            continue
        written += plot(load_results(path), out)
    for path in written:
        print(path)


if __name__ == "__main__":
    main()
