"""Expectations: how a controller avoids acting again on a cache that has not caught up yet.

A controller that creates three pods does not see them in its informer cache at once. If it
synced again before the cache caught up it would count too few pods and create three more.
So before acting it records what it *expects* to observe (``expect_creations(key, 3)``); the
informer's event handlers lower the count as the objects show up (``creation_observed(key)``);
and the sync only manages replicas while :meth:`ControllerExpectations.satisfied_expectations`
is true. A port of ``ControllerExpectations`` and ``UIDTrackingControllerExpectations`` from
kubernetes ``pkg/controller/controller_utils.go``.

Expectations are satisfied when

- both pending counts are ``<= 0`` (everything expected was observed), or
- the record is older than :data:`EXPECTATIONS_TIMEOUT` (5 minutes): a watch event may have been
  lost, and a stale expectation must not wedge the controller forever, or
- there is no record (a new controller, or one whose expectations were deleted).

Both classes belong to one event loop and are not thread-safe: call them from the loop that
runs the informers and workers (event handlers and syncs), never from other threads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kcontrol.clock import Clock, RealClock
from kcontrol.logging import get_logger

__all__ = [
    "EXPECTATIONS_TIMEOUT",
    "ControlleeExpectations",
    "ControllerExpectations",
    "UIDTrackingControllerExpectations",
]

_log = get_logger(__name__)

EXPECTATIONS_TIMEOUT = 5 * 60.0
"""Seconds after which an unfulfilled expectation no longer blocks a sync."""


@dataclass(frozen=True, slots=True)
class ControlleeExpectations:
    """A snapshot of one controller's expectations.

    ``add`` and ``delete`` are the creations and deletions still to be observed (they may go
    negative when more is observed than was expected); ``timestamp`` is the clock's
    :meth:`~kcontrol.clock.Clock.now` when the expectations were last *set*. Raising or lowering
    the counts does not refresh it, so a record that keeps being raised still expires.
    """

    add: int
    delete: int
    timestamp: float

    def fulfilled(self) -> bool:
        """True once every expected creation and deletion was observed."""
        return self.add <= 0 and self.delete <= 0


class _Record:
    """The mutable per-key record behind a :class:`ControlleeExpectations` snapshot."""

    __slots__ = ("add", "delete", "timestamp")

    def __init__(self, add: int, delete: int, timestamp: float) -> None:
        self.add = add
        self.delete = delete
        self.timestamp = timestamp


class ControllerExpectations:
    """Pending creation and deletion counts per controller key (``"namespace/name"``).

    See the module docstring for the protocol. ``clock`` measures the record age against
    ``timeout`` (default :data:`EXPECTATIONS_TIMEOUT`).
    """

    __slots__ = ("_clock", "_records", "_timeout")

    def __init__(
        self, *, clock: Clock | None = None, timeout: float = EXPECTATIONS_TIMEOUT
    ) -> None:
        self._clock: Clock = clock if clock is not None else RealClock()
        self._timeout = timeout
        self._records: dict[str, _Record] = {}

    def get_expectations(self, key: str) -> ControlleeExpectations | None:
        """A snapshot of the record for ``key``, or ``None`` when there is none."""
        record = self._records.get(key)
        if record is None:
            return None
        return ControlleeExpectations(record.add, record.delete, record.timestamp)

    def satisfied_expectations(self, key: str) -> bool:
        """True when the controller may act: fulfilled, expired, or no record at all."""
        record = self._records.get(key)
        if record is None:
            return True
        if record.add <= 0 and record.delete <= 0:
            return True
        if self._clock.now() - record.timestamp > self._timeout:
            _log.debug("expectations expired", controller=key, add=record.add, delete=record.delete)
            return True
        return False

    def set_expectations(self, key: str, add: int, delete: int) -> None:
        """Replace the record for ``key`` with these counts, timestamped now."""
        self._records[key] = _Record(add, delete, self._clock.now())

    def expect_creations(self, key: str, adds: int) -> None:
        """Expect ``adds`` creations (and no deletions), replacing any previous record."""
        self.set_expectations(key, adds, 0)

    def expect_deletions(self, key: str, deletes: int) -> None:
        """Expect ``deletes`` deletions (and no creations), replacing any previous record."""
        self.set_expectations(key, 0, deletes)

    def raise_expectations(self, key: str, add: int, delete: int) -> None:
        """Add to the pending counts of an existing record; no-op without one."""
        record = self._records.get(key)
        if record is not None:
            record.add += add
            record.delete += delete

    def lower_expectations(self, key: str, add: int, delete: int) -> None:
        """Subtract from the pending counts of an existing record; no-op without one.

        Also how a controller takes back expectations for requests that failed or were never
        sent (a skipped creation will never be observed).
        """
        record = self._records.get(key)
        if record is not None:
            record.add -= add
            record.delete -= delete

    def creation_observed(self, key: str) -> None:
        """The informer saw one creation for ``key``'s controller."""
        self.lower_expectations(key, 1, 0)

    def deletion_observed(self, key: str) -> None:
        """The informer saw one deletion for ``key``'s controller."""
        self.lower_expectations(key, 0, 1)

    def delete_expectations(self, key: str) -> None:
        """Forget ``key`` (the controller was deleted); its expectations are satisfied again."""
        self._records.pop(key, None)


