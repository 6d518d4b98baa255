"""Decode benchmark (benchmarks.md, scenario 1): how should LIST and watch bodies be decoded?

Generates a PodList of realistic pods (~2 KB of JSON each: labels, ownerReferences, two
containers with env/ports/resources/probes, status with conditions and containerStatuses,
managedFields), then measures, per decoder:

- ``us/obj``: wall time per pod to decode the whole list (median over rounds; the decoders are
  interleaved A, B, C, A, B, C... so machine noise hits them alike), and CPU time per pod;
- ``B/obj``: bytes retained per pod by the decoded result (tracemalloc, separate pass so the
  tracing overhead does not distort the timings).

The ``watch`` rows decode the same pods as newline-delimited watch events, one
``{"type": "ADDED", "object": ...}`` line at a time, which is what a watch stream costs.

Usage: ``.venv/bin/python -m bench.decode [-n 10000] [--rounds 5] [--body saved-podlist.json]
[--out decode.md] [--json decode.json]`` (``python bench/decode.py`` works too).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import importlib.metadata
import json
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import orjson
from kubernetes_asyncio.client import ApiClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # python bench/decode.py

from bench._process import load_average
from bench._results import command_line, machine_facts, write_results
from kcontrol.client._decode import decode_list
from kcontrol.client._watch import parse_event
from kcontrol.informers import intern_strings

# --------------------------------------------------------------------------- pod generator

_IMAGES = [
    "registry.k8s.io/e2e-test-images/agnhost:2.53",
    "docker.io/library/nginx:1.27.3",
    "quay.io/prometheus/node-exporter:v1.8.2",
    "ghcr.io/example/payments-api:2024.11.07-3f9a2c1",
    "registry.k8s.io/pause:3.10",
]
_SIDECARS = [
    "docker.io/envoyproxy/envoy:v1.31.2",
    "ghcr.io/example/log-shipper:0.19.1",
]


def _managed_fields(labels: dict[str, str], containers: list[str]) -> list[dict[str, Any]]:
    label_fields: dict[str, Any] = {".": {}}
    label_fields.update({f"f:{k}": {} for k in labels})
    container_fields = {
        f'k:{{"name":"{c}"}}': {".": {}, "f:image": {}, "f:name": {}} for c in containers
    }
    return [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-01-12T09:14:03Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": label_fields, "f:ownerReferences": {}},
                "f:spec": {"f:containers": container_fields},
            },
        },
    ]


def make_pod(i: int, rng: random.Random) -> dict[str, Any]:
    """One pod owned by one of 50 ReplicaSets, scheduled on one of 100 nodes."""
    rs = i % 50
    app = f"app-{rs % 10}"
    rs_name = f"{app}-{rs:02d}-7d9f8b6c5d"
    name = f"{rs_name}-{rng.randrange(36**5):05x}"
    labels = {
        "app.kubernetes.io/name": app,
        "pod-template-hash": "7d9f8b6c5d",
        "tier": "backend" if rs % 2 else "frontend",
    }
    a, b, c, d, e = (rng.getrandbits(bits) for bits in (32, 16, 16, 16, 48))
    uid = f"{a:08x}-{b:04x}-{c:04x}-{d:04x}-{e:012x}"
    image = _IMAGES[rs % len(_IMAGES)]
    sidecar = _SIDECARS[rs % len(_SIDECARS)]
    node = f"node-{rng.randrange(100):03d}"
    started = f"2026-01-12T09:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z"
    probe = {
        "httpGet": {"path": "/healthz", "port": 8080},
        "periodSeconds": 10,
        "failureThreshold": 3,
    }
    containers = [
        {
            "name": "main",
            "image": image,
            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
            "env": [
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "GOMAXPROCS", "value": "2"},
            ],
            "resources": {
                "limits": {"cpu": "500m", "memory": "256Mi"},
                "requests": {"cpu": "100m", "memory": "128Mi"},
            },
            "readinessProbe": probe,
            "imagePullPolicy": "IfNotPresent",
        },
        {
            "name": "sidecar",
            "image": sidecar,
            "ports": [{"containerPort": 9901, "protocol": "TCP"}],
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
            "imagePullPolicy": "IfNotPresent",
        },
    ]
    conditions = [
        {"type": t, "status": "True", "lastTransitionTime": started}
        for t in ("Initialized", "Ready", "PodScheduled")
    ]
    container_statuses = [
        {
            "name": c["name"],
            "state": {"running": {"startedAt": started}},
            "ready": True,
            "restartCount": 0,
            "image": c["image"],
            "imageID": c["image"].split(":")[0] + f"@sha256:{rng.getrandbits(256):064x}",
            "containerID": f"containerd://{rng.getrandbits(256):064x}",
            "started": True,
        }
        for c in containers
    ]
    return {
        "metadata": {
            "name": name,
            "generateName": rs_name + "-",
            "namespace": "shop",
            "uid": uid,
            "resourceVersion": str(100000 + i),
            "creationTimestamp": started,
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": rs_name,
                    "uid": f"c0ffee00-0000-4000-8000-{rs:012x}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": _managed_fields(labels, [c["name"] for c in containers]),
        },
        "spec": {
            "containers": containers,
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": node,
        },
        "status": {
            "phase": "Running",
            "conditions": conditions,
            "podIP": f"10.244.{i // 250 % 250}.{i % 250 + 2}",
            "startTime": started,
            "containerStatuses": container_statuses,
            "qosClass": "Burstable",
        },
    }


def make_pod_list(n: int) -> tuple[bytes, list[bytes]]:
    """(PodList JSON, watch event lines) for ``n`` pods. The two carry the same pods."""
    rng = random.Random(42)
    pods = [make_pod(i, rng) for i in range(n)]
    for p in pods:
        p["kind"] = "Pod"
        p["apiVersion"] = "v1"
    body = {
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": str(100000 + n)},
        "items": pods,
    }
    lines = [orjson.dumps({"type": "ADDED", "object": p}) + b"\n" for p in pods]
    return orjson.dumps(body), lines


def load_pod_list(path: str) -> tuple[bytes, list[bytes]]:
    """(PodList JSON, watch event lines) from a LIST body saved from an apiserver."""
    with open(path, "rb") as f:
        body = f.read()
    pods = orjson.loads(body)["items"]
    lines = [orjson.dumps({"type": "ADDED", "object": p}) + b"\n" for p in pods]
    return body, lines


# --------------------------------------------------------------------------- decoders


def _kubernetes_asyncio_decoder() -> tuple[Callable[[bytes], Any], Callable[[], None]]:
    """The generated-models path kubernetes_asyncio's typed API methods use."""
    loop = asyncio.new_event_loop()
    client = loop.run_until_complete(_make_async(ApiClient))

    class _Response:
        def __init__(self, data: bytes) -> None:
            self.data = data

    def decode(data: bytes) -> Any:
        return client.deserialize(_Response(data), "V1PodList")

    def close() -> None:
        loop.run_until_complete(client.close())
        loop.close()

    return decode, close


