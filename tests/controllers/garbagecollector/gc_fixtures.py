"""Objects and a collector on the fake client for the garbage collector's unit tests."""

from __future__ import annotations

from typing import Any

from kcontrol.discovery import StaticRESTMapper
from kcontrol.testing.fake import FakeClient, FakeRecorder
from kcontrol_controllers.garbagecollector._collector import GarbageCollector
from kcontrol_controllers.garbagecollector._graph import Node, ObjectReference
from kcontrol_controllers.garbagecollector._graph_builder import (
    EventType,
    GraphBuilder,
    GraphEvent,
)
from kcontrol_controllers.garbagecollector._operations import Operations

NS = "default"


def owner_ref(
    name: str,
    uid: str | None = None,
    *,
    kind: str = "ReplicationController",
    api_version: str = "v1",
    block: bool | None = None,
) -> dict[str, Any]:
    ref: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid or f"uid-{name}",
    }
    if block is not None:
        ref["blockOwnerDeletion"] = block
    return ref


def obj(
    name: str,
    *,
    kind: str = "ConfigMap",
    api_version: str = "v1",
    namespace: str | None = NS,
    uid: str | None = None,
    owners: list[dict[str, Any]] | None = None,
    finalizers: list[str] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "uid": uid or f"uid-{name}"}
    if namespace:
        metadata["namespace"] = namespace
    if owners:
        metadata["ownerReferences"] = owners
    if finalizers:
        metadata["finalizers"] = finalizers
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


def rc(name: str, **kwargs: Any) -> dict[str, Any]:
    return obj(name, kind="ReplicationController", **kwargs)


def identity(o: dict[str, Any]) -> ObjectReference:
    m = o["metadata"]
    return ObjectReference(o["apiVersion"], o["kind"], m["name"], m["uid"], m.get("namespace", ""))


def event(kind: EventType, o: dict[str, Any], old: dict[str, Any] | None = None) -> GraphEvent:
    return GraphEvent(kind, o, o["apiVersion"], o["kind"], old=old)


def add(builder: GraphBuilder, *objects: dict[str, Any]) -> None:
    for o in objects:
        builder.process_event(event(EventType.ADD, o))


async def queued(builder: GraphBuilder, queue: str = "delete") -> list[str]:
    """Names of the nodes waiting in a queue, in order (drains it)."""
    return [n.identity.name for n in await queued_nodes(builder, queue)]


async def queued_nodes(builder: GraphBuilder, queue: str = "delete") -> list[Node]:
    q = builder.attempt_to_delete if queue == "delete" else builder.attempt_to_orphan
    nodes: list[Node] = []
    while len(q):
        node = await q.get()
        q.done(node)
        q.forget(node)
        nodes.append(node)
    return nodes


class Harness:
    """A graph builder and its collector over a fake client seeded with ``objects``."""

    def __init__(self, *objects: dict[str, Any], attempt_timeout: float = 60.0) -> None:
        self.client = FakeClient(objects)
        self.recorder = FakeRecorder()
        self.builder = GraphBuilder(recorder=self.recorder)
        self.collector = GarbageCollector(
            self.builder,
            Operations(self.client, StaticRESTMapper()),
            attempt_timeout=attempt_timeout,
        )

    def writes(self) -> list[str]:
        """The writes sent, as ``verb plural name`` lines with their options."""
        lines = []
        for a in self.client.actions:
            if a.verb in ("delete", "patch"):
                detail = a.options.get("propagation_policy") if a.verb == "delete" else a.patch
                lines.append(f"{a.verb} {a.resource.plural} {a.name} {detail}")
        return lines
