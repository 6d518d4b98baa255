"""The CPU of one write, kcontrol's client against client-go's (``python -m bench.writes``).

A rollout is mostly writes: at bench/rollout's 50x3 cell with pods Ready at once, each
Deployment's update costs about 46 of them (statuses, scales, events, pods), and the
controller process pays for each - encoding the body, the HTTP exchange, decoding the
answer. This measures that cost alone, per request, on both sides, against one local
kube-apiserver (kcontrol.envtest): no informer, no controller, no cluster timing.

Each side runs as a child process, in turns, ``--runs`` times. A child creates one
ReplicaSet per worker (not measured), then runs four phases of ``--ops`` operations each,
``--concurrency`` workers at a time (a controller's workers), each worker writing its own
ReplicaSet so nothing conflicts:

- ``status``: PUT the ReplicaSet's status subresource, the object as last answered with a
  count toggled (the ReplicaSet controller's status write);
- ``scale``: change ``spec.replicas`` as each side's Deployment controller does - client-go
  PUTs the whole object, kcontrol sends a JSON merge patch with the resourceVersion;
- ``event``: POST a core/v1 Event (an event recorder's write);
- ``pod``: POST a pod from the ReplicaSet's template, then DELETE it (two requests per op).

Sides: ``kcontrol`` (``ApiClient`` as kcontrol-manager runs it: uvloop when installed, no
client-side limit, JSON); ``client-go kcm`` (bench/reference/writes, protobuf as
kube-controller-manager sends and accepts); ``client-go json`` (client-go's default wire
format, the same bytes as kcontrol's). Reported: the process's CPU per request (user +
system, every thread) and wall per request, medians over runs, and kcontrol's ratios.
What it does not include: a controller's own work around the write (the sync that decides
it), which bench/syncs times.
"""

# ruff: noqa: PLC0415

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._process import load_average, self_cpu

PHASES = ("status", "scale", "event", "pod")
SIDES = ("kcontrol", "client-go kcm", "client-go json")
NAMESPACE = "bench-writes"
LABELS = {"app": "w", "pod-template-hash": "5d8f7c9b4"}


# ---------------------------------------------------------------------- the kcontrol child


def replica_set(name: str) -> dict[str, Any]:
    labels = {**LABELS, "app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.k8s.io/pause:3.10",
                            "ports": [{"containerPort": 8080, "name": "http"}],
                        }
                    ]
                },
            },
        },
    }


def event_body(namespace: str, rs: dict[str, Any], i: int) -> dict[str, Any]:
    meta = rs["metadata"]
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{time.time_ns() + i:x}", "namespace": namespace},
        "involvedObject": {
            "kind": "ReplicaSet",
            "namespace": namespace,
            "name": meta["name"],
            "uid": meta["uid"],
            "apiVersion": "apps/v1",
            "resourceVersion": meta["resourceVersion"],
        },
        "reason": "SuccessfulCreate",
        "message": f"Created pod: {meta['name']}-{i}",
        "source": {"component": "replicaset-controller"},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "type": "Normal",
    }


def pod_body(rs: dict[str, Any], i: int) -> dict[str, Any]:
    from kcontrol.client import deep_copy

    meta, template = rs["metadata"], rs["spec"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{meta['name']}-{i}",
            "labels": dict(template["metadata"]["labels"]),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": deep_copy(template["spec"]),
    }


async def kcontrol_child(args: argparse.Namespace) -> None:
    from kcontrol.client import EVENTS, PODS, REPLICASETS, ApiClient, PatchType, load_config
    from kcontrol.client import deep_copy as copy_of

    config = await load_config(kubeconfig=args.kubeconfig)
    ns = args.namespace
    async with ApiClient(config, qps=0, user_agent="kcontrol-bench-writes") as client:
        suffix = time.time_ns() % 1_000_000
        owned = [
            await client.create(REPLICASETS, replica_set(f"py-{suffix}-{w}"), namespace=ns)
            for w in range(args.concurrency)
        ]
        gc.collect()
        gc.freeze()  # as kcontrol-manager's heap after its caches synced

        async def status(w: int, i: int) -> int:
            rs = copy_of(owned[w])
            rs.setdefault("status", {})["replicas"] = i % 2
            owned[w] = await client.update_status(REPLICASETS, rs, namespace=ns)
            return 1

        async def scale(w: int, i: int) -> int:
            meta = owned[w]["metadata"]
            patch = {"metadata": {"resourceVersion": meta["resourceVersion"]}}
            patch["spec"] = {"replicas": i % 2}
            owned[w] = await client.patch(
                REPLICASETS, meta["name"], patch, namespace=ns, patch_type=PatchType.MERGE
            )
            return 1

        async def event(w: int, i: int) -> int:
            await client.create(EVENTS, event_body(ns, owned[w], i), namespace=ns)
            return 1

        async def pod(w: int, i: int) -> int:
            created = await client.create(PODS, pod_body(owned[w], i), namespace=ns)
            await client.delete(PODS, created["metadata"]["name"], namespace=ns)
            return 2

        per = args.ops // args.concurrency
        for name, op in zip(PHASES, (status, scale, event, pod), strict=True):

            async def worker(w: int, op: Any = op) -> int:
                return sum([await op(w, i) for i in range(per)])

            cpu0, wall0 = self_cpu(), time.perf_counter()
            requests = sum(await asyncio.gather(*(worker(w) for w in range(args.concurrency))))
            line = {
                "phase": name,
                "requests": requests,
                "cpu_seconds": self_cpu() - cpu0,
                "wall_seconds": time.perf_counter() - wall0,
            }
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()
        for rs in owned:
            await client.delete(REPLICASETS, rs["metadata"]["name"], namespace=ns)