async def _make_async(factory: Callable[[], Any]) -> Any:
    return factory()


class _Meta(msgspec.Struct):
    name: str
    namespace: str = ""
    uid: str = ""
    resourceVersion: str = ""
    labels: dict[str, str] = {}


class _Container(msgspec.Struct):
    name: str
    image: str = ""


class _PodSpec(msgspec.Struct):
    containers: list[_Container] = []
    nodeName: str = ""


class _Condition(msgspec.Struct):
    type: str
    status: str


class _PodStatus(msgspec.Struct):
    phase: str = ""
    conditions: list[_Condition] = []


class _Pod(msgspec.Struct):
    metadata: _Meta
    spec: _PodSpec
    status: _PodStatus


class _ListMeta(msgspec.Struct):
    resourceVersion: str = ""


class _PodList(msgspec.Struct):
    metadata: _ListMeta
    items: list[_Pod]


class _PodEvent(msgspec.Struct):
    type: str
    object: _Pod


_intern = sys.intern


def intern_values(obj: Any) -> Any:
    """Replace every short string value with its interned copy, in place (lossless)."""
    if type(obj) is dict:
        for k, v in obj.items():
            t = type(v)
            if t is str:
                if len(v) <= 64:
                    obj[k] = _intern(v)
            elif t is dict or t is list:
                intern_values(v)
    elif type(obj) is list:
        for i, v in enumerate(obj):
            t = type(v)
            if t is str:
                if len(v) <= 64:
                    obj[i] = _intern(v)
            elif t is dict or t is list:
                intern_values(v)
    return obj


