"""``python -m bench.gc``: the command line (see ``bench.gc``'s docstring)."""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # python bench/gc ...

import bench.gc
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
from bench.gc._measures import Run
from bench.gc._report import load, raw_table, report, results_points
from bench.gc._run import run_all
from bench.gc._workload import KINDS, OWNED_SHARE
from bench.rollout import Limit


def parser() -> argparse.ArgumentParser:
    p = suite_parser(bench.gc)
    p.add_argument("--objects", type=int, default=50000, help="start-up objects")
    p.add_argument("--kinds", type=int, default=len(KINDS), help=f"start-up kinds (1-{len(KINDS)})")
    p.add_argument("--namespaces", type=int, default=50, help="start-up namespaces")
    p.add_argument("--owners", type=int, default=1000, help="cascade owners deleted")
    p.add_argument("--dependents", type=int, default=10, help="dependents per cascade owner")
    add_client_limits(p, "unthrottled")
    p.add_argument("--runs", type=int, default=2, help="runs per limit and side")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds for a phase")
    add_output_options(p, plot=True)
    add_controller_options(p, directory="the cluster's")
    return p


async def measure(args: argparse.Namespace, runs: list[Run]) -> None:
    limits = [Limit.parse(q) for q in args.qps.split(",") if q]
    await run_all(limits, args, runs, dump_after_each(args.dump, runs))


def plot(doc: dict[str, Any], path: Path) -> Path:
    from bench.gc._plot import plot_gc  # noqa: PLC0415 - matplotlib only when asked

    return plot_gc(doc, path)


def main(argv: list[str] | None = None) -> int:
    """Run, write the results; 1 when any run failed its verification."""
    args = parser().parse_args(argv)
    if not 1 <= args.kinds <= len(KINDS):
        raise SystemExit(f"--kinds must be 1..{len(KINDS)}")
    started = datetime.datetime.now(datetime.UTC)
    runs = collect_runs(args, load, lambda runs: measure(args, runs))

    def results() -> Results:
        return Results(
            machine=machine_facts([r.load for r in runs], go=False),
            parameters={
                "objects": args.objects,
                "kinds": [k.resource.plural for k in KINDS[: args.kinds]],
                "namespaces": args.namespaces,
                "owned_share": OWNED_SHARE,
                "owners": args.owners,
                "dependents_per_owner": args.dependents,
                "client_limits": list(dict.fromkeys(r.limit for r in runs)),
                "runs": args.runs,
                "timeout_seconds": args.timeout,
                "merged": args.merge or [],
            },
            points=results_points(runs),
        )

    publish(
        args,
        suite="gc",
        title="Garbage-collector benchmark: kcontrol-manager and kube-controller-manager",
        started=started,
        tables=report(runs),
        raw=raw_table(runs),
        runs=runs,
        results=results,
        plot=plot,
    )
    failed = [r for r in runs if not r.completed]
    for r in failed:
        print(
            f"VERIFICATION FAILED: {r.impl} run {r.index} ({r.size}, {r.limit}): "
            + ("; ".join(r.problems) or "not completed"),
            file=sys.stderr,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
