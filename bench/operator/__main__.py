"""``python -m bench.operator``: the command line (see ``bench.operator``'s docstring)."""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # python bench/operator ...

import bench.operator
from bench._cli import (
    Results,
    add_keep_logs,
    add_output_options,
    collect_runs,
    dump_after_each,
    publish,
    suite_parser,
)
from bench._results import machine_facts, package_version
from bench.operator._lines import operator_sources, sources_lines
from bench.operator._operators import IMPLEMENTATIONS, KCONTROL, KOPF
from bench.operator._report import load, raw_table, report, results_points
from bench.operator._run import Run, run_once


def parser() -> argparse.ArgumentParser:
    p = suite_parser(bench.operator)
    p.add_argument("--websites", default="50", help="comma-separated Website counts")
    p.add_argument("--websites-list", help="the same (an alias)")
    p.add_argument("--runs", type=int, default=3, help="runs per size and side")
    p.add_argument(
        "--implementations",
        default=f"{KCONTROL},{KOPF}",
        help=f"comma-separated: {KCONTROL}, {KOPF}",
    )
    p.add_argument("--phase-timeout", type=float, default=600.0, help="seconds per phase")
    add_output_options(p)
    add_keep_logs(p, "each run's")
    return p


def source_lines() -> dict[str, int]:
    """Each implementation's lines of source (those whose source exists)."""
    lines = {}
    for name, implementation in IMPLEMENTATIONS.items():
        files = operator_sources(implementation.source)
        if files:
            lines[name] = sources_lines(files)
    return lines


async def measure(args: argparse.Namespace, runs: list[Run]) -> None:
    sizes = [int(n) for n in (args.websites_list or args.websites).split(",") if n]
    sides = [IMPLEMENTATIONS[name] for name in args.implementations.split(",") if name]
    on_run = dump_after_each(args.dump, runs)
    for websites in sizes:
        for index in range(args.runs):
            for side in sides if index % 2 == 0 else sides[::-1]:
                t0 = time.monotonic()
                run = await run_once(
                    side, websites, index, phase_timeout=args.phase_timeout, keep=args.keep_logs
                )
                runs.append(run)
                on_run(run)
                print(
                    f"{websites} {side.name:>8} run {index}: ready {run.ready_seconds:.1f}s "
                    f"start CPU {run.start_cpu:.2f}s  "
                    + "  ".join(
                        f"{name} {p.wall:.2f}s cpu {p.cpu:.2f}s writes {sum(p.writes.values())}"
                        for name, p in run.phases.items()
                    )
                    + f"  load {run.load:.2f} ({time.monotonic() - t0:.0f}s in all) {run.note}",
                    flush=True,
                )


def main() -> None:
    args = parser().parse_args()
    started = datetime.datetime.now(datetime.UTC)
    runs = collect_runs(args, load, lambda runs: measure(args, runs))
    lines = source_lines()

    def results() -> Results:
        return Results(
            machine={
                **machine_facts([r.load for r in runs], go=False),
                "kopf": package_version("kopf"),
            },
            parameters={
                "websites": sorted({r.websites for r in runs}),
                "runs": args.runs,
                "implementations": args.implementations.split(","),
                "phase_timeout_seconds": args.phase_timeout,
                "merged": args.merge or [],
            },
            points=results_points(runs, lines),
            extra={"lines": lines},
        )

    publish(
        args,
        suite="operator",
        title="Operator benchmark: kcontrol and kopf",
        started=started,
        tables=report(runs, lines),
        raw=raw_table(runs),
        runs=runs,
        results=results,
    )


if __name__ == "__main__":
    main()
