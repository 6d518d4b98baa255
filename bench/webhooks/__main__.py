"""``python -m bench.webhooks``: the command line (see ``bench.webhooks``'s docstring)."""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # python bench/webhooks ...

import bench.webhooks
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
from bench.operator._lines import source_lines
from bench.webhooks._report import load, raw_table, report, results_points, verdict
from bench.webhooks._run import Run, run_once
from bench.webhooks._sides import IMPLEMENTATIONS, KCONTROL, KOPF


def parser() -> argparse.ArgumentParser:
    p = suite_parser(bench.webhooks)
    p.add_argument("--creates", default="200", help="comma-separated counts of creates")
    p.add_argument("--runs", type=int, default=3, help="runs per size and side")
    p.add_argument(
        "--implementations",
        default=f"{KCONTROL},{KOPF}",
        help=f"comma-separated: {KCONTROL}, {KOPF}",
    )
    add_output_options(p)
    add_keep_logs(p, "each run's")
    return p


def webhook_lines() -> dict[str, int]:
    """Each side's lines of source."""
    return {name: source_lines(side.source.read_text()) for name, side in IMPLEMENTATIONS.items()}


async def measure(args: argparse.Namespace, runs: list[Run]) -> None:
    sizes = [int(n) for n in args.creates.split(",") if n]
    sides = [IMPLEMENTATIONS[name] for name in args.implementations.split(",") if name]
    on_run = dump_after_each(args.dump, runs)
    for creates in sizes:
        for index in range(args.runs):
            for side in sides if index % 2 == 0 else sides[::-1]:
                t0 = time.monotonic()
                run = await run_once(side, creates, index, keep=args.keep_logs)
                runs.append(run)
                on_run(run)
                hooks = "  ".join(
                    f"{kind} p50 {lat.p50 * 1000:.1f} p99 {lat.p99 * 1000:.1f} "
                    f"mean {lat.mean * 1000:.1f} ms"
                    for kind, lat in run.latency.items()
                )
                print(
                    f"{creates} {side.name:>8} run {index}: ready {run.ready_seconds:.1f}s "
                    f"wall {run.wall:.2f}s cpu {run.cpu:.2f}s  {hooks}  "
                    f"load {run.load:.2f} ({time.monotonic() - t0:.0f}s in all) {run.note}",
                    flush=True,
                )


def main() -> None:
    args = parser().parse_args()
    started = datetime.datetime.now(datetime.UTC)
    runs = collect_runs(args, load, lambda runs: measure(args, runs))
    lines = webhook_lines()

    def results() -> Results:
        return Results(
            machine={
                **machine_facts([r.load for r in runs], go=False),
                "kopf": package_version("kopf"),
            },
            parameters={
                "creates": sorted({r.creates for r in runs}),
                "runs": args.runs,
                "implementations": args.implementations.split(","),
                "merged": args.merge or [],
            },
            points=results_points(runs, lines),
            extra={"lines": lines, "targets": verdict(runs, lines)},
        )

    publish(
        args,
        suite="webhooks",
        title="Webhook benchmark: kcontrol and kopf",
        started=started,
        tables=report(runs, lines),
        raw=raw_table(runs),
        runs=runs,
        results=results,
    )


if __name__ == "__main__":
    main()
