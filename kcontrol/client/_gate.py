"""The write gate: a last check, right before a mutating request leaves, that it may.

A leader that lost its lease must not write after its successor has started. Cancelling its
work is not enough on its own: a write may be waiting on the client-side rate limiter, or on
a ``Retry-After``, or in the middle of opening its connection, when the lease runs out, and
would go out afterwards. So the client itself asks a :data:`WriteGate` before it sends each
POST, PUT, PATCH or DELETE - after those waits, and again once the connection is ready,
right before the request is written - and raises :class:`~kcontrol.errors.WriteRefused`
instead of sending when the gate is closed. (A process stopped between that last check and
the write itself, a window of one event-loop step, can still send late.)

kcontrol-manager gives its controllers a client gated on the leader elector's local lease
check (:meth:`kcontrol.leaderelection.LeaderElector.holds_lease`), which turns false at the
renew deadline on the leader's own monotonic clock, even while a renewal request hangs. Sharded
(``--shards``), the gate is asked about the namespace written to: a write passes only while the
Lease of the shard that namespace hashes into is held.
"""

from __future__ import annotations

from collections.abc import Callable

from kcontrol.errors import WriteRefused

__all__ = ["MUTATING_METHODS", "WriteGate", "check_write"]

WriteGate = Callable[[str], bool]
"""``gate(namespace) -> bool``: may a mutating request on an object in ``namespace`` (``""``
for a cluster-scoped object) be sent now?

Called before each attempt of every POST, PUT, PATCH and DELETE of a gated client, and
again once its connection is ready (never for reads or watches). It must be cheap and
synchronous and must not raise: a local check such as "the lease was renewed less than the
renew deadline ago" (a gate that does not shard ignores ``namespace``).
"""

MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""The HTTP methods a write gate is asked about."""


def check_write(gate: WriteGate, name: str, namespace: str, method: str, path: str) -> None:
    """Return if ``method path`` (on an object in ``namespace``) may be sent; raise
    :class:`WriteRefused` if ``gate`` (named ``name`` in the message) is closed for
    ``namespace`` and the request would change something."""
    if method not in MUTATING_METHODS or gate(namespace):
        return
    raise WriteRefused(
        f"{method} {path}: not sent, writes are closed ({name})", method=method, path=path
    )