class UIDTrackingControllerExpectations:
    """Expectations that remember *which* objects are expected to be deleted.

    The ReplicaSet controller deletes chosen pods; a deletion of some other pod (a user's
    ``kubectl delete``) must not count towards them, and a pod's deletion may be observed
    twice (once when its ``deletionTimestamp`` is set, once when it is gone). So
    :meth:`expect_deletions` records the keys of the pods being deleted and
    :meth:`deletion_observed` lowers the count only the first time one of *those* keys is seen.

    Creations are counted as in :class:`ControllerExpectations`, which this wraps (pass one in
    to share it, or let it make its own from ``clock`` and ``timeout``).
    """

    __slots__ = ("_expectations", "_uids")

    def __init__(
        self,
        expectations: ControllerExpectations | None = None,
        *,
        clock: Clock | None = None,
        timeout: float = EXPECTATIONS_TIMEOUT,
    ) -> None:
        self._expectations = (
            expectations
            if expectations is not None
            else ControllerExpectations(clock=clock, timeout=timeout)
        )
        # Controller key -> keys of the objects whose deletion is still to be observed.
        self._uids: dict[str, set[str]] = {}

    def get_uids(self, key: str) -> frozenset[str] | None:
        """The object keys still expected to be deleted for ``key``, or ``None``."""
        uids = self._uids.get(key)
        return frozenset(uids) if uids is not None else None

    def expect_deletions(self, key: str, deleted_keys: Iterable[str]) -> None:
        """Expect the deletion of exactly these objects, replacing any previous record."""
        expected = set(deleted_keys)
        existing = self._uids.get(key)
        if existing:
            _log.warning("clobbering existing delete keys", controller=key, keys=sorted(existing))
        self._uids[key] = expected
        self._expectations.expect_deletions(key, len(expected))

    def deletion_observed(self, key: str, deleted_key: str) -> None:
        """The informer saw the object ``deleted_key`` go; counts only if it was expected."""
        uids = self._uids.get(key)
        if uids is not None and deleted_key in uids:
            uids.discard(deleted_key)
            self._expectations.deletion_observed(key)

    def delete_expectations(self, key: str) -> None:
        """Forget ``key``: both its counts and its expected deletions."""
        self._expectations.delete_expectations(key)
        self._uids.pop(key, None)

    # Creations and the generic operations are those of the wrapped ControllerExpectations.

    def get_expectations(self, key: str) -> ControlleeExpectations | None:
        """See :meth:`ControllerExpectations.get_expectations`."""
        return self._expectations.get_expectations(key)

    def satisfied_expectations(self, key: str) -> bool:
        """See :meth:`ControllerExpectations.satisfied_expectations`."""
        return self._expectations.satisfied_expectations(key)

    def expect_creations(self, key: str, adds: int) -> None:
        """See :meth:`ControllerExpectations.expect_creations`."""
        self._expectations.expect_creations(key, adds)

    def creation_observed(self, key: str) -> None:
        """See :meth:`ControllerExpectations.creation_observed`."""
        self._expectations.creation_observed(key)

    def raise_expectations(self, key: str, add: int, delete: int) -> None:
        """See :meth:`ControllerExpectations.raise_expectations`."""
        self._expectations.raise_expectations(key, add, delete)

    def lower_expectations(self, key: str, add: int, delete: int) -> None:
        """See :meth:`ControllerExpectations.lower_expectations`."""
        self._expectations.lower_expectations(key, add, delete)
