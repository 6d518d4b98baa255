"""``python -m bench.gc``: the command line (see ``bench.gc``'s docstring)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # python bench/gc ...

import bench.gc
from bench._results import _finite, command_line, machine_facts, write_results
from bench.gc._measures import Run
from bench.gc._report import dump, load, raw_table, report, results_points
from bench.gc._run import run_all
from bench.gc._workload import KINDS, OWNED_SHARE
from bench.rollout import Limit

ROOT = Path(__file__).resolve().parents[2]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.gc",
        description=bench.gc.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--objects", type=int, default=50000, help="start-up objects")
    p.add_argument("--kinds", type=int, default=len(KINDS), help=f"start-up kinds (1-{len(KINDS)})")
    p.add_argument("--namespaces", type=int, default=50, help="start-up namespaces")
    p.add_argument("--owners", type=int, default=1000, help="cascade owners deleted")
    p.add_argument("--dependents", type=int, default=10, help="dependents per cascade owner")
    p.add_argument(
        "--qps",
        default="unthrottled",
        help="comma-separated client limits: QPS:BURST or unthrottled (both sides alike)",
    )
    p.add_argument("--runs", type=int, default=2, help="runs per limit and side")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds for a phase")
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


def main(argv: list[str] | None = None) -> int:
    """Run, write the results; 1 when any run failed its verification."""
    args = parser().parse_args(argv)
    if not 1 <= args.kinds <= len(KINDS):
        raise SystemExit(f"--kinds must be 1..{len(KINDS)}")
    started = datetime.datetime.now(datetime.UTC)
    runs: list[Run] = []
    for path in args.merge or []:
        runs.extend(load(path))
    if args.runs > 0:
        limits = [Limit.parse(q) for q in args.qps.split(",") if q]

        def on_run(_: Run) -> None:
            if args.dump:
                dump(args.dump, runs)

        asyncio.run(run_all(limits, args, runs, on_run))
    tables = report(runs)
    raw = raw_table(runs)
    print(tables)
    print(raw)
    command = command_line("bench.gc")
    if args.out:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(
            "# Garbage-collector benchmark: kcontrol-manager and kube-controller-manager "
            "(generated)\n\n"
            f"- Command: `{command}`\n"
            f"- Finished {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC at commit "
            f"{commit} (and the working tree of the time); method: `bench/gc/__init__.py`\n\n"
            + tables
            + "\n\n## Raw runs\n\n"
            + raw
            + "\n"
        )
    document = {
        "started": started,
        "finished": datetime.datetime.now(datetime.UTC),
        "machine": machine_facts([r.load for r in runs], go=False),
        "command": command,
        "parameters": {
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
        "points": results_points(runs),
    }
    if args.json:
        write_results(
            args.json,
            "gc",
            **document,  # type: ignore[arg-type]
            runs=[dataclasses.asdict(r) for r in runs],
        )
    if args.plot:
        from bench.gc._plot import plot_gc  # noqa: PLC0415 - matplotlib only when asked

        # as bench/report.py reads it: NaN (not measured) as None
        doc = json.loads(json.dumps(_finite(document), default=str))
        doc["measured"] = {"date": f"{started:%Y-%m-%d}"}
        print(plot_gc(doc, Path(args.plot)))
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
