"""A delaying work queue whose retries are paced by a rate limiter: what controllers use."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Generic

from prometheus_client import CollectorRegistry

from kcontrol.clock import Clock, RealClock
from kcontrol.workqueue._delaying import DelayingQueue
from kcontrol.workqueue._limiters import RateLimiter, default_controller_rate_limiter
from kcontrol.workqueue._queue import T

__all__ = ["RateLimitingQueue"]


class RateLimitingQueue(Generic[T]):
    """A :class:`DelayingQueue` plus retries paced by a :class:`RateLimiter`.

    The usual worker loop::

        key = await queue.get()
        try:
            await sync(key)
        except Exception:
            queue.add_rate_limited(key)   # retry later, after a growing delay
        else:
            queue.forget(key)             # success: reset the key's backoff
        finally:
            queue.done(key)               # always

    Call :meth:`forget` when an item stops failing, or the limiter tracks it forever.
    ``forget`` only resets the backoff; :meth:`done` must still be called.

    Options are those of :class:`DelayingQueue` (``name``, ``clock``, ``registry``) plus
    ``rate_limiter`` (default :func:`default_controller_rate_limiter`, on ``clock``);
    ``queue`` supplies the wrapped delaying queue instead of a new one.
    """

    __slots__ = ("_limiter", "_queue")

    def __init__(
        self,
        *,
        rate_limiter: RateLimiter[T] | None = None,
        name: str | None = None,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        queue: DelayingQueue[T] | None = None,
    ) -> None:
        clock = clock if clock is not None else RealClock()
        self._limiter: RateLimiter[T] = (
            rate_limiter
            if rate_limiter is not None
            else default_controller_rate_limiter(clock=clock)
        )
        self._queue: DelayingQueue[T] = (
            queue if queue is not None else DelayingQueue(name=name, clock=clock, registry=registry)
        )

    @property
    def name(self) -> str | None:
        """The name of the wrapped queue."""
        return self._queue.name

    @property
    def rate_limiter(self) -> RateLimiter[T]:
        """The limiter that paces :meth:`add_rate_limited`."""
        return self._limiter

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the delay the rate limiter asks for (counting one failure)."""
        self._queue.add_after(item, self._limiter.when(item))

    def forget(self, item: T) -> None:
        """Stop tracking ``item``'s failures; does not replace :meth:`done`."""
        self._limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """How many times ``item`` was requeued since it was last forgotten."""
        return self._limiter.num_requeues(item)

    # Delegation to the wrapped delaying queue; see Queue and DelayingQueue for the contracts.

    def add_after(self, item: T, delay: float) -> None:
        """See :meth:`DelayingQueue.add_after`."""
        self._queue.add_after(item, delay)

    def cancel_add_after(self, item: T) -> bool:
        """See :meth:`DelayingQueue.cancel_add_after` (a pending rate-limited add included;
        the item's failure count is unchanged)."""
        return self._queue.cancel_add_after(item)

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
        """See :meth:`Queue.is_dirty`; an item waiting for a delay (a rate limit's
        included) is not dirty until the delay has passed."""
        return self._queue.is_dirty(item)

    def len(self) -> int:
        """See :meth:`Queue.len`; items waiting for a delay are not counted."""
        return self._queue.len()

    def __len__(self) -> int:
        return self._queue.len()

    def __bool__(self) -> bool:
        return True

    def waiting_len(self) -> int:
        """See :meth:`DelayingQueue.waiting_len`."""
        return self._queue.waiting_len()

    def shutdown(self) -> None:
        """See :meth:`DelayingQueue.shutdown`."""
        self._queue.shutdown()

    def shutdown_with_drain(self) -> Coroutine[Any, Any, None]:
        """See :meth:`DelayingQueue.shutdown_with_drain`; await the result."""
        return self._queue.shutdown_with_drain()

    def shutting_down(self) -> bool:
        """See :meth:`Queue.shutting_down`."""
        return self._queue.shutting_down()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} queue={self._queue!r}>"
