"""Metadata-only informers against full ones: what one cached object costs.

A fresh envtest control plane; ``--objects`` N realistic pods (``bench/_pods.py``: labels,
an ownerReference, two containers; ~3.9 KB of JSON each as stored, 1.6 KB of it
managedFields) and N ConfigMaps holding ~2 KB of ``data`` each, in namespace ``bench``. For
each kind, ``--runs`` times, each variant syncs one kcontrol informer
(``SharedInformerFactory``, default settings) in a process of its own, alternating:

==================  ==========================================================================
variant             informer
==================  ==========================================================================
``full``            ``for_resource(kind)``: whole objects
``metadata``        ``for_resource(kind, metadata_only=True)``: ``PartialObjectMetadata``
                    lists and watches, ``apiVersion``/``kind``/``metadata`` cached
``full trim``       ``full`` with ``strip_managed_fields`` (as kcontrol-manager runs its
                    informers)
``metadata trim``   ``metadata`` with ``strip_managed_fields``
==================  ==========================================================================

Figures, per cached object:

- ``RSS``: (settled VmRSS after the sync - settled VmRSS before it) / N, less the same
  difference of one run against an empty namespace (the connection, TLS and informer
  machinery that do not grow with N); "settled" is after ``gc.collect()`` and
  ``malloc_trim(0)``, as in ``bench/informer/``;
- ``objects``: the bytes of the cached dicts themselves - ``sys.getsizeof`` of every
  container, string and number reachable from the cache, each counted once (strings the
  informer interned are shared across objects) - free of the allocator's noise;
- ``LIST body``: the uncompressed JSON of one LIST of the namespace, with the metadata-only
  Accept header or without, / N (what crosses the wire and is decoded before the cache);
- the sync's wall and CPU seconds, from starting the informer to ``has_synced``.

Usage (from the repository root)::

    .venv/bin/python -m bench.metadata [--objects 2000] [--kinds pods,configmaps] [--runs 3] \\
        [--out results.md] [--json bench/results/metadata.json]
"""

# Children import what they measure, and the orchestrator the control plane, lazily.
# ruff: noqa: PLC0415

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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # python bench/metadata.py

from bench._process import load_average, self_cpu, settled_rss_kb
from bench._results import command_line, machine_facts, write_results

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "bench"
EMPTY_NAMESPACE = "empty"
RESULT = "RESULT "
VARIANTS: dict[str, tuple[bool, bool]] = {
    "full": (False, False),
    "metadata": (True, False),
    "full trim": (False, True),
    "metadata trim": (True, True),
}
"""Variant -> (metadata_only, strip_managed_fields)."""
KINDS = ("pods", "configmaps")
ACCEPT_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"


# -- the measured child ----------------------------------------------------------------------


def deep_size(roots: Iterable[Any]) -> int:
    """``sys.getsizeof`` summed over everything reachable from ``roots`` through dicts,
    lists and tuples, each object counted once."""
    seen: set[int] = set()
    stack = list(roots)
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple):
            stack.extend(obj)
    return total


async def run_child(args: argparse.Namespace) -> dict[str, Any]:
    from kcontrol.client import CONFIGMAPS, PODS, ApiClient, load_config
    from kcontrol.informers import SharedInformerFactory, strip_managed_fields

    metadata_only, trim = VARIANTS[args.variant]
    resource = {"pods": PODS, "configmaps": CONFIGMAPS}[args.kind]
    config = await load_config(kubeconfig=args.kubeconfig)
    async with ApiClient(config, qps=0) as client:
        factory = SharedInformerFactory(
            client, namespace=args.namespace, transform=strip_managed_fields if trim else None
        )
        informer = factory.for_resource(resource, metadata_only=metadata_only)
        before_kb = settled_rss_kb()
        wall, cpu = time.perf_counter(), self_cpu()
        async with asyncio.TaskGroup() as group:
            task = group.create_task(factory.run())
            await informer.wait_for_cache_sync()
            wall, cpu = time.perf_counter() - wall, self_cpu() - cpu
            after_kb = settled_rss_kb()
            cached = informer.indexer.list()
            result = {
                "objects": len(cached),
                "rss_delta_kb": after_kb - before_kb,
                "object_bytes": deep_size(cached),
                "sync_wall_seconds": wall,
                "sync_cpu_seconds": cpu,
            }
            task.cancel()
    return result


