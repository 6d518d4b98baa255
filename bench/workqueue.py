"""Work queue throughput: kcontrol.workqueue against client-go's workqueue.

Scenario (the same in both languages): one queue; a producer adds N distinct items while W
concurrent workers loop ``get -> done``; the time is from the first add until the last item is
done. Go runs ``bench/reference/workqueue`` (an unnamed client-go queue, no metrics); Python runs
an unnamed :class:`kcontrol.workqueue.Queue` and, separately, a named one that records the
``workqueue_*`` metrics on a fresh registry.

In Python the producer yields to the event loop after every ``--chunk`` adds, and a worker's
``get`` returns without suspending while items are queued, so workers interleave at those
points; Go's producer and workers run truly in parallel. Go is run with GOMAXPROCS=1 by default
(``--go-maxprocs``) so that both sides get one core.

The variants alternate within each run (A, B, C, A, B, C, ...) so background noise hits them
alike; the table shows medians over ``--runs``.

Usage: ``.venv/bin/python -m bench.workqueue [--items N] [--workers 1,4,16] [--runs 3]
[--out workqueue.md] [--json workqueue.json]`` (``python bench/workqueue.py`` works too).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from prometheus_client import CollectorRegistry

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # python bench/workqueue.py

from bench._process import load_average
from bench._reference import build_reference, client_go_version
from bench._results import command_line, machine_facts, write_results
from kcontrol.workqueue import Queue, ShutDown


async def _python_run(items: int, workers: int, chunk: int, name: str | None) -> float:
    registry = CollectorRegistry() if name else None
    queue: Queue[int] = Queue(name=name, registry=registry)
    processed = 0
    all_done = asyncio.Event()

    async def worker() -> None:
        nonlocal processed
        get, done = queue.get, queue.done
        while True:
            try:
                item = await get()
            except ShutDown:
                return
            done(item)
            processed += 1
            if processed == items:
                all_done.set()

    async with asyncio.TaskGroup() as group:
        for _ in range(workers):
            group.create_task(worker())
        await asyncio.sleep(0)  # let the workers block in get()
        start = time.perf_counter()
        add = queue.add
        for i in range(items):
            add(i)
            if i % chunk == chunk - 1:
                await asyncio.sleep(0)
        await all_done.wait()
        elapsed = time.perf_counter() - start
        queue.shutdown()
    return items / elapsed


def python_rate(items: int, workers: int, chunk: int, name: str | None) -> float:
    gc.collect()
    return asyncio.run(_python_run(items, workers, chunk, name))


def go_rate(binary: Path, items: int, workers: int, maxprocs: int) -> float:
    env = dict(os.environ)
    if maxprocs > 0:
        env["GOMAXPROCS"] = str(maxprocs)
    out = subprocess.run(
        [str(binary), "-items", str(items), "-workers", str(workers)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return float(json.loads(out.stdout)["items_per_second"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--workers", default="1,4,16", help="comma-separated worker counts")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=1000, help="Python adds between yields")
    parser.add_argument(
        "--go-maxprocs", type=int, default=1, help="GOMAXPROCS for Go (0: Go's default)"
    )
    parser.add_argument("--no-go", action="store_true", help="skip the client-go reference")
    parser.add_argument("--out", help="also write the table (Markdown) to this file")
    parser.add_argument("--json", help="write the results (bench/_results.py's format) here")
    args = parser.parse_args()
    started = datetime.datetime.now(datetime.UTC)
    worker_counts = [int(w) for w in args.workers.split(",")]

    binary = None if args.no_go else build_reference("workqueue")
    variants: dict[str, Callable[[int], float]] = {
        "python": lambda w: python_rate(args.items, w, args.chunk, None),
        "python+metrics": lambda w: python_rate(args.items, w, args.chunk, "bench"),
    }
    if binary is not None:
        variants["go"] = lambda w: go_rate(binary, args.items, w, args.go_maxprocs)

    rates: dict[tuple[str, int], list[float]] = {}
    loads: list[float] = []
    for _ in range(args.runs):
        loads.append(load_average())
        for workers in worker_counts:
            for variant, run in variants.items():
                rates.setdefault((variant, workers), []).append(run(workers))

    load = load_average()
    go_note = "" if binary is None else f", client-go {client_go_version()}"
    print(
        f"workqueue add->get->done, {args.items} items, median of {args.runs} runs "
        f"(Python {platform.python_version()}{go_note}, GOMAXPROCS={args.go_maxprocs or 'default'}, "
        f"{os.cpu_count()} CPUs, load {load:.2f})"
    )
    header = f"{'workers':>7}  " + "  ".join(f"{v + ' items/s':>22}" for v in variants)
    if binary is not None:
        header += f"  {'python/go':>9}  {'metrics/go':>10}"
    print(header)
    for workers in worker_counts:
        medians = {v: statistics.median(rates[(v, workers)]) for v in variants}
        row = f"{workers:>7}  " + "  ".join(f"{medians[v]:>22,.0f}" for v in variants)
        if binary is not None:
            row += f"  {medians['python'] / medians['go']:>9.3f}"
            row += f"  {medians['python+metrics'] / medians['go']:>10.3f}"
        print(row)

    if args.out:
        Path(args.out).write_text(markdown(args, worker_counts, rates, started, loads) + "\n")
    if args.json:
        write_results(
            args.json,
            "workqueue",
            started=started,
            finished=datetime.datetime.now(datetime.UTC),
            machine=machine_facts(loads, go=binary is not None, kubernetes=False),
            command=command_line("bench.workqueue"),
            parameters={
                "items": args.items,
                "workers": worker_counts,
                "runs": args.runs,
                "chunk": args.chunk,
                "go_maxprocs": args.go_maxprocs,
            },
            points=[
                {
                    "implementation": IMPLEMENTATIONS[variant],
                    "workers": workers,
                    "items": args.items,
                    "runs": len(samples),
                    "items_per_second": statistics.median(samples),
                    "samples_items_per_second": samples,
                }
                for (variant, workers), samples in rates.items()
            ],
        )


IMPLEMENTATIONS = {
    "python": "kcontrol",
    "python+metrics": "kcontrol, named (metrics)",
    "go": "client-go",
}
"""Variant -> the implementation's name in the results (and the table of docs/benchmarks.md)."""


