"""``python -m bench.sets``: the command line (see ``bench.sets``'s docstring)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # python bench/sets ...

import bench.sets
from bench._results import _finite, command_line, machine_facts, write_results
from bench.rollout import Limit
from bench.sets._report import dump, load, raw_table, report, results_points
from bench.sets._run import Run, run_sizes
from bench.sets._workload import DS_MAX_UNAVAILABLE, Size

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SIZES = "sts=50x5,ds=5x50"
DEFAULT_LIMITS = "20:30,unthrottled"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.sets",
        description=bench.sets.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--sizes",
        default=DEFAULT_SIZES,
        help="comma-separated sts=NxR (N StatefulSets x R replicas) and ds=MxK (M DaemonSets "
        "over K nodes)",
    )
    p.add_argument(
        "--qps",
        default=DEFAULT_LIMITS,
        help="comma-separated client limits: QPS:BURST or unthrottled (both sides alike)",
    )
    p.add_argument("--runs", type=int, default=2, help="runs per size, limit and side")
    p.add_argument("--pod-ready-delay", type=float, default=1.0, help="kwok: start -> Ready")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds for a phase")
    p.add_argument("--out", help="write the tables (Markdown) here")
    p.add_argument("--json", help="write the results (bench/_results.py's format) here")
    p.add_argument("--plot", help="write the plot (PNG) here")
    p.add_argument("--dump", help="write the raw runs (JSON) here after every run")
    p.add_argument("--merge", action="append", help="earlier --dump files to include")
    p.add_argument(
        "--profile",
        help="directory for py-spy's collapsed stacks of each kcontrol run (figures of such "
        "runs are not for quoting: the sampler shares the cores)",
    )
    p.add_argument("--keep-logs", action="store_true", help="keep the cluster's directory")
    p.add_argument(
        "--kcm-gomaxprocs",
        type=int,
        default=0,
        help="run kube-controller-manager with GOMAXPROCS set to this (0: every core)",
    )
    return p


def parse_sizes(text: str) -> list[Size]:
    sizes = [Size.parse(s) for s in text.split(",") if s.strip()]
    if len({s.label for s in sizes}) != len(sizes):
        raise ValueError(f"--sizes {text!r}: a size twice")
    return sizes


async def measure(args: argparse.Namespace, runs: list[Run]) -> None:
    sizes = parse_sizes(args.sizes)
    limits = [Limit.parse(q) for q in args.qps.split(",") if q]

    def on_run(_: Run) -> None:
        if args.dump:
            dump(args.dump, runs)

    await run_sizes(sizes, limits, args, runs, on_run)


def main() -> None:
    args = parser().parse_args()
    started = datetime.datetime.now(datetime.UTC)
    runs: list[Run] = []
    for path in args.merge or []:
        runs.extend(load(path))
    if args.runs > 0:
        asyncio.run(measure(args, runs))
    tables = report(runs)
    raw = raw_table(runs)
    print(tables)
    print(raw)
    command = command_line("bench.sets")
    if args.out:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(
            "# StatefulSet and DaemonSet benchmark: kcontrol-manager and "
            "kube-controller-manager (generated)\n\n"
            f"- Command: `{command}`\n"
            f"- Finished {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC at commit "
            f"{commit} (and the working tree of the time); method: `bench/sets/__init__.py`\n\n"
            + tables
            + "\n\n## Raw runs\n\n"
            + raw
            + "\n"
        )
    document = {
        "started": started,
        "finished": datetime.datetime.now(datetime.UTC),
        "machine": {**machine_facts([r.load for r in runs], go=False), "kwok": "v0.8.0"},
        "command": command,
        "parameters": {
            "sizes": sorted({r.size for r in runs}),
            "client_limits": list(dict.fromkeys(r.limit for r in runs)),
            "runs": args.runs,
            "pod_ready_delay_seconds": args.pod_ready_delay,
            "daemonset_max_unavailable": DS_MAX_UNAVAILABLE,
            "timeout_seconds": args.timeout,
            "merged": args.merge or [],
        },
        "points": results_points(runs),
    }
    if args.json:
        write_results(
            args.json,
            "sets",
            **document,  # type: ignore[arg-type]
            runs=[dataclasses.asdict(r) for r in runs],
        )
    if args.plot:
        from bench.sets._plot import plot_sets  # noqa: PLC0415 - matplotlib only when asked

        # as bench/report.py reads it: NaN (not measured) as None
        doc = json.loads(json.dumps(_finite(document), default=str))
        doc["measured"] = {"date": f"{started:%Y-%m-%d}"}
        print(plot_sets(doc, Path(args.plot)))


if __name__ == "__main__":
    main()
