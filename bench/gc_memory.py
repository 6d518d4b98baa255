"""What one object costs the garbage collector, against a metadata-only cache.

``--objects`` N ConfigMap-like objects, each with realistic metadata (two labels, one
annotation, one ownerReference with ``controller`` and ``blockOwnerDeletion``, one
managedFields entry), decoded from JSON as the reflector decodes a LIST. Retained bytes per
object (``tracemalloc``, after the JSON is dropped), for:

==========================  =====================================================================
variant                     what is kept
==========================  =====================================================================
``gc cache``                the collector's monitor store alone: ``graph_metadata`` objects
                            (owner references shared, namespace and kind interned, nothing
                            else: the monitors' reflectors do not intern)
``gc``                      ``gc cache`` plus one graph node per object (and the virtual
                            nodes of the owners, one per 10 objects)
``metadata cache``          a kcontrol metadata-only informer's store: the whole
                            ``PartialObjectMetadata`` (interned), managedFields included
``client-go``               client-go: ``metav1.PartialObjectMetadata`` in a ``cache.Indexer``,
                            ``HeapAlloc`` growth (``bench/reference/gcmetadata``; needs Go)
==========================  =====================================================================

Usage (from the repository root)::

    .venv/bin/python -m bench.gc_memory [--objects 10000] [--no-go]
"""

# ruff: noqa: PLC0415

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

import orjson


def documents(n: int, managed_fields: int = 1) -> list[bytes]:
    """N PartialObjectMetadata documents, as the metadata client receives them, each with
    ``managed_fields`` managedFields entries (one per field manager)."""
    docs = []
    for i in range(n):
        owner = f"owner-{i // 10}"
        doc = {
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadata",
            "metadata": {
                "name": f"object-{i}",
                "namespace": f"ns-{i % 50}",
                "uid": f"5b1c7e4a-0000-4000-8000-{i:012d}",
                "resourceVersion": str(100000 + i),
                "creationTimestamp": "2026-11-29T00:00:00Z",
                "labels": {"app": "bench", "pod-template-hash": f"{i // 10:08x}"},
                "annotations": {"example.com/revision": "3"},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": owner,
                        "uid": f"7d2e8f1b-0000-4000-8000-{i // 10:012d}",
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
                "managedFields": [
                    {
                        "manager": f"manager-{m}",
                        "operation": "Update",
                        "apiVersion": "v1",
                        "time": "2026-11-29T00:00:00Z",
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {
                            "f:metadata": {
                                "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                                "f:ownerReferences": {".": {}, f'k:{{"uid":"{owner}"}}': {}},
                            }
                        },
                    }
                    for m in range(managed_fields)
                ],
            },
        }
        docs.append(orjson.dumps(doc))
    return docs


def retained(docs: list[bytes], keep: Callable[[dict[str, Any]], None]) -> float:
    """Bytes still allocated per object after ``keep`` was given each decoded object."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for raw in docs:
        keep(orjson.loads(raw))
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / len(docs)


def measure_gc(docs: list[bytes]) -> float:
    from kcontrol.informers import IndexedStore
    from kcontrol.testing.fake import FakeRecorder
    from kcontrol_controllers.garbagecollector._graph_builder import (
        EventType,
        GraphBuilder,
        GraphEvent,
    )
    from kcontrol_controllers.garbagecollector._monitors import graph_metadata

    store = IndexedStore()
    builder = GraphBuilder(recorder=FakeRecorder())

    def keep(obj: dict[str, Any]) -> None:
        obj["kind"] = "ConfigMap"
        cached = graph_metadata(obj)  # the monitors' reflectors intern nothing more
        store.add(cached)
        builder.process_event(GraphEvent(EventType.ADD, cached, "v1", "ConfigMap"))

    per_object = retained(docs, keep)
    # Owners not seen are virtual nodes (one per 10 objects here): counted in the figure.
    assert len(builder.uid_to_node) == len(docs) + len(docs) // 10
    return per_object


def measure_gc_cache(docs: list[bytes]) -> float:
    from kcontrol.informers import IndexedStore
    from kcontrol_controllers.garbagecollector._monitors import graph_metadata

    store = IndexedStore()

    def keep(obj: dict[str, Any]) -> None:
        obj["kind"] = "ConfigMap"
        store.add(graph_metadata(obj))

    return retained(docs, keep)


def measure_metadata_cache(docs: list[bytes]) -> float:
    from kcontrol.informers import IndexedStore, intern_strings

    store = IndexedStore()

    def keep(obj: dict[str, Any]) -> None:
        obj["kind"] = "ConfigMap"
        store.add(intern_strings(obj))

    return retained(docs, keep)


def measure_client_go(docs: list[bytes]) -> float | None:
    from bench._reference import build_reference

    try:
        binary = build_reference("gcmetadata")
    except Exception as error:  # no Go toolchain or module: leave the column empty
        print(f"client-go reference not built: {error}")
        return None
    done = subprocess.run(
        [str(binary)], input=b"\n".join(docs), capture_output=True, check=True, timeout=300
    )
    return float(json.loads(done.stdout)["heap_bytes_per_object"])


VARIANTS: dict[str, Callable[[list[bytes]], float]] = {
    "gc monitor cache": measure_gc_cache,
    "gc (cache + graph node)": measure_gc,
    "kcontrol metadata cache": measure_metadata_cache,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10000)
    parser.add_argument("--managed-fields", type=int, default=1, help="entries per object")
    parser.add_argument("--no-go", action="store_true", help="skip the client-go reference")
    parser.add_argument("--variant", choices=sorted(VARIANTS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    docs = documents(args.objects, args.managed_fields)
    if args.variant:  # a child: one variant in a fresh interpreter (interning is per process)
        print(json.dumps(VARIANTS[args.variant](docs)))
        return
    print(f"objects: {args.objects}, JSON per object: {sum(map(len, docs)) / len(docs):.0f} B")
    for name in VARIANTS:
        child = [sys.executable, "-m", "bench.gc_memory", "--variant", name]
        child += ["--objects", str(args.objects), "--managed-fields", str(args.managed_fields)]
        done = subprocess.run(child, capture_output=True, check=True, text=True, timeout=600)
        print(f"{name + ':':32} {float(done.stdout):6.0f} B/object")
    if not args.no_go:
        go = measure_client_go(docs)
        if go is not None:
            print(f"{'client-go PartialObjectMetadata:':32} {go:6.0f} B/object (HeapAlloc)")


if __name__ == "__main__":
    main()