def child_main(args: argparse.Namespace) -> None:
    import logging

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    result = asyncio.run(run_child(args))
    sys.stdout.write(RESULT + json.dumps(result) + "\n")


# -- the orchestrator ------------------------------------------------------------------------


def configmap_manifest(i: int, namespace: str, rng: random.Random) -> dict[str, Any]:
    """ConfigMap number ``i``: the labels and ownerReference of a pod, ~2 KB of data."""
    owner = f"app-{i % 10}-{i % 50:02d}"
    lines = [f"key{k:02d}: {rng.getrandbits(96):024x}" for k in range(48)]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{owner}-config-{i:06d}",
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": f"app-{i % 10}", "tier": "backend"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": owner,
                    "uid": f"c0ffee00-0000-4000-8000-{i % 50:012x}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": {"config.yaml": "\n".join(lines), "mode": "production"},
    }


async def populate(cp: Any, count: int, kinds: list[str]) -> dict[str, dict[str, float]]:
    """Create the objects; return the LIST body bytes per object of each kind, whole and
    metadata-only (uncompressed)."""
    from bench._pods import create_namespace, create_pods
    from kcontrol.client import CONFIGMAPS, PODS, ApiClient, ClientConfig

    config = ClientConfig.from_kube_configuration(await cp.kube_configuration())
    async with ApiClient(config, qps=0, timeout=120) as client:
        await create_namespace(client, NAMESPACE)
        await create_namespace(client, EMPTY_NAMESPACE)
        if "pods" in kinds:
            await create_pods(client, NAMESPACE, count)
        if "configmaps" in kinds:
            rng = random.Random(42)
            manifests = iter([configmap_manifest(i, NAMESPACE, rng) for i in range(count)])

            async def worker() -> None:
                for manifest in manifests:
                    await client.create(CONFIGMAPS, manifest, namespace=NAMESPACE)

            async with asyncio.TaskGroup() as group:
                for _ in range(32):
                    group.create_task(worker())
    wire: dict[str, dict[str, float]] = {}
    for kind in kinds:
        resource = {"pods": PODS, "configmaps": CONFIGMAPS}[kind]
        path = resource.path(NAMESPACE)
        wire[kind] = {
            "full": len(await raw_list(cp, path, "application/json")) / count,
            "metadata": len(await raw_list(cp, path, ACCEPT_LIST)) / count,
        }
    return wire


async def raw_list(cp: Any, path: str, accept: str) -> bytes:
    import aiohttp

    headers = {
        "Authorization": f"Bearer {cp.token()}",
        "Accept": accept,
        "Accept-Encoding": "identity",
    }
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=cp.ssl_context())) as session,
        session.get(cp.host + path, headers=headers) as response,
    ):
        response.raise_for_status()
        return await response.read()


def run_variant(kubeconfig: str, kind: str, variant: str, namespace: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "bench.metadata", "--child", "--kubeconfig", kubeconfig]
    argv += ["--kind", kind, "--variant", variant, "--namespace", namespace]
    proc = subprocess.run(argv, check=False, capture_output=True, text=True, cwd=ROOT, timeout=600)
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT):
            return dict(json.loads(line[len(RESULT) :]))
    raise RuntimeError(f"{kind}/{variant} failed (rc {proc.returncode}):\n{proc.stderr[-3000:]}")


