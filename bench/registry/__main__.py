"""``python -m bench.registry``: the command line (see ``bench.registry``'s docstring)."""

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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # python bench/registry ...

import bench.registry
from bench._results import command_line, machine_facts, write_results
from bench.registry._report import dump, load, raw_table, report, results_points, verdict
from bench.registry._run import IMPLEMENTATIONS, ROOT, Run, run_once


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.registry",
        description=bench.registry.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--keys", default="50,500", help="comma-separated key counts")
    p.add_argument("--workers", type=int, default=5, help="concurrent writers")
    p.add_argument("--runs", type=int, default=3, help="runs per key count and side")
    p.add_argument(
        "--implementations",
        default=",".join(IMPLEMENTATIONS),
        help="comma-separated: " + ", ".join(IMPLEMENTATIONS),
    )
    p.add_argument("--out", help="write the tables (Markdown) here")
    p.add_argument("--json", help="write the results (bench/_results.py's format) here")
    p.add_argument("--dump", help="write the raw runs (JSON) here after every run")
    p.add_argument("--merge", action="append", help="earlier --dump files to include")
    return p


async def measure(args: argparse.Namespace, runs: list[Run]) -> None:
    sizes = [int(n) for n in args.keys.split(",") if n]
    sides = [name for name in args.implementations.split(",") if name]
    for name in sides:
        if name not in IMPLEMENTATIONS:
            raise SystemExit(f"unknown implementation {name!r}")
    for keys in sizes:
        for index in range(args.runs):
            shift = index % len(sides)
            for side in sides[shift:] + sides[:shift]:
                t0 = time.monotonic()
                run = await run_once(side, keys, args.workers, index)
                runs.append(run)
                if args.dump:
                    dump(args.dump, runs)
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
    runs: list[Run] = []
    for path in args.merge or []:
        runs.extend(load(path))
    if args.runs > 0:
        asyncio.run(measure(args, runs))
    tables = report(runs)
    raw = raw_table(runs)
    print(tables)
    print(raw)
    command = command_line("bench.registry")
    if args.out:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(
            "# Registry benchmark: an object many reconciles share, kcontrol and kopf "
            "(generated)\n\n"
            f"- Command: `{command}`\n"
            f"- Finished {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC at commit "
            f"{commit} (and the working tree of the time); method: `bench/registry/__init__.py`\n\n"
            + tables
            + "\n\n## Raw runs\n\n"
            + raw
            + "\n"
        )
    if args.json:
        write_results(
            args.json,
            "registry",
            started=started,
            finished=datetime.datetime.now(datetime.UTC),
            machine={
                **machine_facts([r.load for r in runs], go=False),
                "kubernetes_client": _version("kubernetes"),
            },
            command=command,
            parameters={
                "keys": sorted({r.keys for r in runs}),
                "workers": args.workers,
                "runs": args.runs,
                "implementations": args.implementations.split(","),
                "merged": args.merge or [],
            },
            points=results_points(runs),
            targets=verdict(runs),
            runs=[dataclasses.asdict(r) for r in runs],
        )


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    main()
