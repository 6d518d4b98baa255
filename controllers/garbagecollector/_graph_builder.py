"""The graph builder: upstream's ``graph_builder.go`` ``processGraphChanges``.

Every monitor (one metadata-only informer per deletable resource, :mod:`._monitors`) turns
its notifications into :class:`GraphEvent` s on one queue (``garbage_collector_graph_changes``),
and one task applies them to the graph in order, so the graph has a single writer. Applying
an event is where work for the workers starts:

- an object seen for the first time joins the graph; an owner it names that the graph lacks
  becomes a **virtual** node, queued to attempt-to-delete (a live GET decides if it exists);
- a virtual node observed at last takes the observed identity; dependents whose references
  disagree with it are queued to attempt-to-delete (and, for an owner in another namespace,
  get the ``OwnerRefInvalidNamespace`` Warning event);
- changed owner references move the node between its owners; an owner a removed or
  unblocked ``blockOwnerDeletion`` reference no longer waits for is queued;
- an owner that starts being deleted with the ``orphan`` finalizer is queued to
  attempt-to-orphan; with ``foregroundDeletion``, it and all its dependents to
  attempt-to-delete;
- a deleted object leaves the graph; its dependents are queued (their owner is gone), and
  so is each owner waiting for its dependents (foreground);
- a **virtual delete** (a worker's GET found no such object) removes a virtual node, or only
  the dependents' disagreeing references, as upstream.

The absent-owner cache remembers owners a GET or a delete proved absent, so that their
many dependents do not each GET them again.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.clock import Clock
from kcontrol.events import EventRecorder
from kcontrol.logging import get_logger
from kcontrol.workqueue import Queue, RateLimitingQueue, ShutDown

from ._graph import (
    FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_ORPHAN_DEPENDENTS,
    Node,
    ObjectReference,
    OwnerReference,
    UIDToNode,
    reference_matches,
)
from ._names import (
    ABSENT_OWNER_CACHE_SIZE,
    ATTEMPT_TO_DELETE_QUEUE,
    ATTEMPT_TO_ORPHAN_QUEUE,
    GRAPH_CHANGES_QUEUE,
    NAME,
)

__all__ = ["AbsentOwnerCache", "EventType", "GraphBuilder", "GraphEvent"]

_log = get_logger(__name__, controller=NAME)


class EventType(Enum):
    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(eq=False, slots=True)
class GraphEvent:
    """One change to apply: an informer's notification (``obj`` as cached, ``old`` for an
    update, ``api_version``/``kind`` of its monitor) or a virtual delete (``virtual``, ``obj``
    a bare identity). Compared by identity: each event is queued once."""

    type: EventType
    obj: Mapping[str, Any]
    api_version: str
    kind: str
    old: Mapping[str, Any] | None = None
    virtual: bool = False


class AbsentOwnerCache:
    """Owners known to be absent, least recently used dropped past ``size`` (upstream's
    ``ReferenceCache``)."""

    def __init__(self, size: int = ABSENT_OWNER_CACHE_SIZE) -> None:
        self._size = size
        self._entries: OrderedDict[ObjectReference, None] = OrderedDict()

    def add(self, reference: ObjectReference) -> None:
        self._entries[reference] = None
        self._entries.move_to_end(reference)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def has(self, reference: ObjectReference) -> bool:
        if reference in self._entries:
            self._entries.move_to_end(reference)
            return True
        return False


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    if metadata.__class__ is dict:  # the cached objects' case, without the ABC check's cost
        return metadata
    return metadata if isinstance(metadata, Mapping) else {}


def identity_of(obj: Mapping[str, Any], api_version: str, kind: str) -> ObjectReference:
    """The coordinates of an object its monitor (``api_version``/``kind``) delivered."""
    return _identity(_metadata(obj), api_version, kind)


def _identity(metadata: Mapping[str, Any], api_version: str, kind: str) -> ObjectReference:
    name = metadata.get("name", "")
    uid = metadata.get("uid", "")
    namespace = metadata.get("namespace") or ""
    return ObjectReference(
        sys.intern(api_version),
        sys.intern(kind),
        name if name.__class__ is str else str(name),
        uid if uid.__class__ is str else str(uid),
        sys.intern(namespace if namespace.__class__ is str else str(namespace)),
    )


def being_deleted(obj: Mapping[str, Any] | None) -> bool:
    return obj is not None and bool(_metadata(obj).get("deletionTimestamp"))


def has_finalizer(obj: Mapping[str, Any] | None, finalizer: str) -> bool:
    return obj is not None and finalizer in (_metadata(obj).get("finalizers") or ())


def owner_references(obj: Mapping[str, Any]) -> Sequence[OwnerReference]:
    return _owner_references(_metadata(obj))


def _owner_references(metadata: Mapping[str, Any]) -> Sequence[OwnerReference]:
    refs = metadata.get("ownerReferences")
    return refs if isinstance(refs, list | tuple) else ()


def deletion_starts_with_finalizer(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], finalizer: str
) -> bool:
    """The object is being deleted with ``finalizer`` now, and was not before (or there is no
    before: an object first seen already in that state counts)."""
    if not being_deleted(new) or not has_finalizer(new, finalizer):
        return False
    return old is None or not being_deleted(old) or not has_finalizer(old, finalizer)


def references_diffs(
    old: Sequence[OwnerReference], new: Sequence[OwnerReference]
) -> tuple[list[OwnerReference], list[OwnerReference], list[tuple[OwnerReference, OwnerReference]]]:
    """Owner references added, removed, and changed (same uid, other fields differ)."""
    old_by_uid = {r.get("uid"): r for r in old}
    new_by_uid = {r.get("uid"): r for r in new}
    added = [r for uid, r in new_by_uid.items() if uid not in old_by_uid]
    removed = [r for uid, r in old_by_uid.items() if uid not in new_by_uid]
    changed = [
        (old_by_uid[uid], r)
        for uid, r in new_by_uid.items()
        if uid in old_by_uid and old_by_uid[uid] != r
    ]
    return added, removed, changed


def _blocks(ref: OwnerReference) -> bool:
    return ref.get("blockOwnerDeletion") is True


class GraphBuilder:
    """Owns the graph, the three queues and the absent-owner cache; see the module docstring.

    :meth:`enqueue` is what monitors call (never blocks); :meth:`run` applies the events until
    cancelled. ``recorder`` takes the ``OwnerRefInvalidNamespace`` events.
    """

    def __init__(
        self,
        *,
        recorder: EventRecorder,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.uid_to_node = UIDToNode()
        self.absent_owner_cache = AbsentOwnerCache()
        self.graph_changes: Queue[GraphEvent] = Queue(
            name=GRAPH_CHANGES_QUEUE, clock=clock, registry=registry
        )
        self.attempt_to_delete: RateLimitingQueue[Node] = RateLimitingQueue(
            name=ATTEMPT_TO_DELETE_QUEUE, clock=clock, registry=registry
        )
        self.attempt_to_orphan: RateLimitingQueue[Node] = RateLimitingQueue(
            name=ATTEMPT_TO_ORPHAN_QUEUE, clock=clock, registry=registry
        )
        self._recorder = recorder

    def enqueue(self, event: GraphEvent) -> None:
        self.graph_changes.add(event)

    def enqueue_virtual_delete(self, identity: ObjectReference) -> None:
        """Queue the removal of ``identity`` a live GET found absent (upstream's
        ``enqueueVirtualDeleteEvent``)."""
        obj = {"metadata": {"name": identity.name, "namespace": identity.namespace}}
        obj["metadata"]["uid"] = identity.uid
        self.enqueue(
            GraphEvent(EventType.DELETE, obj, identity.api_version, identity.kind, virtual=True)
        )

    async def run(self) -> None:
        """Apply graph events, one at a time, until cancelled."""
        try:
            while True:
                try:
                    event = await self.graph_changes.get()
                except ShutDown:
                    return
                try:
                    self.process_event(event)
                except Exception:  # one bad event never stops the graph
                    _log.exception("failed to apply a graph event", type=event.type.value)
                finally:
                    self.graph_changes.done(event)
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        self.graph_changes.shutdown()
        self.attempt_to_delete.shutdown()
        self.attempt_to_orphan.shutdown()

    # -- one event -----------------------------------------------------------------------------

    def process_event(self, event: GraphEvent) -> None:
        """Apply one event to the graph (upstream's loop body of ``processGraphChanges``)."""
        metadata = _metadata(event.obj)
        identity = _identity(metadata, event.api_version, event.kind)
        existing = self.uid_to_node.read(identity.uid)
        if existing is not None and not event.virtual and not existing.observed:
            existing = self._observe(existing, identity)
        if event.type is not EventType.DELETE:
            if existing is None:
                deleted = bool(metadata.get("deletionTimestamp"))
                node = Node(
                    identity,
                    _owner_references(metadata),
                    being_deleted=deleted,
                    deleting_dependents=deleted
                    and has_finalizer(event.obj, FINALIZER_DELETE_DEPENDENTS),
                )
                self._insert_node(node)
                if deleted:  # no transition starts without a deletionTimestamp
                    self._process_transitions(event.old, event.obj, node)
            else:
                self._update_node(existing, event)
            return
        if existing is None:
            return
        if event.virtual and not self._virtual_delete_removes(existing, identity):
            return
        self._remove_node(existing, event)

    def _observe(self, existing: Node, observed: ObjectReference) -> Node:
        """An informer shows a node that was virtual: take its observed identity, and queue the
        dependents whose references disagree with it."""
        if observed != existing.identity:
            _, disagreeing = partition_dependents(existing.dependents(), observed)
            for dep in disagreeing:
                if observed.namespace and dep.identity.namespace != observed.namespace:
                    self.report_invalid_namespace_owner_ref(dep, observed.uid)
                self.attempt_to_delete.add(dep)
            existing = existing.clone()
            existing.identity = observed
            self.uid_to_node.write(existing)
        existing.observed = True
        existing.virtual = False
        return existing

    def _update_node(self, node: Node, event: GraphEvent) -> None:
        new_owners = owner_references(event.obj)
        added, removed, changed = references_diffs(node.owners, new_owners)
        if added or removed or changed:
            self._add_unblocked_owners_to_delete_queue(removed, changed)
            node.owners = new_owners
            self._add_dependent_to_owners(node, added)
            self._remove_dependent_from_owners(node, removed)
        if being_deleted(event.obj):
            node.being_deleted = True
        self._process_transitions(event.old, event.obj, node)

    def _virtual_delete_removes(self, existing: Node, deleted: ObjectReference) -> bool:
        """What a virtual delete of ``deleted`` does to ``existing`` short of removing it;
        whether it removes it (upstream's two virtual-delete branches)."""
        if existing.virtual:
            matching, disagreeing = partition_dependents(existing.dependents(), deleted)
            if not disagreeing:
                return True
            # Some dependents name this uid with other coordinates: the node stays for them.
            if matching:
                self.absent_owner_cache.add(deleted)
                for dep in matching:
                    self.attempt_to_delete.add(dep)
            if existing.identity == deleted:
                replacement = alternate_owner_identity(disagreeing, deleted)
                if replacement is not None:
                    node = existing.clone()
                    node.identity = replacement
                    self.uid_to_node.write(node)
                    self.attempt_to_delete.add_rate_limited(node)
            return False
        if existing.identity != deleted:
            # An observed node outlives a virtual delete of other coordinates.
            matching, _ = partition_dependents(existing.dependents(), deleted)
            if matching:
                self.absent_owner_cache.add(deleted)
                for dep in matching:
                    self.attempt_to_delete.add(dep)
            return False
        return True

    def _remove_node(self, node: Node, event: GraphEvent) -> None:
        self.uid_to_node.delete(node.identity.uid)
        self._remove_dependent_from_owners(node, node.owners)
        dependents = node.dependents()
        if dependents:
            self.absent_owner_cache.add(identity_of(event.obj, event.api_version, event.kind))
        for dep in dependents:
            self.attempt_to_delete.add(dep)
        for ref in node.owners:
            owner = self.uid_to_node.read(str(ref.get("uid", "")))
            if owner is not None and owner.deleting_dependents:
                # The owner waits for its dependents: this may have been the last one.
                self.attempt_to_delete.add(owner)

    # -- edges ---------------------------------------------------------------------------------

    def _insert_node(self, node: Node) -> None:
        self.uid_to_node.write(node)
        self._add_dependent_to_owners(node, node.owners)

    def _add_dependent_to_owners(self, node: Node, owners: Sequence[OwnerReference]) -> None:
        """Link ``node`` to each owner, making virtual owners for the ones the graph lacks;
        queue ``node`` when a reference may not resolve (upstream's
        ``addDependentToOwners``)."""
        suspicious = False
        for ref in owners:
            owner = self.uid_to_node.read(str(ref.get("uid", "")))
            if owner is None:
                owner = Node(ObjectReference.of_owner(ref, node.identity.namespace), virtual=True)
                self.uid_to_node.write(owner)
                owner.add_dependent(node)
                self.attempt_to_delete.add(owner)
                continue
            owner.add_dependent(node)
            if suspicious:
                continue
            owner_namespaced = bool(owner.identity.namespace)
            if owner_namespaced and owner.identity.namespace != node.identity.namespace:
                if owner.observed:
                    _log.info(
                        "item references an owner but does not match namespaces",
                        item=str(node.identity),
                        owner=str(owner.identity),
                    )
                    self.report_invalid_namespace_owner_ref(node, owner.identity.uid)
                suspicious = True
            elif not reference_matches(ref, owner.identity):
                suspicious = True
            elif (
                not owner_namespaced
                and owner.identity.namespace != node.identity.namespace
                and not owner.observed
            ):
                # A virtual cluster-scoped owner named from a namespace: it may be a namespaced
                # owner a cluster-scoped dependent names wrongly (upstream issue #98040).
                suspicious = True
        if suspicious:
            self.attempt_to_delete.add(node)

    def _remove_dependent_from_owners(self, node: Node, owners: Sequence[OwnerReference]) -> None:
        for ref in owners:
            owner = self.uid_to_node.read(str(ref.get("uid", "")))
            if owner is not None:
                owner.delete_dependent(node)

    def _add_unblocked_owners_to_delete_queue(
        self,
        removed: Sequence[OwnerReference],
        changed: Sequence[tuple[OwnerReference, OwnerReference]],
    ) -> None:
        """An owner waiting in the foreground for a dependent that no longer blocks it is
        queued: it may be done."""
        unblocked = [r for r in removed if _blocks(r)]
        unblocked += [new for old, new in changed if _blocks(old) and not _blocks(new)]
        for ref in unblocked:
            owner = self.uid_to_node.read(str(ref.get("uid", "")))
            if owner is not None:
                self.attempt_to_delete.add(owner)

    def _process_transitions(
        self, old: Mapping[str, Any] | None, new: Mapping[str, Any], node: Node
    ) -> None:
        if deletion_starts_with_finalizer(old, new, FINALIZER_ORPHAN_DEPENDENTS):
            _log.debug("add an item to the attemptToOrphan", item=str(node.identity))
            self.attempt_to_orphan.add(node)
            return
        if deletion_starts_with_finalizer(old, new, FINALIZER_DELETE_DEPENDENTS):
            _log.debug("item waits for its dependents to be deleted", item=str(node.identity))
            node.deleting_dependents = True  # a node made virtual first lacks it
            for dep in node.dependents():
                self.attempt_to_delete.add(dep)
            self.attempt_to_delete.add(node)

    def report_invalid_namespace_owner_ref(self, node: Node, owner_uid: str) -> None:
        """The ``OwnerRefInvalidNamespace`` Warning event on a dependent whose owner reference
        (uid ``owner_uid``) names an owner of another namespace."""
        ref = next((r for r in node.owners if r.get("uid") == owner_uid), None)
        if ref is None:
            return
        invalid = ObjectReference.of_owner(ref, node.identity.namespace)
        self._recorder.eventf(
            reference_object(node.identity),
            "Warning",
            "OwnerRefInvalidNamespace",
            "ownerRef %s does not exist in namespace %r",
            invalid,
            node.identity.namespace,
        )


def reference_object(identity: ObjectReference) -> dict[str, Any]:
    """A stub object of ``identity``, enough for an event's ``involvedObject``."""
    metadata = {"name": identity.name, "uid": identity.uid}
    if identity.namespace:
        metadata["namespace"] = identity.namespace
    return {"apiVersion": identity.api_version, "kind": identity.kind, "metadata": metadata}


def partition_dependents(
    dependents: Sequence[Node], owner: ObjectReference
) -> tuple[list[Node], list[Node]]:
    """Dependents whose reference to ``owner.uid`` matches its coordinates (and namespace,
    for a namespaced owner), and the ones whose reference does not."""
    matching: list[Node] = []
    disagreeing: list[Node] = []
    for dep in dependents:
        if owner.namespace and owner.namespace != dep.identity.namespace:
            disagreeing.append(dep)
            continue
        refs = [r for r in dep.owners if r.get("uid") == owner.uid]
        if refs and all(reference_matches(r, owner) for r in refs):
            matching.append(dep)
        else:
            disagreeing.append(dep)
    return matching, disagreeing


def alternate_owner_identity(
    dependents: Sequence[Node], verified_absent: ObjectReference
) -> ObjectReference | None:
    """Coordinates other than ``verified_absent`` that one of ``dependents`` names the same
    uid by, namespaced ones (in the dependent's namespace) after cluster-scoped ones, as
    upstream's ``getAlternateOwnerIdentity`` picks: the first candidate sorted after the
    absent one, else the first."""
    candidates: set[ObjectReference] = set()
    for dep in dependents:
        for ref in dep.owners:
            if ref.get("uid") != verified_absent.uid:
                continue
            cluster = ObjectReference.of_owner(ref)
            namespaced = ObjectReference.of_owner(ref, dep.identity.namespace)
            for candidate in (cluster, namespaced):
                if candidate != verified_absent:
                    candidates.add(candidate)
    if not candidates:
        return None
    ordered = sorted(candidates, key=_sort_key)
    absent_key = _sort_key(verified_absent)
    return next((c for c in ordered if _sort_key(c) > absent_key), ordered[0])


def _sort_key(ref: ObjectReference) -> tuple[str, str, str, str, str]:
    return (ref.api_version, ref.kind, ref.name, ref.uid, ref.namespace)