async def measure(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[float]]:
    from kcontrol.envtest import ControlPlane

    kinds = [k for k in args.kinds.split(",") if k]
    loads: list[float] = []
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    empty: dict[tuple[str, str], dict[str, Any]] = {}
    async with ControlPlane(start_timeout=120) as cp:
        wire = await populate(cp, args.objects, kinds)
        kubeconfig = str(cp.kubeconfig_path)
        for kind in kinds:
            for variant in VARIANTS:
                empty[kind, variant] = await asyncio.to_thread(
                    run_variant, kubeconfig, kind, variant, EMPTY_NAMESPACE
                )
        for run in range(args.runs):
            for kind in kinds:
                for variant in VARIANTS:
                    result = await asyncio.to_thread(
                        run_variant, kubeconfig, kind, variant, NAMESPACE
                    )
                    runs.setdefault((kind, variant), []).append(result)
                    loads.append(load_average())
                    print(f"run {run + 1} {kind} {variant}: {result}", file=sys.stderr)
    points = []
    for (kind, variant), results in runs.items():
        n = results[0]["objects"]
        fixed_kb = empty[kind, variant]["rss_delta_kb"]
        rss = [(r["rss_delta_kb"] - fixed_kb) * 1024 / n for r in results]
        points.append(
            {
                "implementation": "kcontrol",
                "kind": kind,
                "variant": variant,
                "objects": n,
                "rss_bytes_per_object": statistics.median(rss),
                "object_bytes_per_object": statistics.median(
                    r["object_bytes"] / n for r in results
                ),
                "list_body_bytes_per_object": wire[kind][variant.split()[0]],
                "sync_wall_seconds": statistics.median(r["sync_wall_seconds"] for r in results),
                "sync_cpu_seconds": statistics.median(r["sync_cpu_seconds"] for r in results),
                "runs": results,
            }
        )
    return points, loads


def table(points: list[dict[str, Any]]) -> str:
    lines = [
        "| kind | objects | informer | RSS B/object | objects B/object | LIST body B/object "
        "| sync wall s | sync CPU s |",
        "|---|--:|---|--:|--:|--:|--:|--:|",
    ]
    for p in points:
        lines.append(
            f"| {p['kind']} | {p['objects']:,} | {p['variant']} "
            f"| {p['rss_bytes_per_object']:,.0f} | {p['object_bytes_per_object']:,.0f} "
            f"| {p['list_body_bytes_per_object']:,.0f} "
            f"| {p['sync_wall_seconds']:.2f} | {p['sync_cpu_seconds']:.2f} |"
        )
    lines.append("")
    for kind in sorted({p["kind"] for p in points}):
        by = {p["variant"]: p for p in points if p["kind"] == kind}
        for full, metadata in (("full", "metadata"), ("full trim", "metadata trim")):
            if full in by and metadata in by:
                rss = by[metadata]["rss_bytes_per_object"] / by[full]["rss_bytes_per_object"]
                size = by[metadata]["object_bytes_per_object"] / by[full]["object_bytes_per_object"]
                lines.append(
                    f"- {kind}, {metadata} against {full}: {rss:.0%} of the RSS, "
                    f"{size:.0%} of the objects' bytes"
                )
    return "\n".join(lines) + "\n"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.metadata",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--objects", type=int, default=2000, help="objects of each kind")
    p.add_argument("--kinds", default=",".join(KINDS), help="comma list: pods,configmaps")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", help="also write the table (Markdown) to this file")
    p.add_argument("--json", help="write the results (bench/_results.py's format) to this file")
    # child mode (internal)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    p.add_argument("--kind", choices=KINDS, help=argparse.SUPPRESS)
    p.add_argument("--variant", choices=tuple(VARIANTS), help=argparse.SUPPRESS)
    p.add_argument("--namespace", default=NAMESPACE, help=argparse.SUPPRESS)
    return p


def main() -> None:
    args = parser().parse_args()
    if args.child:
        child_main(args)
        return
    started = datetime.datetime.now(datetime.UTC)
    points, loads = asyncio.run(measure(args))
    finished = datetime.datetime.now(datetime.UTC)
    text = table(points)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if args.json:
        write_results(
            args.json,
            "metadata",
            started=started,
            finished=finished,
            machine=machine_facts(loads, go=False),
            command=command_line("bench.metadata"),
            parameters={"objects": args.objects, "kinds": args.kinds, "runs": args.runs},
            points=points,
        )


if __name__ == "__main__":
    main()
