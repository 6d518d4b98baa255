"""A health check for leader election (client-go's ``HealthzAdaptor``)."""

from __future__ import annotations

from typing import Protocol

__all__ = ["HealthzAdaptor", "LivenessChecked"]


class LivenessChecked(Protocol):
    """An election the adaptor can check: a :class:`~kcontrol.leaderelection.LeaderElector`,
    or a :class:`~kcontrol.leaderelection.ShardedElection` (every Lease it leads)."""

    def check(self, max_tolerable_expired_lease: float) -> bool: ...


class HealthzAdaptor:
    """Reports unhealthy when this process leads but its renewals have stalled.

    A leader whose renew loop works gives up leading within the renew deadline; one that still
    thinks it leads ``lease_duration + timeout`` after its last renewal is stuck (a deadlock, a
    blocked event loop) and should be restarted by its liveness probe. Standbys are always
    healthy; a sharded replica is healthy while every Lease it leads (its member Lease and
    each shard's) is renewed. The adaptor can be registered before the elector exists:
    :meth:`set_leader_election` ties them together later.
    """

    name = "leaderElection"

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._elector: LivenessChecked | None = None

    def set_leader_election(self, elector: LivenessChecked) -> None:
        self._elector = elector

    def check(self) -> bool:
        """``True`` when healthy (or no elector is attached yet)."""
        return self._elector is None or self._elector.check(self.timeout)
