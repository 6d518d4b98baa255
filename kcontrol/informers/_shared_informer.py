"""SharedIndexInformer: one watched cache of a resource, shared by many event handlers.

Guarantees (those of client-go's ``SharedInformer``):

- Eventual consistency. The cache holds, for each object, a state the server had: unless
  communication keeps failing, if the server's collection stops changing the cache becomes an
  exact copy of it, and an object deleted on the server is eventually gone from the cache.
- Per-object order. The states of one object that appear in the cache are a subsequence of
  the states the server went through: some may be skipped (several changes during a relist
  show up as one), but never reordered. There is no ordering promise between objects.
- Identity is ``namespace/name``, not UID: an object deleted and re-created while the informer
  was not watching can show up as one update. Compare ``metadata.uid`` in ``on_update`` when
  that matters.
- Every change to the cache is announced to every handler, after the cache and its indexes
  already reflect it (a handler reading the cache may see even newer state). A handler added
  while the informer runs first gets an add for every object already cached.
- Notifications reach a handler one at a time and, per object, in order. Handlers do not
  coordinate with each other: each has its own buffer and delivery task, so a slow handler
  only delays itself. Handlers must still be quick - a large backlog costs memory; hand
  lengthy work to a workqueue (enqueue the key, look the object up later).
- A delete announces the object's last state, or a ``DeletedFinalStateUnknown`` tombstone
  when the deletion was detected by a relist.
- Objects are shared: the cache, every handler and every lister see the same dict. Never
  mutate one; deep-copy first.

Run it with ``await informer.run()`` inside a task group; it blocks until cancelled and owns
its reflector, resync timer and handler tasks. ``has_synced()`` turns True once the first
full list is in the cache. Resyncs run only while the reflector watches, as client-go's
resync timer does: never before the first list is in, never during a relist, and not
sooner than a handler's period after the list that began the current watch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from kcontrol.client import ListOptions, Reader, Resource
from kcontrol.clock import Clock, RealClock
from kcontrol.informers._deltas import DeltaProcessor
from kcontrol.informers._lister import Lister
from kcontrol.informers._processor import (
    Listener,
    ResourceEventHandler,
    ResourceEventHandlerRegistration,
    SharedProcessor,
)
from kcontrol.informers._reflector import (
    Reflector,
    ReflectorOptions,
    TransformFunc,
    WatchErrorHandler,
    selection_options,
)
from kcontrol.informers._store import IndexedStore, Indexer, IndexFunc
from kcontrol.logging import get_logger

__all__ = ["MINIMUM_RESYNC_PERIOD", "SharedIndexInformer", "wait_for_cache_sync"]

_log = get_logger(__name__)

MINIMUM_RESYNC_PERIOD = 1.0
"""Shorter (non-zero) handler resync periods are raised to this, in seconds."""


class SharedIndexInformer:
    """A shared, indexed, watched cache of one resource; see the module docstring.

    ``namespace`` and ``list_options`` (its ``label_selector`` and ``field_selector``, nothing
    else: see :class:`~kcontrol.informers.Reflector`) select the collection cached; or
    ``namespaces``: several namespaces, each listed and watched by a reflector of its own
    into the one cache (an operator whose Role covers those namespaces only:
    controller-runtime's ``DefaultNamespaces``). Such an informer has synced once every
    namespace has; :attr:`last_sync_resource_version` is then the oldest of them, and
    :meth:`last_sync_resource_version_in` one namespace's.
    ``resync_period`` is the default for handlers added without one: every so many seconds
    the handler gets ``on_update(obj, obj)`` for every cached object (0: never). Each handler
    keeps its own period; unlike client-go, periods are not rounded up to an informer-wide
    check interval, and a handler may resync even when the default is 0.
    """

    def __init__(
        self,
        reader: Reader,
        resource: Resource,
        *,
        namespace: str | None = None,
        namespaces: Sequence[str] = (),
        list_options: ListOptions | None = None,
        resync_period: float = 0.0,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: TransformFunc | None = None,
        clock: Clock | None = None,
        reflector_options: ReflectorOptions | None = None,
    ) -> None:
        if namespace is not None and namespaces:
            raise ValueError("an informer takes a namespace or namespaces, not both")
        if len(namespaces) == 1:
            namespace, namespaces = namespaces[0], ()
        self._reader = reader
        self._resource = resource
        self._namespace = namespace if resource.namespaced else None
        self._namespaces = tuple(dict.fromkeys(namespaces)) if resource.namespaced else ()
        self._list_options = selection_options(list_options)
        self._default_resync = resync_period
        self._clock: Clock = clock or RealClock()
        self._reflector_options = reflector_options
        self._watch_error_handler: WatchErrorHandler | None = None
        self._transform = transform
        self._indexer = IndexedStore(indexers=indexers)
        self._processor = SharedProcessor()
        # Set on first sync and on stop; wait_for_cache_sync re-checks after each.
        self._sync_changed = asyncio.Event()
        self._deltas = DeltaProcessor(
            self._indexer,
            self._processor,
            on_synced=self._sync_changed.set,
            namespaces=self._namespaces,
        )
        self._resync_wakeup = asyncio.Event()
        self._reflector: Reflector | None = None  # the first (or only) one
        self._reflectors: dict[str | None, Reflector] = {}
        self._task_group: asyncio.TaskGroup | None = None
        self._started = False
        self._stopped = False

    # -- configuration (before run) ----------------------------------------------------------

    def set_transform(self, transform: TransformFunc | None) -> None:
        """Set the function applied to each object before it is stored; before :meth:`run`."""
        self._require_not_started("set_transform")
        self._transform = transform

    def set_watch_error_handler(self, handler: WatchErrorHandler | None) -> None:
        """Be told of every list/watch failure (for visibility); before :meth:`run`."""
        self._require_not_started("set_watch_error_handler")
        self._watch_error_handler = handler

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes to the cache; existing objects are indexed at once. An index name that
        exists already raises :class:`ValueError`."""
        self._indexer.add_indexers(indexers)

    # -- handlers ----------------------------------------------------------------------------

    def add_event_handler(
        self, handler: ResourceEventHandler, resync_period: float | None = None
    ) -> ResourceEventHandlerRegistration:
        """Register ``handler``; ``resync_period`` defaults to the informer's.

        On a running informer the handler first receives ``on_add(obj, True)`` for every
        cached object. Raises :class:`RuntimeError` once the informer has stopped.
        """
        if self._stopped:
            raise RuntimeError(f"informer for {self._resource.plural} has stopped")
        period = self._default_resync if resync_period is None else resync_period
        if 0 < period < MINIMUM_RESYNC_PERIOD:
            _log.warning("resync period too small, using the minimum", requested=period)
            period = MINIMUM_RESYNC_PERIOD
        listener = Listener(handler, max(period, 0.0), self._clock.now(), self.has_synced)
        if self._task_group is not None:
            # Replay the cache, then start delivering. Both happen before any other cache
            # change can be announced (no await in between), so nothing is missed or doubled.
            try:
                self._task_group.create_task(listener.run(), name=self._task_name("handler"))
            except RuntimeError as err:
                raise RuntimeError(f"informer for {self._resource.plural} is stopping") from err
            listener.add_initial(self._indexer.list())
        self._processor.add_listener(listener)
        if listener.resync_period > 0:
            self._resync_wakeup.set()
        return listener

    def remove_event_handler(self, registration: ResourceEventHandlerRegistration) -> None:
        """Unregister a handler; undelivered notifications are dropped. Idempotent."""
        if isinstance(registration, Listener) and self._processor.remove_listener(registration):
            self._resync_wakeup.set()

    # -- state -------------------------------------------------------------------------------

    @property
    def resource(self) -> Resource:
        return self._resource

    @property
    def namespace(self) -> str | None:
        """The one namespace cached (``None``: every namespace, or several)."""
        return self._namespace

    @property
    def namespaces(self) -> tuple[str, ...]:
        """The namespaces cached: the one namespace, the several, or ``()`` for all."""
        return self._namespaces or ((self._namespace,) if self._namespace else ())

    @property
    def indexer(self) -> Indexer:
        """The cache. Read-only for everyone but the informer."""
        return self._indexer

    def lister(self) -> Lister:
        """A :class:`Lister` over this informer's cache."""
        return Lister(self._indexer, self._resource, self.namespaces)

    @property
    def last_sync_resource_version(self) -> str:
        """The newest resourceVersion the cache has applied ("" before); with several
        namespaces, the oldest of theirs (each namespace has applied at least that)."""
        versions = [r.last_sync_resource_version for r in self._reflectors.values()]
        if len(versions) <= 1:
            return versions[0] if versions else ""
        if not all(versions):
            return ""
        return min(versions, key=lambda v: (len(v), v))

    def last_sync_resource_version_in(self, namespace: str) -> str:
        """:attr:`last_sync_resource_version` of one namespace's reflector (the informer's
        when it has one reflector)."""
        reflector = self._reflectors.get(namespace) if self._namespaces else self._reflector
        return reflector.last_sync_resource_version if reflector is not None else ""

    @property
    def filters_shard_locally(self) -> bool:
        """Whether this informer applies its shard selector itself, the server having sent
        objects outside it (see :class:`~kcontrol.client.ShardSelector`)."""
        return any(r.filters_shard_locally for r in self._reflectors.values())

    @property
    def watch_events(self) -> int:
        """Watch events this informer's reflectors have received (0 before it runs)."""
        return sum(r.watch_events for r in self._reflectors.values())

    def has_started(self) -> bool:
        return self._started

    def is_stopped(self) -> bool:
        return self._stopped

    def has_synced(self) -> bool:
        """True once the first complete list has been applied to the cache. (That does not
        mean each handler has been called for it: ask its registration.)"""
        return self._deltas.has_synced

    async def wait_for_cache_sync(self) -> bool:
        """Wait until :meth:`has_synced`; False if the informer stopped before that."""
        while not self.has_synced() and not self._stopped:
            self._sync_changed.clear()
            await self._sync_changed.wait()
        return self.has_synced()

    # -- running -----------------------------------------------------------------------------

    async def run(self) -> None:
        """List, watch and deliver until cancelled. An informer runs at most once."""
        if self._started:
            raise RuntimeError(f"informer for {self._resource.plural} already started")
        self._started = True
        scopes: tuple[str | None, ...] = self._namespaces or (self._namespace,)
        self._reflectors = {
            namespace: Reflector(
                self._reader,
                self._resource,
                self._deltas
                if namespace is None or not self._namespaces
                else self._deltas.for_namespace(namespace),
                namespace=namespace,
                list_options=self._list_options,
                options=self._reflector_options,
                clock=self._clock,
                watch_error_handler=self._watch_error_handler,
                transform=self._transform,
            )
            for namespace in scopes
        }
        self._reflector = next(iter(self._reflectors.values()))
        try:
            async with asyncio.TaskGroup() as task_group:
                self._task_group = task_group
                for listener in self._processor.listeners():
                    task_group.create_task(listener.run(), name=self._task_name("handler"))
                for reflector in self._reflectors.values():
                    task_group.create_task(reflector.run(), name=self._task_name("reflector"))
                task_group.create_task(
                    self._resync_loop(self._reflector), name=self._task_name("resync")
                )
        finally:
            self._stopped = True
            self._task_group = None
            self._processor.stop()
            self._sync_changed.set()

    async def _resync_loop(self, reflector: Reflector) -> None:
        """Sleep until the earliest handler resync is due, then resync the handlers due;
        only while the reflector watches."""
        wakeup = self._resync_wakeup
        while True:
            wakeup.clear()
            watching_since = reflector.watching_since
            if watching_since is None:
                await reflector.wait_until_watching()
                continue
            due = self._processor.next_resync_at(watching_since)
            now = self._clock.now()
            if due is None or now < due:
                timer = None if due is None else self._clock.call_at(due, wakeup.set)
                try:
                    await wakeup.wait()
                finally:
                    if timer is not None:
                        timer.cancel()
                continue
            if self._processor.start_resync(now, watching_since):
                try:
                    await self._deltas.resync()
                finally:
                    self._processor.finish_resync()

    def _require_not_started(self, what: str) -> None:
        if self._started:
            raise RuntimeError(f"{what}: informer for {self._resource.plural} already started")

    def _task_name(self, role: str) -> str:
        scope = "".join(f"{n}/" for n in self.namespaces)
        return f"informer {scope}{self._resource.plural} {role}"


async def wait_for_cache_sync(
    *synced: Callable[[], bool], clock: Clock | None = None, interval: float = 0.1
) -> None:
    """Poll the ``has_synced``-style callables every ``interval`` seconds until all are true.

    client-go's ``WaitForCacheSync``; pass ``informer.has_synced`` or a handler
    registration's ``has_synced``. Bound it with :func:`asyncio.timeout` if needed.
    """
    poll_clock: Clock = clock or RealClock()
    while not all(check() for check in synced):
        await poll_clock.sleep(interval)
