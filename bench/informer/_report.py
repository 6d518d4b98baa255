"""The informer benchmark's output: Markdown tables and ``bench/results/informer.json``.

Both come from the same medians (:func:`sync_medians`, :func:`churn_medians`) of a
:class:`~bench.informer._orchestrate.Collected`, whether measured just now or ``--load``-ed
from an earlier ``--dump``.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
from pathlib import Path
from typing import Any

from bench._results import command_line, machine_facts, write_results
from bench.informer._orchestrate import Collected
from bench.informer._variants import Variant

__all__ = ["finish", "report", "results_points"]

CHURN_INFORMERS = ("kcontrol", "kcontrol manager", "client-go")

PROGRAMS = {
    "kcontrol": "kcontrol",
    "go": "client-go",
    "official": "official Python informer",
    "asyncio": "kubernetes_asyncio",
    "floor": "raw LIST download",
}
"""Variant runtime -> the measured program, as the results file names it."""

RATIO_PAIRS = [
    ("kcontrol", "client-go", "defaults: kcontrol LIST, client-go streaming list"),
    ("kcontrol trim", "client-go trim", "both drop managedFields"),
    ("kcontrol", "client-go LIST", "both LIST"),
    ("kcontrol watch-list", "client-go", "both streaming list"),
    ("kcontrol trim", "client-go LIST", "kcontrol trims, both LIST"),
    ("kcontrol watch-list trim", "client-go trim", "both streaming list, both trim"),
    ("kcontrol no-intern", "client-go", "kcontrol without interning"),
    ("kcontrol manager", "client-go trim", "kcontrol-manager vs client-go trim"),
    ("kcontrol manager", "client-go kcm", "kcontrol-manager vs kube-controller-manager"),
]


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _fmt(value: float, digits: int = 2) -> str:
    if value != value:  # NaN
        return "-"
    return f"{value:,.{digits}f}"


def _stat(runs: list[dict[str, Any]], key: str) -> float:
    return _median([float(r[key]) for r in runs if key in r and not r.get("timeout")])


def sync_medians(data: Collected, v: Variant, n: int) -> dict[str, Any] | None:
    """Medians of one variant's sync runs at ``n`` pods (None if it did not run): wall, cpu,
    import (seconds), maxrss (MB), rss_pod, settled_pod, heap_pod (bytes per pod); ok and
    timeouts (run counts). A variant whose every run timed out gets the (lower-bound)
    medians of its timed-out runs."""
    rs = data.sync.get((n, v.name))
    if not rs:
        return None
    ok = [r for r in rs if not r.get("timeout")]
    empty = data.empty.get((n, v.runtime), [])
    m: dict[str, Any] = {
        "ok": len(ok),
        "timeouts": len(rs) - len(ok),
        "wall": _stat(ok, "wall_seconds"),
        "cpu": _stat(ok, "cpu_seconds"),
        "import": _stat(ok, "import_cpu_seconds"),
        # The whole process to has_synced: its imports (Python's; a Go program's runtime
        # start-up before main is not measured) and the sync.
        "process": _median(
            [
                float(r["cpu_seconds"]) + float(r.get("import_cpu_seconds") or 0.0)
                for r in ok
                if "cpu_seconds" in r
            ]
        ),
        "maxrss": _stat(ok, "maxrss_kb") / 1024,
        "rss_pod": (_stat(ok, "rss_kb") - _stat(empty, "rss_kb")) * 1024 / n,
        "settled_pod": (_stat(ok, "rss_settled_kb") - _stat(empty, "rss_settled_kb")) * 1024 / n,
        "heap_pod": (_stat(ok, "heap_inuse_after_gc") - _stat(empty, "heap_inuse_after_gc")) / n,
    }
    if m["timeouts"] and not ok:
        m["wall"] = _median([r["wall_seconds"] for r in rs])
        m["cpu"] = _median([r["cpu_seconds"] for r in rs])
    return m


def churn_medians(data: Collected, n: int) -> dict[str, dict[str, float]]:
    """Per watching informer, medians over the churn runs at ``n`` pods."""
    churns = data.churn.get(n) or []
    out: dict[str, dict[str, float]] = {}
    ws = [c["writer"] for c in churns]
    for who in CHURN_INFORMERS:
        pairs = [(c[who], c["writer"]) for c in churns if who in c]
        if not pairs:
            continue
        rs = [r for r, _ in pairs]
        written = _median([w["patches"] for w in ws])
        out[who] = {
            "writer_patches_per_second": _median([w["patches_per_second"] for w in ws]),
            "events_per_second": _median([r["updates"] / w["seconds"] for r, w in pairs]),
            "delivered_ratio": _median([r["updates"] for r in rs]) / written,
            "cpu_us_per_event": _median(
                [r["cpu_seconds"] / max(r["updates"], 1) * 1e6 for r in rs]
            ),
            "lag_p50_ms": _median([r["lag_p50"] * 1e3 for r in rs]),
            "lag_p99_ms": _median([r["lag_p99"] * 1e3 for r in rs]),
        }
    return out


def report(data: Collected, variant_list: list[Variant], counts: list[int]) -> str:
    lines: list[str] = []
    for n in counts:
        create = data.create_seconds.get(n, float("nan"))
        lines.append(
            f"\n### {n:,} pods (created in {create:.0f} s, {n / create:,.0f}/s)\n"
            if create == create
            else f"\n### {n:,} pods\n"
        )
        lines.append(
            "| variant | runs | wall s | CPU s | import CPU s | process CPU s | peak RSS MB "
            "| RSS/pod B | settled RSS/pod B | Go heap/pod B |"
        )
        lines.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        medians: dict[str, dict[str, Any]] = {}
        for v in variant_list:
            m = sync_medians(data, v, n)
            if m is None:
                continue
            medians[v.name] = m
            timeouts = m["timeouts"]
            bound = ">" if timeouts and not m["ok"] else ""
            lines.append(
                f"| {v.name} | {m['ok']}{f' (+{timeouts} timed out)' if timeouts else ''} "
                f"| {bound}{_fmt(m['wall'])} | {bound}{_fmt(m['cpu'])} | {_fmt(m['import'])} "
                f"| {bound}{_fmt(m['process'])} | {_fmt(m['maxrss'], 0)} | {_fmt(m['rss_pod'], 0)} "
                f"| {_fmt(m['settled_pod'], 0)} | {_fmt(m['heap_pod'], 0)} |"
            )
        floor = data.sync.get((n, "aiohttp floor"))
        if floor:
            f0 = floor[0]
            lines.append(
                f"\nLIST bytes: {f0.get('bytes', 0) / n:,.0f} B/pod in {f0.get('pages')} "
                f"page(s) of limit=500, resourceVersion=0."
            )
        lines.append(
            "\n| kcontrol / client-go | wall | CPU | process CPU | peak RSS | RSS/pod "
            "| settled RSS/pod |"
        )
        lines.append("|---|--:|--:|--:|--:|--:|--:|")
        for a, b, label in RATIO_PAIRS:
            if a in medians and b in medians:
                ma, mb = medians[a], medians[b]
                lines.append(
                    f"| {a} / {b} ({label}) | {ma['wall'] / mb['wall']:.2f} "
                    f"| {ma['cpu'] / mb['cpu']:.2f} | {ma['process'] / mb['process']:.2f} "
                    f"| {ma['maxrss'] / mb['maxrss']:.2f} "
                    f"| {ma['rss_pod'] / mb['rss_pod']:.2f} "
                    f"| {ma['settled_pod'] / mb['settled_pod']:.2f} |"
                )
        for slow in ("official", "asyncio models"):
            for ours in ("kcontrol", "kcontrol no-gzip", "kcontrol manager"):
                if slow not in medians or ours not in medians:
                    continue
                ms, mk = medians[slow], medians[ours]
                bound = "at least " if not ms["ok"] else ""
                lines.append(
                    f"\n{ours} vs {slow}: {bound}{ms['wall'] / mk['wall']:.1f}x faster (wall), "
                    f"{bound}{ms['cpu'] / mk['cpu']:.1f}x less CPU."
                )
        churn = churn_medians(data, n)
        if churn:
            lines.append(
                f"\nWatch throughput ({len(data.churn[n])} runs, medians; "
                "both informers watch at once):\n"
            )
            lines.append(
                "| informer | writer patches/s | events/s delivered | delivered/written "
                "| CPU us/event | lag p50 ms | lag p99 ms |"
            )
            lines.append("|---|--:|--:|--:|--:|--:|--:|")
            for who, c in churn.items():
                lines.append(
                    f"| {who} | {c['writer_patches_per_second']:,.0f} "
                    f"| {c['events_per_second']:,.0f} | {c['delivered_ratio']:.3f} "
                    f"| {c['cpu_us_per_event']:,.0f} | {c['lag_p50_ms']:,.1f} "
                    f"| {c['lag_p99_ms']:,.1f} |"
                )
    return "\n".join(lines)


def results_points(
    data: Collected, variant_list: list[Variant], counts: list[int]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(sync points, watch points) for the results file: one per variant and pod count."""
    sync: list[dict[str, Any]] = []
    watch: list[dict[str, Any]] = []
    for n in counts:
        for v in variant_list:
            m = sync_medians(data, v, n)
            if m is None:
                continue
            point: dict[str, Any] = {
                "implementation": v.name,
                "program": PROGRAMS.get(v.runtime, v.runtime),
                "objects": n,
                "runs": m["ok"],
                "timed_out_runs": m["timeouts"],
                "wall_seconds": m["wall"],
                "cpu_seconds": m["cpu"],
                "import_cpu_seconds": m["import"],
                "process_cpu_seconds": m["process"],
                "peak_rss_mb": m["maxrss"],
                "rss_per_object_bytes": m["rss_pod"],
                "settled_rss_per_object_bytes": m["settled_pod"],
                "go_heap_per_object_bytes": m["heap_pod"],
            }
            if v.name == "aiohttp floor":
                f0 = data.sync[(n, v.name)][0]
                point["list_bytes_per_object"] = f0.get("bytes", 0) / n
            sync.append(point)
        for who, c in churn_medians(data, n).items():
            watch.append({"implementation": who, "objects": n, "runs": len(data.churn[n]), **c})
    return sync, watch


