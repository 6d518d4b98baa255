"""A work queue that can also add an item after a delay, to retry failures without hot-looping."""

from __future__ import annotations

from collections.abc import Coroutine
from functools import partial
from typing import Any, Generic

from prometheus_client import CollectorRegistry

from kcontrol.clock import Clock, RealClock, TimerHandle
from kcontrol.workqueue._metrics import new_retry_metrics
from kcontrol.workqueue._queue import Queue, T

__all__ = ["DelayingQueue"]


class DelayingQueue(Generic[T]):
    """A :class:`Queue` plus :meth:`add_after`; it wraps a queue and delegates the rest to it.

    While an item waits for its delay it is not in the queue: ``len`` does not count it and a
    plain :meth:`add` of it queues it at once (the pending delayed add then collapses with it,
    or re-adds it later if it was handed out meanwhile, as in client-go). An item waits at most
    once; adding it after a shorter delay moves it earlier, a longer delay is ignored.

    Each waiting item holds one timer from the clock; there is no background task, so nothing
    needs to be started or awaited. :meth:`shutdown` cancels every timer.

    Options are those of :class:`Queue` (``name``, ``clock``, ``registry``); ``queue`` supplies
    the wrapped queue instead of a new one (its name and clock should match). A named delaying
    queue also counts each :meth:`add_after` in ``workqueue_retries_total``.
    """

    __slots__ = ("_clock", "_queue", "_retries", "_waiting")

    def __init__(
        self,
        *,
        name: str | None = None,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        queue: Queue[T] | None = None,
    ) -> None:
        self._clock: Clock = clock if clock is not None else RealClock()
        self._queue: Queue[T] = (
            queue if queue is not None else Queue(name=name, clock=self._clock, registry=registry)
        )
        # Items waiting for their delay: item -> (ready time, timer that adds it then).
        # Invariant: each timer is live and fires at its ready time; none is in the clock twice.
        self._waiting: dict[T, tuple[float, TimerHandle]] = {}
        self._retries = new_retry_metrics(name or None, self._clock, registry)

    @property
    def name(self) -> str | None:
        """The name of the wrapped queue."""
        return self._queue.name

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds have passed.

        Ignored while shutting down. ``delay <= 0`` adds at once. If ``item`` is already
        waiting, it keeps the earlier of its two ready times.
        """
        if self._queue.shutting_down():
            return
        if self._retries is not None:
            self._retries.retry()
        if delay <= 0:
            self._queue.add(item)
            return
        ready_at = self._clock.now() + delay
        waiting = self._waiting.get(item)
        if waiting is not None:
            if waiting[0] <= ready_at:
                return
            waiting[1].cancel()
        timer = self._clock.call_at(ready_at, partial(self._ready, item))
        self._waiting[item] = (ready_at, timer)

    def cancel_add_after(self, item: T) -> bool:
        """Drop ``item``'s pending delayed add, if it has one; True if it had. The item's
        place in the queue, if it is queued or being processed, does not change."""
        waiting = self._waiting.pop(item, None)
        if waiting is None:
            return False
        waiting[1].cancel()
        return True

    def _ready(self, item: T) -> None:
        if self._waiting.pop(item, None) is not None:
            self._queue.add(item)

    def waiting_len(self) -> int:
        """The number of items waiting for their delay; informational only."""
        return len(self._waiting)

    def shutdown(self) -> None:
        """Shut the queue down (see :meth:`Queue.shutdown`) and drop every waiting item."""
        self._queue.shutdown()
        self._cancel_waiting()

    async def shutdown_with_drain(self) -> None:
        """Drop every waiting item, shut down and drain; see :meth:`Queue.shutdown_with_drain`."""
        self._cancel_waiting()
        await self._queue.shutdown_with_drain()

    def _cancel_waiting(self) -> None:
        for _, timer in self._waiting.values():
            timer.cancel()
        self._waiting.clear()

    # Delegation to the wrapped queue; see Queue for the contracts.

    def add(self, item: T) -> None:
        """See :meth:`Queue.add`."""
        self._queue.add(item)

    def get(self) -> Coroutine[Any, Any, T]:
        """See :meth:`Queue.get`; await the result. Every item got must be passed to ``done``."""
        return self._queue.get()

    def done(self, item: T) -> None:
        """See :meth:`Queue.done`."""
        self._queue.done(item)

    def is_dirty(self, item: T) -> bool:
        """See :meth:`Queue.is_dirty`; an item waiting for its delay is not dirty until
        the delay has passed."""
        return self._queue.is_dirty(item)

    def len(self) -> int:
        """See :meth:`Queue.len`; waiting items are not counted."""
        return self._queue.len()

    def __len__(self) -> int:
        return self._queue.len()

    def __bool__(self) -> bool:
        return True

    def shutting_down(self) -> bool:
        """See :meth:`Queue.shutting_down`."""
        return self._queue.shutting_down()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} waiting={len(self._waiting)} queue={self._queue!r}>"
