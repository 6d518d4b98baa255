"""The basic work queue: FIFO order, de-duplication, and one worker per item at a time."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry

from kcontrol.clock import Clock, RealClock
from kcontrol.errors import ShutDown
from kcontrol.workqueue._metrics import new_queue_metrics

__all__ = ["Queue", "ShutDown", "T"]

T = TypeVar("T", bound=Hashable)


class Queue(Generic[T]):
    """A work queue of hashable items (typically ``"namespace/name"`` keys).

    Contract, as client-go's ``workqueue.Typed``:

    - An item is handed to at most one worker at a time. Every item returned by :meth:`get`
      must be passed to :meth:`done` when its processing ends, successfully or not; until then
      the queue holds back further copies of it.
    - Adds collapse: adding an item that is already waiting changes nothing. Adding an item that
      is being processed marks it dirty, and :meth:`done` puts it back in line, so a change seen
      during processing is never lost.
    - Items are handed out in the order they were (first) added.
    - After :meth:`shutdown` new adds are ignored, but items already queued are still handed
      out; :meth:`get` raises :class:`ShutDown` only once the queue is shut down *and* empty.
    - :meth:`len` is informational (logs, metrics); never gate an add or a get on it.

    The queue belongs to one event loop and is not thread-safe. ``add``, ``done``, ``len`` and
    ``shutdown`` are plain methods and may be called from callbacks; ``get`` and
    ``shutdown_with_drain`` are awaited.

    A queue is always truthy, even when empty (``if queue:`` tests existence, not length).

    Options: ``name`` labels the queue's metrics (an unnamed queue records none and pays nothing
    for them), ``clock`` times the metrics, ``registry`` is the Prometheus registry for the
    metrics (default: ``prometheus_client.REGISTRY``).
    """

    __slots__ = (
        "_clock",
        "_dirty",
        "_drain",
        "_drainers",
        "_getters",
        "_metrics",
        "_name",
        "_processing",
        "_queue",
        "_shutting_down",
    )

    def __init__(
        self,
        *,
        name: str | None = None,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self._name = name or None
        self._clock: Clock = clock if clock is not None else RealClock()
        # The order in which items are handed out. Invariant: every element is in _dirty and
        # not in _processing, and appears once.
        self._queue: deque[T] = deque()
        # Items that need processing: everything in _queue, plus items re-added while being
        # processed (those are in _processing too and return to _queue on done()).
        self._dirty: set[T] = set()
        # Items handed out by get() and not yet done().
        self._processing: set[T] = set()
        # Tasks blocked in get(), oldest first; woken one per queued item.
        self._getters: deque[asyncio.Future[None]] = deque()
        # Tasks blocked in shutdown_with_drain(); woken when _processing empties or on shutdown().
        self._drainers: list[asyncio.Future[None]] = []
        self._shutting_down = False
        # True while shutdown_with_drain() should keep waiting for _processing to empty.
        self._drain = False
        self._metrics = new_queue_metrics(self._name, self._clock, registry)

    @property
    def name(self) -> str | None:
        """The queue's name (the ``name`` label of its metrics), or ``None``."""
        return self._name

    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing.

        Does nothing while shutting down or if ``item`` is already waiting. If ``item`` is being
        processed it is only marked dirty and is queued again when that processing is done.
        """
        if self._shutting_down or item in self._dirty:
            return
        if self._metrics is not None:
            self._metrics.add(item)
        self._dirty.add(item)
        if item in self._processing:
            return
        self._queue.append(item)
        if self._getters:
            self._wake_getter()

    async def get(self) -> T:
        """Wait for the next item and hand it out; the caller must later call :meth:`done`.

        Raises :class:`ShutDown` once the queue is shut down and empty: the worker should
        return. Cancelling a waiting ``get`` loses no item.
        """
        queue = self._queue
        while not queue:
            if self._shutting_down:
                raise ShutDown("work queue is shut down")
            waiter = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except BaseException:
                waiter.cancel()
                with contextlib.suppress(ValueError):
                    self._getters.remove(waiter)
                # Woken for an item but leaving without it: pass the wake-up on.
                if queue and not waiter.cancelled():
                    self._wake_getter()
                raise
        item = queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        if self._metrics is not None:
            self._metrics.get(item)
        return item

    def done(self, item: T) -> None:
        """Mark ``item`` as processed; if it was added again meanwhile, queue it again.

        Calling ``done`` for an item that is not being processed does nothing.
        """
        processing = self._processing
        try:
            processing.remove(item)
        except KeyError:
            return
        if self._metrics is not None:
            self._metrics.done(item)
        if item in self._dirty:
            self._queue.append(item)
            if self._getters:
                self._wake_getter()
        if not processing and self._drainers:
            self._wake_all(self._drainers)

    def is_dirty(self, item: T) -> bool:
        """Whether ``item`` waits to be handed out: added and not handed out since, or -
        while it is being processed - added again (it will be processed once more after
        :meth:`done`). A sync can leave to that next round a write it would supersede."""
        return item in self._dirty

    def len(self) -> int:
        """The number of items waiting to be handed out; informational only."""
        return len(self._queue)

    def __len__(self) -> int:
        return len(self._queue)

    def __bool__(self) -> bool:
        return True

    def shutdown(self) -> None:
        """Stop accepting adds and return at once.

        Queued items are still handed out; then every ``get`` raises :class:`ShutDown`. Ends
        the wait of a pending :meth:`shutdown_with_drain`.
        """
        self._drain = False
        self._shutting_down = True
        self._wake_all(self._getters)
        self._wake_all(self._drainers)

    async def shutdown_with_drain(self) -> None:
        """Stop accepting adds, then wait until no item is being processed.

        Every item handed out must reach :meth:`done` or this waits forever; a later
        :meth:`shutdown` (say, on a second SIGTERM) ends the wait early.
        """
        self._drain = True
        self._shutting_down = True
        self._wake_all(self._getters)
        while self._processing and self._drain:
            waiter = asyncio.get_running_loop().create_future()
            self._drainers.append(waiter)
            try:
                await waiter
            finally:
                with contextlib.suppress(ValueError):
                    self._drainers.remove(waiter)

    def shutting_down(self) -> bool:
        """True once :meth:`shutdown` or :meth:`shutdown_with_drain` has been called."""
        return self._shutting_down

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} name={self._name!r} queued={len(self._queue)} "
            f"processing={len(self._processing)} shutting_down={self._shutting_down}>"
        )

    def _wake_getter(self) -> None:
        getters = self._getters
        while getters:
            waiter = getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    @staticmethod
    def _wake_all(waiters: deque[asyncio.Future[None]] | list[asyncio.Future[None]]) -> None:
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        waiters.clear()
