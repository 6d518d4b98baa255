"""``python -m bench.webhooks``: the command line (see ``bench.webhooks``'s docstring)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import importlib.metadata
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # python bench/webhooks ...

import bench.webhooks
from bench._results import command_line, machine_facts, write_results
from bench.operator._lines import source_lines
from bench.webhooks._report import dump, load, raw_table, report, results_points, verdict
from bench.webhooks._run import Run, run_once
from bench.webhooks._sides import IMPLEMENTATIONS, KCONTROL, KOPF, ROOT


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.webhooks",
        description=bench.webhooks.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--creates", default="200", help="comma-separated counts of creates")
    p.add_argument("--runs", type=int, default=3, help="runs per size and side")
    p.add_argument(
        "--implementations",
        default=f"{KCONTROL},{KOPF}",
        help=f"comma-separated: {KCONTROL}, {KOPF}",
    )
    p.add_argument("--out", help="write the tables (Markdown) here")
    p.add_argument("--json", help="write the results (bench/_results.py's format) here")
    p.add_argument("--dump", help="write the raw runs (JSON) here after every run")
    p.add_argument("--merge", action="append", help="earlier --dump files to include")
    p.add_argument("--keep-logs", action="store_true", help="keep each run's directory")
    return p


def webhook_lines() -> dict[str, int]:
    """Each side's lines of source."""
    return {name: source_lines(side.source.read_text()) for name, side in IMPLEMENTATIONS.items()}


async def measure(args: argparse.Namespace, runs: list[Run]) -> None:
    sizes = [int(n) for n in args.creates.split(",") if n]
    sides = [IMPLEMENTATIONS[name] for name in args.implementations.split(",") if name]
    for creates in sizes:
        for index in range(args.runs):
            for side in sides if index % 2 == 0 else sides[::-1]:
                t0 = time.monotonic()
                run = await run_once(side, creates, index, keep=args.keep_logs)
                runs.append(run)
                if args.dump:
                    dump(args.dump, runs)
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
    runs: list[Run] = []
    for path in args.merge or []:
        runs.extend(load(path))
    if args.runs > 0:
        asyncio.run(measure(args, runs))
    lines = webhook_lines()
    tables = report(runs, lines)
    raw = raw_table(runs)
    print(tables)
    print(raw)
    command = command_line("bench.webhooks")
    if args.out:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(
            "# Webhook benchmark: kcontrol and kopf (generated)\n\n"
            f"- Command: `{command}`\n"
            f"- Finished {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC at commit "
            f"{commit} (and the working tree of the time); method: `bench/webhooks/__init__.py`\n\n"
            + tables
            + "\n\n## Raw runs\n\n"
            + raw
            + "\n"
        )
    if args.json:
        write_results(
            args.json,
            "webhooks",
            started=started,
            finished=datetime.datetime.now(datetime.UTC),
            machine={**machine_facts([r.load for r in runs], go=False), "kopf": _kopf_version()},
            command=command,
            parameters={
                "creates": sorted({r.creates for r in runs}),
                "runs": args.runs,
                "implementations": args.implementations.split(","),
                "merged": args.merge or [],
            },
            points=results_points(runs, lines),
            lines=lines,
            targets=verdict(runs, lines),
            runs=[dataclasses.asdict(r) for r in runs],
        )


def _kopf_version() -> str | None:
    try:
        return importlib.metadata.version("kopf")
    except importlib.metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    main()
