"""The failed-pods backoff: how long to wait before deleting (and so replacing) another failed
daemon pod on the same node.

A port of the parts of client-go ``util/flowcontrol.Backoff`` the DaemonSet controller uses
(``Next``, ``Get``, ``IsInBackOffSinceUpdate``, ``GC``), without jitter, as
kube-controller-manager builds it: 1 s at first, doubling, at most 15 min
(``flowcontrol.NewBackOff(1*time.Second, 15*time.Minute)``). Entries are keyed by
:func:`~kcontrol_controllers.daemonset._pods.failed_pods_backoff_key` (DaemonSet UID, observed
generation, node), so a new generation starts without delay.

Contract: an entry that was not stepped for twice the maximum has expired - the next step
starts again at the initial delay, and :meth:`FailedPodsBackoff.gc` drops it. Times are the
injected clock's monotonic seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kcontrol.clock import Clock

__all__ = ["FAILED_PODS_BACKOFF_INITIAL", "FAILED_PODS_BACKOFF_MAX", "FailedPodsBackoff"]

FAILED_PODS_BACKOFF_INITIAL: Final = 1.0
"""Seconds of the first delay after a failed pod was deleted."""
FAILED_PODS_BACKOFF_MAX: Final = 15 * 60.0
"""The longest delay, in seconds."""


@dataclass(slots=True)
class _Entry:
    backoff: float
    last_update: float


class FailedPodsBackoff:
    """Per-key exponential delays on ``clock`` (module docstring). Not thread-safe; the
    controller's workers share one event loop."""

    __slots__ = ("_clock", "_entries", "_initial", "_max")

    def __init__(
        self,
        clock: Clock,
        initial: float = FAILED_PODS_BACKOFF_INITIAL,
        maximum: float = FAILED_PODS_BACKOFF_MAX,
    ) -> None:
        if initial <= 0 or maximum < initial:
            raise ValueError(f"need 0 < initial <= maximum, got {initial}, {maximum}")
        self._clock = clock
        self._initial = initial
        self._max = maximum
        self._entries: dict[str, _Entry] = {}

    @property
    def clock(self) -> Clock:
        return self._clock

    def _expired(self, entry: _Entry, now: float) -> bool:
        return now - entry.last_update > 2 * self._max

    def get(self, key: str) -> float:
        """The current delay of ``key`` (0 without an entry)."""
        entry = self._entries.get(key)
        return entry.backoff if entry is not None else 0.0

    def next(self, key: str, now: float) -> None:
        """Step ``key``: start at the initial delay (no entry, or an expired one), else double
        the delay up to the maximum; either way the entry is updated at ``now``."""
        entry = self._entries.get(key)
        if entry is None or self._expired(entry, now):
            self._entries[key] = _Entry(self._initial, now)
            return
        entry.backoff = min(entry.backoff * 2, self._max)
        entry.last_update = now

    def is_in_backoff_since_update(self, key: str, now: float) -> bool:
        """True while less than the current delay has passed since ``key`` was last stepped
        (and the entry has not expired)."""
        entry = self._entries.get(key)
        if entry is None or self._expired(entry, now):
            return False
        return now - entry.last_update < entry.backoff

    def gc(self) -> None:
        """Drop the expired entries."""
        now = self._clock.now()
        for key in [k for k, e in self._entries.items() if self._expired(e, now)]:
            del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)
