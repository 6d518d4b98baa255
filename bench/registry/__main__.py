"""``python -m bench.registry``: the command line (see ``bench.registry``'s docstring)."""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # python bench/registry ...

import bench.registry
from bench._cli import (
    Results,
    add_output_options,
    collect_runs,
    dump_after_each,
    publish,
    suite_parser,
)
from bench._results import machine_facts, package_version
from bench.registry._report import load, raw_table, report, results_points, verdict
from bench.registry._run import IMPLEMENTATIONS, Run, run_once


def parser() -> argparse.ArgumentParser:
    p = suite_parser(bench.registry)
    p.add_argument("--keys", default="50,500", help="comma-separated key counts")
    p.add_argument("--workers", type=int, default=5, help="concurrent writers")
    p.add_argument("--runs", type=int, default=3, help="runs per key count and side")
    p.add_argument(
        "--implementations",
        default=",".join(IMPLEMENTATIONS),
        help="comma-separated: " + ", ".join(IMPLEMENTATIONS),
    )
    add_output_options(p)
    return p


async def measure(args: argparse.Namespace, runs: list[Run]) -> None:
    sizes = [int(n) for n in args.keys.split(",") if n]
    sides = [name for name in args.implementations.split(",") if name]
    for name in sides:
        if name not in IMPLEMENTATIONS:
            raise SystemExit(f"unknown implementation {name!r}")
    on_run = dump_after_each(args.dump, runs)
    for keys in sizes:
        for index in range(args.runs):
            shift = index % len(sides)
            for side in sides[shift:] + sides[:shift]:
                t0 = time.monotonic()
                run = await run_once(side, keys, args.workers, index)
                runs.append(run)
                on_run(run)
                print(
                    f"{keys} {side:>10} run {index}: "
                    + "  ".join(
                        f"{name} {p.wall:.2f}s cpu {p.cpu:.2f}s writes "
                        f"{sum(p.writes.values())} 409s {p.conflicts}"
                        for name, p in run.phases.items()
                    )
                    + f"  load {run.load:.2f} ({time.monotonic() - t0:.0f}s in all)",
                    flush=True,
                )


def main() -> None:
    args = parser().parse_args()
    started = datetime.datetime.now(datetime.UTC)
    runs = collect_runs(args, load, lambda runs: measure(args, runs))

    def results() -> Results:
        return Results(
            machine={
                **machine_facts([r.load for r in runs], go=False),
                "kubernetes_client": package_version("kubernetes"),
            },
            parameters={
                "keys": sorted({r.keys for r in runs}),
                "workers": args.workers,
                "runs": args.runs,
                "implementations": args.implementations.split(","),
                "merged": args.merge or [],
            },
            points=results_points(runs),
            extra={"targets": verdict(runs)},
        )

    publish(
        args,
        suite="registry",
        title="Registry benchmark: an object many reconciles share, kcontrol and kopf",
        started=started,
        tables=report(runs),
        raw=raw_table(runs),
        runs=runs,
        results=results,
    )


if __name__ == "__main__":
    main()