def finish(
    args: argparse.Namespace, data: Collected, all_variants: list[Variant], counts: list[int]
) -> None:
    """Print the tables; write them (``--write``), the results (``--json``), the raw
    measurements (``--dump``)."""
    from bench._reference import client_go_version  # noqa: PLC0415
    from kcontrol.envtest import K8S_VERSION  # noqa: PLC0415

    started = data.started
    finished = data.finished or datetime.datetime.now(datetime.UTC)
    machine = machine_facts(data.loads)
    loads = machine.get("load_average", [float("nan")] * 2)
    header = (
        f"Informer cold sync and watch throughput, {started:%Y-%m-%d %H:%M}-{finished:%H:%M} UTC; "
        f"median of {args.runs} runs (official/asyncio models: all runs up to 20k pods, "
        f"else 1, unless --slow-runs); "
        f"{machine['cpus']} CPUs, load average during runs {loads[0]:.2f}-{loads[1]:.2f}; "
        f"Python {machine['python']}, client-go {client_go_version()} ({machine.get('go')}, "
        f"default GOMAXPROCS), kube-apiserver {K8S_VERSION}."
    )
    table = header + "\n" + report(data, all_variants, counts)
    print(table)
    if args.write:
        Path(args.write).write_text(table + "\n")
    if args.dump and not args.load:
        data.dump(args.dump)
    if args.json:
        sync, watch = results_points(data, all_variants, counts)
        write_results(
            args.json,
            "informer",
            started=started,
            finished=finished,
            machine=machine,
            command=data.command or command_line("bench.informer"),
            parameters={
                "pods": counts,
                "runs": args.runs,
                "slow_runs": args.slow_runs,
                "slow_timeout_seconds": args.slow_timeout,
                "churn_seconds": args.churn_seconds,
                "writer_concurrency": args.writer_concurrency,
                "create_concurrency": args.create_concurrency,
                "variants": [v.name for v in all_variants],
            },
            points=sync,
            watch_points=watch,
            rendered_by=command_line("bench.informer") if args.load else None,
            create_seconds={str(n): s for n, s in data.create_seconds.items()},
            raw={
                "sync": {f"{k[0]}|{k[1]}": v for k, v in data.sync.items()},
                "empty": {f"{k[0]}|{k[1]}": v for k, v in data.empty.items()},
                "churn": {str(k): v for k, v in data.churn.items()},
            },
        )
