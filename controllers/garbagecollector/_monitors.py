"""Monitors: one metadata-only informer per deletable resource, kept in step with discovery.

Upstream's ``GraphBuilder.syncMonitors`` and the collector's ``Sync`` loop: every
``resync_period`` (30 s) the server's resources that serve ``delete``, ``list`` and
``watch`` are read, minus the ignored ones (both ``events`` resources); a resource that
appeared gets a monitor (a CRD installed while the collector runs), one that went away loses
its monitor (its informer task is cancelled; the graph keeps its nodes, as upstream's does,
until the objects' deletes are seen or a worker's GET finds them gone). A failed discovery
read is counted in ``garbagecollector_controller_resources_sync_error_total`` and retried at
the next period; a group version that failed alone keeps its monitors (no resource is
dropped on a partial read).

Each monitor caches only what the graph needs of an object (name, namespace, uid,
resourceVersion, ownerReferences, finalizers, deletionTimestamp), its owner references shared
between the objects that carry equal ones: the cost of one object in the collector is that
small dict plus its graph node. Each starts in a task of its own under
:meth:`Monitors.run`'s task group; adding or removing one never waits for another's sync.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import Any, TypedDict

import msgspec
import orjson

from kcontrol.client import Client, Resource
from kcontrol.clock import Clock, RealClock
from kcontrol.informers import (
    DeletedFinalStateUnknown,
    ReflectorOptions,
    ResourceEventHandlerFuncs,
    ResourceEventHandlerRegistration,
    SharedIndexInformer,
    SharedInformerFactory,
    decoding_list_items_with,
    dropping_managed_fields,
)
from kcontrol.logging import get_logger

from ._graph import compact_owner_references
from ._graph_builder import EventType, GraphBuilder, GraphEvent
from ._metrics import GCMetrics
from ._names import DEFAULT_IGNORED_RESOURCES, NAME, RESOURCES_RESYNC_PERIOD

__all__ = ["Discover", "Monitors", "graph_metadata"]

_log = get_logger(__name__, controller=NAME)

Discover = Callable[[], Awaitable[Iterable[Resource]]]
"""Returns the deletable resources (raising on failure)."""

_KEPT = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "ownerReferences",
    "finalizers",
    "deletionTimestamp",
)


class _OwnerReference(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class _GraphMetadata(TypedDict, total=False):
    name: str
    namespace: str
    uid: str
    resourceVersion: str
    ownerReferences: list[_OwnerReference]
    finalizers: list[str]
    deletionTimestamp: str


class _GraphItem(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: _GraphMetadata


_GRAPH_ITEM = msgspec.json.Decoder(_GraphItem)


def decode_graph_item(data: bytes) -> dict[str, Any]:
    """One listed item's JSON as dicts of only what :func:`graph_metadata` reads (its
    declared list-item decoder): labels, annotations and managedFields are skipped, never
    built - 1.3 -> 0.9 us for a typical item. An item whose fields are not of the types the
    API server gives them is decoded whole, for the transform to treat as it would any
    other; bytes that are not one whole JSON value raise :class:`ValueError`
    (``msgspec.DecodeError``)."""
    try:
        return _GRAPH_ITEM.decode(data)  # type: ignore[return-value]
    except msgspec.ValidationError:
        return orjson.loads(data)  # type: ignore[no-any-return]


@decoding_list_items_with(decode_graph_item)
@dropping_managed_fields
def graph_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """The transform of every monitor: the object reduced to what the graph reads, its owner
    references compacted and shared (:func:`compact_owner_references`), its namespace and
    kind interned. The monitors' reflectors intern nothing else: names, uids and
    resourceVersions never repeat, and an entry in the interpreter's table of interned
    strings costs more than it saves (measured: docs/controllers/garbagecollector.md)."""
    metadata = obj.get("metadata") or {}
    kept = {k: metadata[k] for k in _KEPT if metadata.get(k) is not None}
    if "ownerReferences" in kept:
        kept["ownerReferences"] = compact_owner_references(kept["ownerReferences"])
    if isinstance(kept.get("namespace"), str):
        kept["namespace"] = sys.intern(kept["namespace"])
    kind = obj.get("kind")
    return {"kind": sys.intern(kind) if isinstance(kind, str) else kind, "metadata": kept}


class _Monitor:
    __slots__ = ("informer", "registration", "task")

    def __init__(
        self, informer: SharedIndexInformer, registration: ResourceEventHandlerRegistration
    ) -> None:
        self.informer = informer
        self.registration = registration
        self.task: asyncio.Task[None] | None = None


class Monitors:
    """The monitors of ``builder``'s graph; see the module docstring."""

    def __init__(
        self,
        *,
        client: Client,
        builder: GraphBuilder,
        discover: Discover,
        metrics: GCMetrics,
        ignored: Collection[tuple[str, str]] = DEFAULT_IGNORED_RESOURCES,
        resync_period: float = RESOURCES_RESYNC_PERIOD,
        clock: Clock | None = None,
    ) -> None:
        self._client = client
        self._builder = builder
        self._discover = discover
        self._metrics = metrics
        self._ignored = frozenset(ignored)
        self._resync_period = resync_period
        self._clock: Clock = clock or RealClock()
        self._monitors: dict[Resource, _Monitor] = {}
        self._group: asyncio.TaskGroup | None = None
        self.synced_once = asyncio.Event()
        """Set after the first discovery read succeeded and its monitors were made."""

    def resources(self) -> list[Resource]:
        return list(self._monitors)

    def has_synced(self) -> bool:
        """Every monitor's informer has listed and handed each listed object to the graph's
        queue (upstream's ``IsSynced``: a monitor's controller has synced once its handler
        has taken the initial list). Until then the workers wait, and the graph gets the
        start-up objects without their live GETs competing for the process."""
        return self.synced_once.is_set() and all(
            m.registration.has_synced() for m in self._monitors.values()
        )

    async def run(self) -> None:
        """Sync the monitors with discovery every ``resync_period`` until cancelled."""
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                while True:
                    await self.resync()
                    await self._clock.sleep(self._resync_period)
        finally:
            self._group = None

    async def resync(self) -> None:
        try:
            found = list(await self._discover())
        except asyncio.CancelledError:
            raise
        except Exception as error:
            self._metrics.resources_sync_error.inc()
            _log.error("failed to discover deletable resources", error=str(error))
            return
        self.sync({r for r in found if (r.group, r.plural) not in self._ignored})
        self.synced_once.set()

    def sync(self, wanted: set[Resource]) -> None:
        """Start a monitor for each resource of ``wanted`` without one, stop the others."""
        for resource in [r for r in self._monitors if r not in wanted]:
            monitor = self._monitors.pop(resource)
            if monitor.task is not None:
                monitor.task.cancel()
            _log.info("stopped monitor", resource=f"{resource.plural}.{resource.group}")
        for resource in sorted(wanted - set(self._monitors), key=lambda r: r.api_version):
            monitor = _Monitor(*self._new_informer(resource))
            self._monitors[resource] = monitor
            if self._group is not None:
                monitor.task = self._group.create_task(
                    self._run_informer(monitor.informer), name=f"gc monitor {resource.plural}"
                )
            _log.info("started monitor", resource=f"{resource.plural}.{resource.group}")

    async def _run_informer(self, informer: SharedIndexInformer) -> None:
        try:
            await informer.run()
        except asyncio.CancelledError:
            raise
        except Exception:  # one monitor's failure never stops the others
            _log.exception("monitor stopped", resource=informer.resource.plural)

    def _new_informer(
        self, resource: Resource
    ) -> tuple[SharedIndexInformer, ResourceEventHandlerRegistration]:
        factory = SharedInformerFactory(
            self._client,
            transform=graph_metadata,
            clock=self._clock,
            reflector_options=ReflectorOptions(intern_strings=False),
        )
        informer = factory.for_resource(resource, metadata_only=True)
        api_version, kind, enqueue = resource.api_version, resource.kind, self._builder.enqueue

        def added(obj: Any) -> None:
            enqueue(GraphEvent(EventType.ADD, obj, api_version, kind))

        def updated(old: Any, new: Any) -> None:
            enqueue(GraphEvent(EventType.UPDATE, new, api_version, kind, old=old))

        def deleted(obj: Any) -> None:
            if isinstance(obj, DeletedFinalStateUnknown):
                obj = obj.obj
            enqueue(GraphEvent(EventType.DELETE, obj, api_version, kind))

        registration = informer.add_event_handler(
            ResourceEventHandlerFuncs(added, updated, deleted)
        )
        return informer, registration