def run_child(args: argparse.Namespace) -> None:
    """The kcontrol child on the loop kcontrol-manager runs (``--event-loop=auto``)."""
    from kcontrol.manager._process import run_on_loop

    async def main() -> int:
        await kcontrol_child(args)
        return 0

    run_on_loop(main(), "auto")


# ---------------------------------------------------------------------- the orchestrator


def side_argv(
    side: str, go_binary: Path | None, kubeconfig: str, namespace: str, ops: int, concurrency: int
) -> list[str]:
    """The command line of one side's child (``go_binary``: bench/reference/writes, for the
    client-go sides)."""
    if side == "kcontrol":
        return [
            *(sys.executable, "-m", "bench.writes", "--child"),
            *("--kubeconfig", kubeconfig, "--namespace", namespace),
            *("--ops", str(ops), "--concurrency", str(concurrency)),
        ]
    assert go_binary is not None
    return [
        *(str(go_binary), "-kubeconfig", kubeconfig, "-namespace", namespace),
        *("-ops", str(ops), "-concurrency", str(concurrency)),
        *(["-protobuf"] if side == "client-go kcm" else []),
    ]


def measure(argv: list[str], timeout: float) -> dict[str, dict[str, float]]:
    """Run one child; its phases by name."""
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    phases: dict[str, dict[str, float]] = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if "phase" in record:  # not a log line
                phases[record.pop("phase")] = record
    return phases


async def orchestrate(args: argparse.Namespace) -> list[dict[str, Any]]:
    from bench._reference import build_reference
    from kcontrol.client import NAMESPACES
    from kcontrol.envtest import ControlPlane

    go_binary = build_reference("writes")
    points: list[dict[str, Any]] = []
    async with ControlPlane() as cp:
        async with cp.admin_client() as client:
            await client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        kubeconfig = str(cp.kubeconfig_path)

        def argv(side: str) -> list[str]:
            return side_argv(side, go_binary, kubeconfig, NAMESPACE, args.ops, args.concurrency)

        # A warm-up of each side (the apiserver's own caches and connections), not kept.
        for side in SIDES:
            measure(argv(side), args.timeout)
        for run in range(args.runs):
            order = SIDES if run % 2 == 0 else tuple(reversed(SIDES))
            for side in order:
                load = load_average()
                phases = measure(argv(side), args.timeout)
                for phase, record in phases.items():
                    points.append(
                        {"side": side, "run": run, "phase": phase, "load": load, **record}
                    )
                print(
                    f"run {run} {side:>15}: "
                    + " ".join(
                        f"{p} {1e6 * r['cpu_seconds'] / r['requests']:.0f}us"
                        for p, r in phases.items()
                    ),
                    flush=True,
                )
    return points


def per_request(points: list[dict[str, Any]], side: str, phase: str, key: str) -> float:
    values = [p[key] / p["requests"] for p in points if p["side"] == side and p["phase"] == phase]
    return 1e6 * statistics.median(values) if values else float("nan")


def table(points: list[dict[str, Any]]) -> str:
    lines = [
        "| phase | kcontrol CPU us/request | client-go kcm (protobuf) | client-go json "
        "| kcontrol / kcm | kcontrol / json | wall us/request kcontrol / kcm / json |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for phase in PHASES:
        cpu = [per_request(points, side, phase, "cpu_seconds") for side in SIDES]
        wall = [per_request(points, side, phase, "wall_seconds") for side in SIDES]
        lines.append(
            f"| {phase} | {cpu[0]:.0f} | {cpu[1]:.0f} | {cpu[2]:.0f} | {cpu[0] / cpu[1]:.2f} "
            f"| {cpu[0] / cpu[2]:.2f} | {wall[0]:.0f} / {wall[1]:.0f} / {wall[2]:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--ops", type=int, default=2000, help="operations per phase")
    parser.add_argument("--concurrency", type=int, default=5, help="workers per side")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per child")
    parser.add_argument("--out", help="write the Markdown table here")
    parser.add_argument("--json", help="write the results (bench/_results.py's format) here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--namespace", default=NAMESPACE, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(args)
        return
    started = datetime.datetime.now(datetime.UTC)
    points = asyncio.run(orchestrate(args))
    finished = datetime.datetime.now(datetime.UTC)
    text = table(points)
    print(text)
    if args.out:
        from bench._results import command_line

        Path(args.out).write_text(
            "# Writes: CPU per request, kcontrol's client and client-go's (generated)\n\n"
            f"- Command: `{command_line('bench.writes')}`\n"
            f"- {started:%Y-%m-%d %H:%M}-{finished:%H:%M} UTC; "
            f"load {min(p['load'] for p in points):.1f}-{max(p['load'] for p in points):.1f}\n\n"
            f"{text}\n"
        )
    if args.json:
        from bench._results import command_line, machine_facts, write_results

        write_results(
            args.json,
            "writes",
            started=started,
            finished=finished,
            machine=machine_facts([p["load"] for p in points]),
            command=command_line("bench.writes"),
            parameters={"ops": args.ops, "concurrency": args.concurrency, "runs": args.runs},
            points=points,
        )


if __name__ == "__main__":
    main()
