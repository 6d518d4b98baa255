"""What a reconcile receives and returns: controller-runtime's ``reconcile`` package.

A reconcile is level-based: it is told *which* object to look at (a :class:`Request`), never
*what happened* to it. It reads the current state (from the cache), converges, and returns
``None`` (done) or a :class:`~kcontrol.controller.Result` (requeue). Raising any
:class:`Exception` means "retry later, with backoff".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kcontrol.controller import Result
from kcontrol.informers import split_meta_namespace_key

__all__ = ["Finalize", "Reconcile", "Request"]


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """The object a reconcile converges, by name (controller-runtime's ``reconcile.Request``).

    ``namespace`` is ``""`` for a cluster-scoped object. Requests are hashable and ordered;
    the work queue holds their :attr:`key`, so a request for an object already waiting is
    merged with it.
    """

    namespace: str
    name: str

    @property
    def key(self) -> str:
        """``namespace/name``, or ``name`` for a cluster-scoped object (the queue's key)."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def from_key(cls, key: str) -> Request:
        """The request of a queue key (:attr:`key`'s inverse)."""
        namespace, name = split_meta_namespace_key(key)
        return cls(namespace, name)

    def __str__(self) -> str:
        return self.key


Reconcile = Callable[[Request], Awaitable[Result | None]]
"""``async def reconcile(request) -> Result | None``: converge the object ``request`` names.

Return ``None`` when done; ``Result(requeue_after=seconds)`` to look again later (a deadline,
a poll of something that sends no events); ``Result(requeue=True)`` to retry with backoff
without logging an error. Raise to retry with backoff and an error in the log. The object may
be gone (deleted): read it from the cache and return ``None`` on
:class:`~kcontrol.errors.NotFound`.
"""

Finalize = Callable[[Request], Awaitable[Result | None]]
"""``async def finalize(request) -> Result | None``: clean up before an object is deleted.

Called by a builder's controller while the object has a deletion timestamp and still carries
the builder's finalizer. When it returns ``None`` (or a ``Result`` asking for nothing), the
finalizer is removed and the API server completes the deletion; a ``Result`` asking for a
requeue, or an exception, keeps the finalizer and calls it again later.
"""