def gc_paused(decode: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """``decode`` with the cyclic GC paused for the call (it finds nothing to free in fresh JSON)."""

    def wrapped(data: bytes) -> Any:
        if not gc.isenabled():
            return decode(data)
        gc.disable()
        try:
            return decode(data)
        finally:
            gc.enable()

    return wrapped


def _decoders() -> Decoders:
    """name -> (input kind, decode). Input kind is "list" (one body) or "watch" (lines)."""
    msgspec_any = msgspec.json.Decoder()
    msgspec_typed = msgspec.json.Decoder(_PodList)
    msgspec_event = msgspec.json.Decoder(_PodEvent)
    return {
        "stdlib json": ("list", json.loads),
        "orjson": ("list", orjson.loads),
        "orjson, GC paused": ("list", gc_paused(orjson.loads)),
        "orjson + intern values": ("list", lambda b: intern_values(orjson.loads(b))),
        "msgspec untyped": ("list", msgspec_any.decode),
        "msgspec untyped, GC paused": ("list", gc_paused(msgspec_any.decode)),
        "msgspec untyped + intern": ("list", lambda b: intern_values(msgspec_any.decode(b))),
        "msgspec typed Struct (lossy)": ("list", msgspec_typed.decode),
        "kcontrol decode_list (fieldsV1 raw)": ("list", lambda b: decode_list(b, _same)),
        "kcontrol decode_list + intern_strings": ("list", lambda b: decode_list(b, intern_strings)),
        "watch lines: stdlib json": ("watch", json.loads),
        "watch lines: orjson": ("watch", orjson.loads),
        "watch lines: msgspec untyped": ("watch", msgspec_any.decode),
        "watch lines: msgspec typed (lossy)": ("watch", msgspec_event.decode),
        "watch lines: kcontrol parse_event (fieldsV1 raw)": ("watch", parse_event),
    }


def _same(obj: Any) -> Any:
    return obj


# --------------------------------------------------------------------------- measurement


def _run(kind: str, decode: Callable[[bytes], Any], body: bytes, lines: list[bytes]) -> Any:
    if kind == "list":
        return decode(body)
    return [decode(line) for line in lines]


def _time_once(
    kind: str, decode: Callable[[bytes], Any], body: bytes, lines: list[bytes]
) -> tuple[float, float, float]:
    """(wall, CPU, wall of a young-generation collection right after, result still alive).

    Pausing the GC defers work: the next collection of generations 0 and 1 traverses every
    object decoded while it was paused, which the unpaused decoders have already paid for.
    So compare decode + that collection too.
    """
    gc.collect()
    w0, c0 = time.perf_counter(), time.process_time()
    result = _run(kind, decode, body, lines)
    w1, c1 = time.perf_counter(), time.process_time()
    gc.collect(1)
    w2 = time.perf_counter()
    del result
    gc.collect()
    return w1 - w0, c1 - c0, w2 - w1


def _retained(kind: str, decode: Callable[[bytes], Any], body: bytes, lines: list[bytes]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = _run(kind, decode, body, lines)
        if kind == "watch":  # the outer list is an artefact of the benchmark
            result = [ev["object"] if isinstance(ev, dict) else ev.object for ev in result]
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        # the list that holds the watch results is the benchmark's, not the decoder's
        overhead = sys.getsizeof(result) if kind == "watch" else 0
        del result
        return after - before - overhead
    finally:
        tracemalloc.stop()


Decoders = dict[str, tuple[str, Callable[[bytes], Any]]]


def _measure(
    decoders: Decoders, body: bytes, lines: list[bytes], rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, list[float]], dict[str, int]]:
    """Per decoder: wall, CPU, and wall incl. deferred GC per round (seconds); retained bytes."""
    wall: dict[str, list[float]] = {name: [] for name in decoders}
    cpu: dict[str, list[float]] = {name: [] for name in decoders}
    settle: dict[str, list[float]] = {name: [] for name in decoders}
    for kind, decode in decoders.values():  # warm-up
        _run(kind, decode, body, lines)
    for _ in range(rounds):  # interleaved: A, B, C, A, B, C, ...
        for name, (kind, decode) in decoders.items():
            w, c, g = _time_once(kind, decode, body, lines)
            wall[name].append(w)
            cpu[name].append(c)
            settle[name].append(w + g)
    retained = {
        name: _retained(kind, decode, body, lines) for name, (kind, decode) in decoders.items()
    }
    return wall, cpu, settle, retained


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=10000, help="pods in the list")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per decoder")
    parser.add_argument("--skip-models", action="store_true", help="skip the slow generated models")
    parser.add_argument("--only", help="comma-separated substrings: run matching decoders only")
    parser.add_argument(
        "--body", help="decode this saved PodList body (e.g. `curl .../api/v1/pods`), not -n pods"
    )
    parser.add_argument("--out", help="also write the table (Markdown) to this file")
    parser.add_argument("--json", help="write the results (bench/_results.py's format) here")
    args = parser.parse_args()
    started = datetime.datetime.now(datetime.UTC)
    loads = [load_average()]

    body, lines = load_pod_list(args.body) if args.body else make_pod_list(args.n)
    args.n = len(lines)
    intro = f"{args.n} pods, {len(body) / args.n:.0f} B of JSON per pod, Python {sys.version.split()[0]}"
    print(intro)

    decoders = _decoders()
    if args.only:
        wanted = [w.strip() for w in args.only.split(",")]
        decoders = {
            k: v for k, v in decoders.items() if k == "orjson" or any(w in k for w in wanted)
        }
    close_models = None
    if not args.skip_models:
        decode_models, close_models = _kubernetes_asyncio_decoder()
        decoders = {"kubernetes_asyncio models": ("list", decode_models), **decoders}

    try:
        wall, cpu, settle, retained = _measure(decoders, body, lines, args.rounds)
    finally:
        if close_models is not None:
            close_models()
    loads.append(load_average())

    base = statistics.median(wall["orjson"])
    points = []
    table = [
        f"| decoder | us/obj (median of {args.rounds}) | CPU us/obj | vs orjson "
        "| us/obj incl. deferred young-gen GC | retained B/obj |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in decoders:
        w = statistics.median(wall[name])
        c = statistics.median(cpu[name])
        g = statistics.median(settle[name])
        table.append(
            f"| {name} | {w / args.n * 1e6:.1f} | {c / args.n * 1e6:.1f} | {w / base:.2f}x "
            f"| {g / args.n * 1e6:.1f} | {retained[name] / args.n:,.0f} |"
        )
        points.append(
            {
                "implementation": name,
                "input": decoders[name][0],
                "objects": args.n,
                "runs": args.rounds,
                "us_per_object": w / args.n * 1e6,
                "cpu_us_per_object": c / args.n * 1e6,
                "us_per_object_with_deferred_gc": g / args.n * 1e6,
                "retained_bytes_per_object": retained[name] / args.n,
                "wall_vs_orjson": w / base,
            }
        )
    print()
    print("\n".join(table))
    if args.out:
        Path(args.out).write_text(
            f"# Decoding (`bench/decode.py`)\n\nMeasured {started:%Y-%m-%d %H:%M} UTC: {intro} "
            f"({'saved body ' + args.body if args.body else 'synthetic pods'}), median of "
            f"{args.rounds} rounds, 1-minute load {min(loads):.2f}-{max(loads):.2f}.\n\n"
            + "\n".join(table)
            + "\n"
        )
    if args.json:
        machine = machine_facts(loads, go=False, kubernetes=False)
        machine["libraries"] = {
            lib: importlib.metadata.version(lib)
            for lib in ("orjson", "msgspec", "kubernetes_asyncio")
        }
        write_results(
            args.json,
            "decode",
            started=started,
            finished=datetime.datetime.now(datetime.UTC),
            machine=machine,
            command=command_line("bench.decode"),
            parameters={
                "objects": args.n,
                "rounds": args.rounds,
                "json_bytes_per_object": len(body) / args.n,
                "body": args.body,
            },
            points=points,
        )


if __name__ == "__main__":
    main()
