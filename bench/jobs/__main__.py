"""``python -m bench.jobs``: the command line (see ``bench.jobs``'s docstring)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # python bench/jobs ...

import bench.jobs
from bench._results import command_line, machine_facts, write_results
from bench.jobs._report import dump, load, raw_table, report, results_points
from bench.jobs._run import Run, run_size
from bench.jobs._workload import Size
from bench.rollout import Limit

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SIZES = "20x10x5,100x4x2"
DEFAULT_LIMITS = "20:30,unthrottled"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.jobs",
        description=bench.jobs.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--sizes",
        default=DEFAULT_SIZES,
        help="comma-separated NxMxP: N Jobs x M completions, parallelism P",
    )
    p.add_argument(
        "--qps",
        default=DEFAULT_LIMITS,
        help="comma-separated client limits: QPS:BURST or unthrottled (both sides alike)",
    )
    p.add_argument("--runs", type=int, default=3, help="runs per size, limit and side")
    p.add_argument("--pod-seconds", type=float, default=1.0, help="each pod's run time")
    p.add_argument("--pod-ready-delay", type=float, default=1.0, help="kwok: start -> Ready")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds for a run's Jobs")
    p.add_argument("--out", help="write the tables (Markdown) here")
    p.add_argument("--json", help="write the results (bench/_results.py's format) here")
    p.add_argument("--dump", help="write the raw runs (JSON) here after every run")
    p.add_argument("--merge", action="append", help="earlier --dump files to include")
    p.add_argument(
        "--profile",
        help="directory for py-spy's collapsed stacks of each kcontrol run (figures of such "
        "runs are not for quoting: the sampler shares the cores)",
    )
    p.add_argument("--keep-logs", action="store_true", help="keep each cluster's directory")
    p.add_argument(
        "--kcm-gomaxprocs",
        type=int,
        default=0,
        help="run kube-controller-manager with GOMAXPROCS set to this (0: every core); 1 "
        "shows how much of a time gap is KCM's second core - a diagnosis, not how KCM runs",
    )
    return p


async def measure(args: argparse.Namespace, runs: list[Run]) -> None:
    sizes = [Size.parse(s) for s in args.sizes.split(",") if s]
    limits = [Limit.parse(q) for q in args.qps.split(",") if q]

    def on_run(_: Run) -> None:
        if args.dump:
            dump(args.dump, runs)

    for size in sizes:
        await run_size(size, limits, args, runs, on_run)


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
    command = command_line("bench.jobs")
    if args.out:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(
            "# Jobs benchmark: kcontrol-manager and kube-controller-manager (generated)\n\n"
            f"- Command: `{command}`\n"
            f"- Finished {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC at commit "
            f"{commit} (and the working tree of the time); method: `bench/jobs/__init__.py`\n\n"
            + tables
            + "\n\n## Raw runs\n\n"
            + raw
            + "\n"
        )
    if args.json:
        write_results(
            args.json,
            "jobs",
            started=started,
            finished=datetime.datetime.now(datetime.UTC),
            machine={**machine_facts([r.load for r in runs], go=False), "kwok": "v0.8.0"},
            command=command,
            parameters={
                "sizes": sorted({r.size for r in runs}, key=lambda s: Size.parse(s).pods),
                "client_limits": list(dict.fromkeys(r.limit for r in runs)),
                "runs": args.runs,
                "pod_seconds": args.pod_seconds,
                "pod_ready_delay_seconds": args.pod_ready_delay,
                "timeout_seconds": args.timeout,
                "merged": args.merge or [],
            },
            points=results_points(runs),
            runs=[dataclasses.asdict(r) for r in runs],
        )


if __name__ == "__main__":
    main()
