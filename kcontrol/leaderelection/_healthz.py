"""A health check for leader election (client-go's ``HealthzAdaptor``)."""

from __future__ import annotations

from kcontrol.leaderelection._elector import LeaderElector

__all__ = ["HealthzAdaptor"]


class HealthzAdaptor:
    """Reports unhealthy when this process leads but its renewals have stalled.

    A leader whose renew loop works gives up leading within the renew deadline; one that still
    thinks it leads ``lease_duration + timeout`` after its last renewal is stuck (a deadlock, a
    blocked event loop) and should be restarted by its liveness probe. Standbys are always
    healthy. The adaptor can be registered before the elector exists:
    :meth:`set_leader_election` ties them together later.
    """

    name = "leaderElection"

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._elector: LeaderElector | None = None

    def set_leader_election(self, elector: LeaderElector) -> None:
        self._elector = elector

    def check(self) -> bool:
        """``True`` when healthy (or no elector is attached yet)."""
        return self._elector is None or self._elector.check(self.timeout)
