"""A cache scoped to one namespace against an unscoped one: what an operator whose Role covers
its own namespace saves by saying so (issue 39).

A fresh envtest control plane; ``--namespaces`` namespaces (default 20) with
``--per-namespace`` ConfigMaps each (default 250; ~2 KB of data, labels and an
ownerReference: bench/metadata.py's). Each variant syncs one ConfigMap informer of a
``SharedInformerFactory`` in a process of its own, ``--runs`` times, alternating:

- ``unscoped``: every namespace (an operator with a ClusterRole, or one that never said);
- ``scoped``: ``SharedInformerFactory(client, namespace="scoped-0")`` - the one namespace.

Figures: objects cached; their bytes (``deep_size``: every container, string and number
reachable from the cache, each counted once); the process's settled RSS growth over the sync;
the sync's wall and CPU seconds. Usage::

    .venv/bin/python -m bench.scoped_cache [--namespaces 20] [--per-namespace 250] [--runs 3]
"""

# ruff: noqa: PLC0415 - children import what they measure, the orchestrator the control plane

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._process import load_average, self_cpu, settled_rss_kb
from bench.metadata import configmap_manifest, deep_size

RESULT = "RESULT "
VARIANTS = ("unscoped", "scoped")


async def run_child(kubeconfig: str, variant: str) -> dict[str, Any]:
    from kcontrol.client import CONFIGMAPS, ApiClient, load_config
    from kcontrol.informers import SharedInformerFactory

    config = await load_config(kubeconfig=kubeconfig)
    async with ApiClient(config, qps=0) as client:
        namespace = "scoped-0" if variant == "scoped" else None
        factory = SharedInformerFactory(client, namespace=namespace)
        informer = factory.for_resource(CONFIGMAPS)
        before_kb = settled_rss_kb()
        wall, cpu = time.perf_counter(), self_cpu()
        async with asyncio.TaskGroup() as group:
            task = group.create_task(factory.run())
            await informer.wait_for_cache_sync()
            wall, cpu = time.perf_counter() - wall, self_cpu() - cpu
            cached = [
                o for o in informer.indexer.list() if o["metadata"]["name"] != "kube-root-ca.crt"
            ]
            result = {
                "objects": len(cached),
                "object_bytes": deep_size(informer.indexer.list()),
                "rss_delta_kb": settled_rss_kb() - before_kb,
                "sync_wall_seconds": wall,
                "sync_cpu_seconds": cpu,
            }
            task.cancel()
    return result


async def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    from kcontrol.client import CONFIGMAPS, NAMESPACES
    from kcontrol.envtest import ControlPlane

    rng = random.Random(7)
    points: list[dict[str, Any]] = []
    semaphore = asyncio.Semaphore(32)
    async with ControlPlane() as plane, plane.admin_client() as client:
        for n in range(args.namespaces):
            namespace = f"scoped-{n}"
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})

            async def create(i: int, namespace: str = namespace) -> None:
                async with semaphore:
                    await client.create(
                        CONFIGMAPS, configmap_manifest(i, namespace, rng), namespace=namespace
                    )

            await asyncio.gather(*(create(i) for i in range(args.per_namespace)))
        for run in range(args.runs):
            order = VARIANTS if run % 2 == 0 else VARIANTS[::-1]
            for variant in order:
                done = await asyncio.to_thread(
                    subprocess.run,
                    [
                        sys.executable,
                        "-m",
                        "bench.scoped_cache",
                        "--child",
                        variant,
                        "--kubeconfig",
                        str(plane.kubeconfig_path),
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                line = next(li for li in done.stdout.splitlines() if li.startswith(RESULT))
                point = {
                    "variant": variant,
                    "run": run,
                    "load": load_average(),
                    **json.loads(line[len(RESULT) :]),
                }
                points.append(point)
                print(point, flush=True)
    return points


def table(points: list[dict[str, Any]], args: argparse.Namespace) -> str:
    rows = [
        f"# A ConfigMap cache scoped to 1 of {args.namespaces} namespaces ({args.per_namespace}"
        f" ConfigMaps each), medians of {args.runs} runs, "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        "",
        "| variant | objects | object MB | RSS growth MB | sync wall s | sync CPU s |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for variant in VARIANTS:
        mine = [p for p in points if p["variant"] == variant]

        def med(key: str, mine: list[dict[str, Any]] = mine) -> float:
            return float(statistics.median(p[key] for p in mine))

        rows.append(
            f"| {variant} | {med('objects'):.0f} | {med('object_bytes') / 1e6:.1f} | "
            f"{med('rss_delta_kb') / 1024:.1f} | {med('sync_wall_seconds'):.2f} | "
            f"{med('sync_cpu_seconds'):.2f} |"
        )
    return "\n".join(rows) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.scoped_cache", description=__doc__)
    p.add_argument("--namespaces", type=int, default=20)
    p.add_argument("--per-namespace", type=int, default=250)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", help="write the table (Markdown) here")
    p.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    p.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        import logging

        logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
        result = asyncio.run(run_child(args.kubeconfig, args.child))
        sys.stdout.write(RESULT + json.dumps(result) + "\n")
        return
    text = table(asyncio.run(measure(args)), args)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
