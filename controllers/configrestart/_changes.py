"""Changes waiting for their grace period, compacted (pure; time is passed in).

A *change* is named by the catalog key of the resource that caused it and remembers when it
was first seen and how many times it was seen since (its counter). A second change of the
same resource within the grace period only increments the counter, so a config edited twice
in quick succession restarts its workloads once. A change is *due* once it is at least the
grace period old, counted from its first observation (as xing does: a resource that keeps
changing is still processed a grace period after its first change).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Change", "ChangeQueue"]


@dataclass(slots=True)
class Change:
    """``first_seen`` on the controller's monotonic clock; ``count`` >= 1."""

    first_seen: float
    count: int = 1


class ChangeQueue:
    """Pending changes by resource key. ``grace`` in seconds (>= 0)."""

    def __init__(self, grace: float) -> None:
        if grace < 0:
            raise ValueError(f"grace must be >= 0, got {grace}")
        self.grace = grace
        self._changes: dict[str, Change] = {}

    def __len__(self) -> int:
        return len(self._changes)

    def __contains__(self, key: object) -> bool:
        return key in self._changes

    def get(self, key: str) -> Change | None:
        return self._changes.get(key)

    def add(self, key: str, now: float) -> Change:
        """Record a change of ``key`` at ``now``: a new change, or the pending one with its
        counter incremented."""
        change = self._changes.get(key)
        if change is None:
            change = self._changes[key] = Change(now)
        else:
            change.count += 1
        return change

    def restart_grace(self, now: float) -> None:
        """Count every pending change as first seen at ``now``, its counter kept: the
        controller's start-up, where the changes recorded while the caches filled are the
        starting state and must come due together."""
        for change in self._changes.values():
            change.first_seen = now

    def discard(self, key: str) -> None:
        """Drop ``key``'s change (its resource was deleted or opted out)."""
        self._changes.pop(key, None)

    def pop_due(self, now: float) -> dict[str, Change]:
        """Remove and return the changes at least ``grace`` old, oldest first."""
        due = {
            key: change
            for key, change in sorted(self._changes.items(), key=lambda kv: kv[1].first_seen)
            if now - change.first_seen >= self.grace
        }
        for key in due:
            del self._changes[key]
        return due
