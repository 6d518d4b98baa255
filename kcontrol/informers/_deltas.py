"""Delta processing: apply what the reflector saw to the cache, then tell the handlers.

client-go puts a ``DeltaFIFO`` between the reflector goroutine and the goroutine that updates
the cache, because they are different threads. On one event loop that queue is not needed:
the reflector calls :class:`DeltaProcessor` directly, and each call updates the indexer and
hands the matching notification to the :class:`~kcontrol.informers._processor.SharedProcessor`
(which only appends to per-handler buffers) before returning. So

- the cache and the notifications change in exactly the order the server reported;
- every notification is sent after the cache (and its indexes) already reflect it;
- no deltas are kept anywhere: the only copy of an object is the one in the cache, and
  handler buffers hold references to it.

A relist (:meth:`DeltaProcessor.replace`) first sends a delete with a
:class:`~kcontrol.informers.DeletedFinalStateUnknown` tombstone for every cached object the
new list lacks, then an add or update for each listed object (the order of client-go's
``RealFIFO``). An update whose resourceVersion did not change - from a relist or from a
watch, as in client-go's ``OnUpdate`` - is a resync and reaches only the handlers whose
resync is due. Long passes over the cache yield to the event loop every few hundred objects;
each object is still applied and announced atomically, and a relist and a resync never
interleave (the later one waits).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kcontrol.client import Object
from kcontrol.informers._keys import DeletedFinalStateUnknown, KeyFunc, meta_namespace_key_func
from kcontrol.informers._processor import (
    AddNotification,
    DeleteNotification,
    SharedProcessor,
    UpdateNotification,
)
from kcontrol.informers._store import NAMESPACE_INDEX, Indexer

if TYPE_CHECKING:
    from kcontrol.informers._reflector import ReflectorStore

__all__ = ["DeltaProcessor"]

CHUNK = 500
"""Objects handled between two yields to the event loop in a relist or a resync."""


def _resource_version(obj: Object) -> Any:
    return obj.get("metadata", {}).get("resourceVersion")


class DeltaProcessor:
    """The informer's :class:`~kcontrol.informers._reflector.ReflectorStore`; see the module
    docstring. ``has_synced`` becomes True (and ``on_synced`` is called) when the first
    complete list has been applied."""

    def __init__(
        self,
        indexer: Indexer,
        processor: SharedProcessor,
        *,
        key_func: KeyFunc = meta_namespace_key_func,
        on_synced: Callable[[], object] | None = None,
        namespaces: Sequence[str] = (),
    ) -> None:
        self._indexer = indexer
        self._processor = processor
        self._key_func = key_func
        self._on_synced = on_synced
        self._synced = False
        # With namespaces, each is listed on its own (replace_namespace); the cache has
        # synced once every one has been.
        self._unsynced = set(namespaces)
        # Held by replace and resync, which yield mid-way: one never interleaves the other.
        self._bulk = asyncio.Lock()

    @property
    def has_synced(self) -> bool:
        return self._synced

    # -- ReflectorStore ----------------------------------------------------------------------

    def add(self, obj: Object) -> None:
        self._upsert(obj)

    def update(self, obj: Object) -> None:
        self._upsert(obj)

    def delete(self, obj: Object) -> None:
        if self._indexer.get(obj) is None:
            return  # never cached (or already gone): nobody needs to hear about it
        self._indexer.delete(obj)
        self._processor.distribute(DeleteNotification(obj))

    async def replace(self, items: list[Object], resource_version: str) -> None:
        async with self._bulk:
            await self._replace(items, None)

    async def replace_namespace(
        self, namespace: str, items: list[Object], resource_version: str
    ) -> None:
        """:meth:`replace` for one namespace of a cache that holds several, each listed on
        its own: only that namespace's objects are replaced."""
        async with self._bulk:
            await self._replace(items, namespace)

    def for_namespace(self, namespace: str) -> ReflectorStore:
        """The store a reflector of ``namespace`` writes to (see :meth:`replace_namespace`)."""
        return _NamespacePart(self, namespace)

    async def _replace(self, items: list[Object], namespace: str | None) -> None:
        key_func = self._key_func
        # Key everything before touching the cache, so a failure leaves the cache as it was.
        fresh = {key_func(obj): obj for obj in items}

        indexer, processor = self._indexer, self._processor
        keys = (
            indexer.list_keys()
            if namespace is None
            else indexer.index_keys(NAMESPACE_INDEX, namespace)
        )
        gone = [key for key in keys if key not in fresh]
        for count, key in enumerate(gone, 1):
            old = indexer.get_by_key(key)
            if old is not None:
                indexer.delete(old)
                processor.distribute(DeleteNotification(DeletedFinalStateUnknown(key, old)))
            if count % CHUNK == 0:
                await asyncio.sleep(0)

        initial = not self._synced and (namespace is None or namespace in self._unsynced)
        for count, (key, obj) in enumerate(fresh.items(), 1):
            old = indexer.get_by_key(key)
            if old is None:
                indexer.add(obj)
                processor.distribute(AddNotification(obj, initial))
            else:
                indexer.update(obj)
                processor.distribute(
                    UpdateNotification(old, obj),
                    is_sync=_resource_version(old) == _resource_version(obj),
                )
            if count % CHUNK == 0:
                await asyncio.sleep(0)

        if namespace is not None:
            self._unsynced.discard(namespace)
        if not self._synced and not self._unsynced:
            self._synced = True
            if self._on_synced is not None:
                self._on_synced()

    # -- resync ------------------------------------------------------------------------------

    async def resync(self) -> None:
        """Send ``update(obj, obj)`` for every cached object to the listeners due a resync."""
        async with self._bulk:
            await self._resync()

    async def _resync(self) -> None:
        indexer, processor = self._indexer, self._processor
        for count, key in enumerate(indexer.list_keys(), 1):
            obj = indexer.get_by_key(key)  # the current state, even after a yield
            if obj is not None:
                processor.distribute(UpdateNotification(obj, obj), is_sync=True)
            if count % CHUNK == 0:
                await asyncio.sleep(0)

    # -- internals ---------------------------------------------------------------------------

    def _upsert(self, obj: Object) -> None:
        old = self._indexer.get(obj)
        if old is None:
            self._indexer.add(obj)
            self._processor.distribute(AddNotification(obj, False))
        else:
            self._indexer.update(obj)
            self._processor.distribute(
                UpdateNotification(old, obj),
                is_sync=_resource_version(old) == _resource_version(obj),
            )


class _NamespacePart:
    """One namespace's reflector's view of a :class:`DeltaProcessor` (its ``replace`` only
    replaces that namespace)."""

    __slots__ = ("_deltas", "_namespace")

    def __init__(self, deltas: DeltaProcessor, namespace: str) -> None:
        self._deltas = deltas
        self._namespace = namespace

    def add(self, obj: Object) -> None:
        self._deltas.add(obj)

    def update(self, obj: Object) -> None:
        self._deltas.update(obj)

    def delete(self, obj: Object) -> None:
        self._deltas.delete(obj)

    async def replace(self, items: list[Object], resource_version: str) -> None:
        await self._deltas.replace_namespace(self._namespace, items, resource_version)
