"""``python -m bench.jobs``: the command line (see ``bench.jobs``'s docstring)."""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # python bench/jobs ...

import bench.jobs
from bench._cli import (
    Results,
    add_client_limits,
    add_controller_options,
    add_output_options,
    add_ready_delays,
    collect_runs,
    dump_after_each,
    publish,
    ready_delays,
    suite_parser,
)
from bench._results import machine_facts
from bench.jobs._report import load, raw_table, report, results_points
from bench.jobs._run import Run, run_size
from bench.jobs._workload import Size
from bench.rollout import Limit

DEFAULT_SIZES = "20x10x5,100x4x2"
DEFAULT_LIMITS = "20:30,unthrottled"


def parser() -> argparse.ArgumentParser:
    p = suite_parser(bench.jobs)
    p.add_argument(
        "--sizes",
        default=DEFAULT_SIZES,
        help="comma-separated NxMxP: N Jobs x M completions, parallelism P",
    )
    add_client_limits(p, DEFAULT_LIMITS)
    p.add_argument("--runs", type=int, default=3, help="runs per size, limit and side")
    p.add_argument("--pod-seconds", type=float, default=1.0, help="each pod's run time")
    add_ready_delays(p)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds for a run's Jobs")
    add_output_options(p)
    add_controller_options(
        p,
        directory="each cluster's",
        gomaxprocs_help="run kube-controller-manager with GOMAXPROCS set to this (0: every "
        "core); 1 shows how much of a time gap is KCM's second core - a diagnosis, not how "
        "KCM runs",
    )
    return p


async def measure(args: argparse.Namespace, runs: list[Run]) -> None:
    sizes = [Size.parse(s) for s in args.sizes.split(",") if s]
    limits = [Limit.parse(q) for q in args.qps.split(",") if q]
    delays = ready_delays(args.pod_ready_delay)
    for size in sizes:
        for delay in delays:
            on_run = dump_after_each(args.dump, runs)
            await run_size(size, limits, args, runs, on_run, ready_delay=delay)


def main() -> None:
    args = parser().parse_args()
    started = datetime.datetime.now(datetime.UTC)
    runs = collect_runs(args, load, lambda runs: measure(args, runs))

    def results() -> Results:
        return Results(
            machine={**machine_facts([r.load for r in runs], go=False), "kwok": "v0.8.0"},
            parameters={
                "sizes": sorted({r.size for r in runs}, key=lambda s: Size.parse(s).pods),
                "client_limits": list(dict.fromkeys(r.limit for r in runs)),
                "runs": args.runs,
                "pod_seconds": args.pod_seconds,
                "pod_ready_delays_seconds": sorted({r.ready_delay for r in runs}, reverse=True),
                "timeout_seconds": args.timeout,
                "merged": args.merge or [],
            },
            points=results_points(runs),
        )

    publish(
        args,
        suite="jobs",
        title="Jobs benchmark: kcontrol-manager and kube-controller-manager",
        started=started,
        tables=report(runs),
        raw=raw_table(runs),
        runs=runs,
        results=results,
    )


if __name__ == "__main__":
    main()
