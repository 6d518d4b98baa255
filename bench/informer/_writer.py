"""The churn writer: patches an annotation holding its clock on the pods, round-robin, as
fast as ``--concurrency`` merge patches in flight allow, for ``--seconds`` after a ``go``
line on stdin; then reports patches/s. The informers watching meanwhile time the delay from
that clock to their handler call.
"""

# ruff: noqa: PLC0415

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from bench.informer._child import emit


async def run_writer(args: argparse.Namespace) -> None:
    """Patch pods round-robin as fast as possible for --seconds; emit patches/s."""
    from kcontrol.client import PODS, ApiClient, load_config

    config = await load_config(kubeconfig=args.kubeconfig)
    async with ApiClient(config, qps=0) as client:
        names = [
            p["metadata"]["name"]
            for p in (await client.list_all(PODS, namespace=args.namespace))[0]
        ]
        emit({"mode": "ready", "pods": len(names)})
        await asyncio.to_thread(sys.stdin.readline)  # "go"
        deadline = time.monotonic() + args.seconds
        done = 0
        errors = 0
        start = time.perf_counter()

        async def worker(offset: int) -> None:
            nonlocal done, errors
            i = offset
            while time.monotonic() < deadline:
                name = names[i % len(names)]
                i += args.concurrency
                patch = {"metadata": {"annotations": {"bench/ts": f"{time.time():.6f}"}}}
                try:
                    await client.patch(
                        PODS, name, patch, namespace=args.namespace, field_manager="bench"
                    )
                    done += 1
                except Exception:
                    errors += 1

        async with asyncio.TaskGroup() as group:
            for k in range(args.concurrency):
                group.create_task(worker(k))
        elapsed = time.perf_counter() - start
        emit(
            {
                "mode": "writer",
                "patches": done,
                "errors": errors,
                "seconds": elapsed,
                "patches_per_second": done / elapsed,
            }
        )
