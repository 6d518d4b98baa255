"""The workers: upstream's ``garbagecollector.go`` ``attemptToDeleteItem`` and
``attemptToOrphanWorker``.

``attempt_to_delete_item(node)``, first match wins:

1. the object is being deleted and not in the foreground: nothing (its deletion will remove
   it from the graph, and then its dependents are queued);
2. a live GET finds no object, or one of another uid: a virtual delete event goes to the
   graph builder (a virtual node is removed, its dependents queued), and the node is not
   retried;
3. the object deletes its dependents in the foreground: its blocking dependents are queued,
   and once it has none the ``foregroundDeletion`` finalizer is removed
   (``processDeletingDependentsItem``);
4. no owner reference: nothing;
5. owners classified by a live GET each (uid checked; the absent-owner cache first):
   **dangling** (missing or another uid), **waiting** (being deleted in the foreground) or
   **solid** (the rest). A cluster-scoped object naming a namespaced owner is an error never
   retried;
6. some owner is solid: the dangling and waiting references are removed, the object stays;
7. some owner is waiting and the object has dependents: it is deleted in the foreground
   (after unblocking its own references if a dependent of it is also deleting dependents,
   which breaks a cycle);
8. otherwise it is deleted: propagation ``Orphan`` if it carries the ``orphan`` finalizer,
   ``Foreground`` if ``foregroundDeletion``, else ``Background``.

``attempt_to_orphan(owner)``: remove the owner's references from every dependent, then the
``orphan`` finalizer from the owner.

A failure is retried with the queue's rate limit; a node still virtual after a successful
attempt is retried too (upstream issue 56121: it may never be observed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from kcontrol.errors import KcontrolError, NoKindMatch, NotFound
from kcontrol.logging import get_logger
from kcontrol.workqueue import ShutDown

from ._graph import (
    FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_ORPHAN_DEPENDENTS,
    Node,
    ObjectReference,
    OwnerReference,
)
from ._graph_builder import GraphBuilder, being_deleted, has_finalizer, owner_references
from ._names import NAME
from ._operations import Operations

__all__ = ["GarbageCollector", "NamespacedOwnerOfClusterScopedObject", "VirtualDeleteEnqueued"]

_log = get_logger(__name__, controller=NAME)


class VirtualDeleteEnqueued(KcontrolError):
    """The item does not exist: the graph builder got a virtual delete; not retried."""


class NamespacedOwnerOfClusterScopedObject(KcontrolError):
    """A cluster-scoped object names a namespaced owner: invalid, never retried."""


class GarbageCollector:
    """The attempt-to-delete and attempt-to-orphan workers over ``builder``'s graph and
    queues, writing through ``operations``; see the module docstring. Each attempt runs in a
    scope of ``attempt_timeout`` seconds; one that runs out fails, and is retried."""

    def __init__(
        self, builder: GraphBuilder, operations: Operations, *, attempt_timeout: float = 60.0
    ) -> None:
        self._builder = builder
        self._ops = operations
        self._timeout = attempt_timeout

    # -- workers -------------------------------------------------------------------------------

    async def run_delete_worker(self) -> None:
        queue = self._builder.attempt_to_delete
        while True:
            try:
                node = await queue.get()
            except ShutDown:
                return
            try:
                if await self.process_attempt_to_delete(node):
                    queue.add_rate_limited(node)
                else:
                    queue.forget(node)
            finally:
                queue.done(node)

    async def run_orphan_worker(self) -> None:
        queue = self._builder.attempt_to_orphan
        while True:
            try:
                node = await queue.get()
            except ShutDown:
                return
            try:
                async with asyncio.timeout(self._timeout):
                    await self.attempt_to_orphan(node)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                _log.error("orphaning dependents failed", item=str(node.identity), error=str(error))
                queue.add_rate_limited(node)
            else:
                queue.forget(node)
            finally:
                queue.done(node)

    async def process_attempt_to_delete(self, node: Node) -> bool:
        """One attempt-to-delete item; whether to retry it (upstream's
        ``attemptToDeleteWorker``)."""
        if not node.observed:
            current = self._builder.uid_to_node.read(node.identity.uid)
            if current is None or current.observed:
                return False  # removed, or observed meanwhile as another node
        try:
            async with asyncio.timeout(self._timeout):
                await self.attempt_to_delete_item(node)
        except (VirtualDeleteEnqueued, NamespacedOwnerOfClusterScopedObject):
            return False
        except asyncio.CancelledError:
            raise
        except NoKindMatch as error:
            _log.debug("kind not mapped yet", item=str(node.identity), error=str(error))
            return True
        except Exception as error:
            _log.error("error syncing item", item=str(node.identity), error=str(error))
            return True
        return not node.observed

    # -- attempt to delete ---------------------------------------------------------------------

    async def attempt_to_delete_item(self, item: Node) -> None:
        _log.debug("processing item", item=str(item.identity), virtual=item.virtual)
        if item.being_deleted and not item.deleting_dependents:
            return
        try:
            latest = await self._ops.get(item.identity)
        except NotFound:
            latest = None
        if latest is None or (latest.get("metadata") or {}).get("uid") != item.identity.uid:
            self._builder.enqueue_virtual_delete(item.identity)
            raise VirtualDeleteEnqueued(f"{item.identity} not found")
        if item.deleting_dependents:
            await self.process_deleting_dependents_item(item)
            return
        references = owner_references(latest)
        if not references:
            return
        solid, dangling, waiting = await self.classify_references(item, references)
        resource_version = str((latest.get("metadata") or {}).get("resourceVersion") or "")
        if solid:
            if not dangling and not waiting:
                return
            uids = [str(r.get("uid")) for r in (*dangling, *waiting)]
            _log.info("removing dangling and waiting references", item=str(item.identity))
            await self._ops.remove_owner_references(item.identity, uids)
            return
        if waiting and item.dependents_length():
            if any(dep.deleting_dependents for dep in item.dependents()):
                # A dependent also waits for its dependents: maybe a cycle; stop blocking.
                # The patch moved the resourceVersion on: the delete keeps the uid only.
                await self._ops.unblock_owner_references(item.identity)
                resource_version = ""
            _log.info("deleting item in the foreground", item=str(item.identity))
            await self._ops.delete(item.identity, resource_version, references, "Foreground")
            return
        if has_finalizer(latest, FINALIZER_ORPHAN_DEPENDENTS):
            policy = "Orphan"
        elif has_finalizer(latest, FINALIZER_DELETE_DEPENDENTS):
            policy = "Foreground"
        else:
            policy = "Background"
        _log.info("deleting item", item=str(item.identity), propagation=policy)
        await self._ops.delete(item.identity, resource_version, references, policy)

    async def classify_references(
        self, item: Node, references: Sequence[OwnerReference]
    ) -> tuple[list[OwnerReference], list[OwnerReference], list[OwnerReference]]:
        """``(solid, dangling, waiting_for_dependents_deletion)`` owner references."""
        solid: list[OwnerReference] = []
        dangling: list[OwnerReference] = []
        waiting: list[OwnerReference] = []
        for ref in references:
            owner = await self.owner_if_present(ref, item)
            if owner is None:
                dangling.append(ref)
            elif being_deleted(owner) and has_finalizer(owner, FINALIZER_DELETE_DEPENDENTS):
                waiting.append(ref)
            else:
                solid.append(ref)
        return solid, dangling, waiting

    async def owner_if_present(self, ref: OwnerReference, item: Node) -> Mapping[str, Any] | None:
        """The owner ``ref`` names, by a live GET, or None when it is dangling (absent, or of
        another uid); upstream's ``isDangling``."""
        absent = self._builder.absent_owner_cache
        cluster_key = ObjectReference.of_owner(ref)
        namespaced_key = ObjectReference.of_owner(ref, item.identity.namespace)
        if absent.has(cluster_key) or absent.has(namespaced_key):
            return None
        resource = await self._ops.resource(str(ref.get("apiVersion")), str(ref.get("kind")))
        key = namespaced_key if resource.namespaced else cluster_key
        if not item.identity.namespace and resource.namespaced:
            raise NamespacedOwnerOfClusterScopedObject(
                f"cluster-scoped {item.identity} names a namespaced owner"
            )
        try:
            _, owner = await self._ops.get_owner(ref, item.identity.namespace)
        except NotFound:
            absent.add(key)
            return None
        if (owner.get("metadata") or {}).get("uid") != ref.get("uid"):
            absent.add(key)
            return None
        return owner

    async def process_deleting_dependents_item(self, item: Node) -> None:
        blocking = item.blocking_dependents()
        if not blocking:
            _log.info("removing the foregroundDeletion finalizer", item=str(item.identity))
            await self._ops.remove_finalizer(item.identity, FINALIZER_DELETE_DEPENDENTS)
            return
        for dep in blocking:
            if not dep.deleting_dependents:
                self._builder.attempt_to_delete.add(dep)

    # -- attempt to orphan ---------------------------------------------------------------------

    async def attempt_to_orphan(self, owner: Node) -> None:
        """Remove ``owner``'s references from its dependents, then its ``orphan`` finalizer;
        a dependent that failed fails the whole attempt (retried)."""
        failures: list[str] = []

        async def orphan(dep: Node) -> None:
            try:
                await self._ops.remove_owner_references(dep.identity, [owner.identity.uid])
            except asyncio.CancelledError:
                raise
            except Exception as error:
                failures.append(f"{dep.identity}: {error}")

        async with asyncio.TaskGroup() as group:
            for dep in owner.dependents():
                group.create_task(orphan(dep))
        if failures:
            raise KcontrolError(f"orphaning dependents of {owner.identity}: {failures}")
        await self._ops.remove_finalizer(owner.identity, FINALIZER_ORPHAN_DEPENDENTS)
