"""Options of a leader elector, validated as client-go's ``NewLeaderElector`` validates them."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from kcontrol.clock import Clock, RealClock
from kcontrol.errors import InvalidLeaderElectionConfig
from kcontrol.leaderelection._lock import ResourceLock

__all__ = [
    "JITTER_FACTOR",
    "InvalidLeaderElectionConfig",
    "LeaderCallbacks",
    "LeaderElectionConfig",
    "validate_timings",
]

JITTER_FACTOR = 1.2
"""client-go's ``leaderelection.JitterFactor``: acquire retries wait ``retry_period`` times a
random factor in ``[1, 1 + JITTER_FACTOR)``, and ``renew_deadline`` must exceed
``JITTER_FACTOR * retry_period``."""


def validate_timings(
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    *,
    names: tuple[str, str, str] = ("lease_duration", "renew_deadline", "retry_period"),
) -> None:
    """client-go's ``NewLeaderElector`` rules, the one place they are checked: every duration
    > 0, ``lease_duration >= 1`` (the Lease holds whole seconds), and
    ``lease_duration > renew_deadline > JITTER_FACTOR * retry_period``.

    ``names`` are what the messages call the three values (kcontrol-manager passes its flag
    names). Raises :class:`InvalidLeaderElectionConfig` (a :class:`ValueError`).
    """
    lease_name, renew_name, retry_name = names
    for label, value in (
        (lease_name, lease_duration),
        (renew_name, renew_deadline),
        (retry_name, retry_period),
    ):
        if not value > 0:
            raise InvalidLeaderElectionConfig(f"{label} must be greater than zero, not {value}")
    if lease_duration < 1:
        raise InvalidLeaderElectionConfig(
            f"{lease_name} is written to the Lease in whole seconds and must be at least 1, "
            f"not {lease_duration}"
        )
    if lease_duration <= renew_deadline:
        raise InvalidLeaderElectionConfig(
            f"{lease_name} must be greater than {renew_name} ({lease_duration} <= {renew_deadline})"
        )
    if renew_deadline <= JITTER_FACTOR * retry_period:
        raise InvalidLeaderElectionConfig(
            f"{renew_name} must be greater than {JITTER_FACTOR} * {retry_name} "
            f"({renew_deadline} <= {JITTER_FACTOR} * {retry_period})"
        )


@dataclass(frozen=True, slots=True)
class LeaderCallbacks:
    """Lifecycle hooks of an elector.

    ``on_started_leading`` is the guarded work: it runs while this candidate leads and is
    cancelled (and awaited) as soon as leadership ends. ``on_stopped_leading`` is called once
    whenever :meth:`LeaderElector.run` exits, whether or not it ever led (as in client-go).
    ``on_new_leader`` is called with each newly observed holder identity, including the first one
    and ``""`` after a holder released the lease. The two plain callbacks run synchronously on the
    elector's task and must not block; an exception from them is logged and ignored.
    """

    on_started_leading: Callable[[], Awaitable[None]] | None = None
    on_stopped_leading: Callable[[], object] | None = None
    on_new_leader: Callable[[str], object] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionConfig:
    """What to contend for and how; durations in seconds (defaults of kube-controller-manager).

    - ``lease_duration``: how long a standby waits, counted from when *it* last saw the record
      change, before it takes the lease over. The Lease holds whole seconds: a fractional
      duration is written rounded *up* (2.5 s as 3, see :attr:`lease_duration_seconds`), so
      a standby never waits less than configured; at least 1.
    - ``renew_deadline``: how long the leader keeps retrying a renewal, counted from its last
      successful one, before it gives up leading. Must be below ``lease_duration`` so the
      leader stops before anyone else can start.
    - ``retry_period``: the pause between attempts (jittered while acquiring).
    - ``release_on_cancel``: when :meth:`LeaderElector.run` is cancelled, release the lease
      (after the guarded work has finished) so a standby takes over at once.
    - ``name``: the ``name`` label of the ``leader_election_master_status`` metric and the
      logger; defaults to the lock's description.
    - ``registry``: the Prometheus registry for the metrics (the default registry if ``None``).

    Constraints (raising :class:`InvalidLeaderElectionConfig`): every duration > 0,
    ``lease_duration >= 1``, ``lease_duration > renew_deadline > JITTER_FACTOR * retry_period``,
    and the lock has a non-empty identity.
    """

    lock: ResourceLock
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True
    name: str = ""
    callbacks: LeaderCallbacks = field(default_factory=LeaderCallbacks)
    clock: Clock = field(default_factory=RealClock)
    registry: CollectorRegistry | None = None

    def __post_init__(self) -> None:
        validate_timings(self.lease_duration, self.renew_deadline, self.retry_period)
        if not self.lock.identity:
            raise InvalidLeaderElectionConfig("the lock's identity is empty")

    @property
    def lease_duration_seconds(self) -> int:
        """``spec.leaseDurationSeconds`` to write: ``lease_duration`` rounded up to whole
        seconds (never down: standbys wait what the Lease says, and the renew deadline was
        checked against ``lease_duration``). Rounded to microseconds first, so float noise
        (``0.1 * 30``) does not add a second."""
        return math.ceil(round(self.lease_duration, 6))

    @property
    def metric_name(self) -> str:
        return self.name or self.lock.describe()
