"""``python -m bench.sets``: the command line (see ``bench.sets``'s docstring)."""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # python bench/sets ...

import bench.sets
from bench._cli import (
    Results,
    add_client_limits,
    add_controller_options,
    add_output_options,
    collect_runs,
    dump_after_each,
    publish,
    suite_parser,
)
from bench._results import machine_facts
from bench.rollout import Limit
from bench.sets._report import load, raw_table, report, results_points
from bench.sets._run import Run, run_sizes
from bench.sets._workload import DS_MAX_UNAVAILABLE, Size

DEFAULT_SIZES = "sts=50x5,ds=5x50"
DEFAULT_LIMITS = "20:30,unthrottled"


def parser() -> argparse.ArgumentParser:
    p = suite_parser(bench.sets)
    p.add_argument(
        "--sizes",
        default=DEFAULT_SIZES,
        help="comma-separated sts=NxR (N StatefulSets x R replicas) and ds=MxK (M DaemonSets "
        "over K nodes)",
    )
    add_client_limits(p, DEFAULT_LIMITS)
    p.add_argument("--runs", type=int, default=2, help="runs per size, limit and side")
    p.add_argument("--pod-ready-delay", type=float, default=1.0, help="kwok: start -> Ready")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds for a phase")
    add_output_options(p, plot=True)
    add_controller_options(p, directory="the cluster's")
    return p


def parse_sizes(text: str) -> list[Size]:
    sizes = [Size.parse(s) for s in text.split(",") if s.strip()]
    if len({s.label for s in sizes}) != len(sizes):
        raise ValueError(f"--sizes {text!r}: a size twice")
    return sizes


async def measure(args: argparse.Namespace, runs: list[Run]) -> None:
    sizes = parse_sizes(args.sizes)
    limits = [Limit.parse(q) for q in args.qps.split(",") if q]
    await run_sizes(sizes, limits, args, runs, dump_after_each(args.dump, runs))


def plot(doc: dict[str, Any], path: Path) -> Path:
    from bench.sets._plot import plot_sets  # noqa: PLC0415 - matplotlib only when asked

    return plot_sets(doc, path)


def main() -> None:
    args = parser().parse_args()
    started = datetime.datetime.now(datetime.UTC)
    runs = collect_runs(args, load, lambda runs: measure(args, runs))

    def results() -> Results:
        return Results(
            machine={**machine_facts([r.load for r in runs], go=False), "kwok": "v0.8.0"},
            parameters={
                "sizes": sorted({r.size for r in runs}),
                "client_limits": list(dict.fromkeys(r.limit for r in runs)),
                "runs": args.runs,
                "pod_ready_delay_seconds": args.pod_ready_delay,
                "daemonset_max_unavailable": DS_MAX_UNAVAILABLE,
                "timeout_seconds": args.timeout,
                "merged": args.merge or [],
            },
            points=results_points(runs),
        )

    publish(
        args,
        suite="sets",
        title="StatefulSet and DaemonSet benchmark: kcontrol-manager and kube-controller-manager",
        started=started,
        tables=report(runs),
        raw=raw_table(runs),
        runs=runs,
        results=results,
        plot=plot,
    )


if __name__ == "__main__":
    main()