def markdown(
    args: argparse.Namespace,
    worker_counts: list[int],
    rates: dict[tuple[str, int], list[float]],
    started: datetime.datetime,
    loads: list[float],
) -> str:
    """The table of docs/benchmarks.md: items/s per implementation and worker count, and the ratios."""
    go = any(v == "go" for v, _ in rates)
    lines = [
        "# Workqueue throughput (`bench/workqueue.py`)",
        "",
        f"Measured {started:%Y-%m-%d %H:%M} UTC: add -> get -> done of {args.items:,} items "
        f"through one queue, N concurrent workers, median of {args.runs} runs. Python "
        f"{platform.python_version()}"
        + (
            f"; client-go {client_go_version()} with GOMAXPROCS={args.go_maxprocs or 'default'}"
            if go
            else ""
        )
        + f"; {os.cpu_count()} CPUs, 1-minute load {min(loads):.2f}-{max(loads):.2f}.",
        "",
        "| workers | kcontrol items/s | kcontrol, named (metrics) | client-go items/s "
        "| kcontrol/Go | named/Go |",
        "|--:|--:|--:|--:|--:|--:|",
    ]
    for workers in worker_counts:
        m = {v: statistics.median(rates[(v, w)]) for v, w in rates if w == workers}
        g = m.get("go", float("nan"))
        lines.append(
            f"| {workers} | {m['python']:,.0f} | {m['python+metrics']:,.0f} | {g:,.0f} "
            f"| {m['python'] / g:.2f} | {m['python+metrics'] / g:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
