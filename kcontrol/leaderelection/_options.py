"""Whether and how a process elects: :class:`LeaderElectionOptions`, component-base's
``LeaderElectionConfiguration`` (the ``--leader-elect*`` flags) with kcontrol's two additions,
the holder identity and the number of shards.
"""

from __future__ import annotations

from dataclasses import dataclass

from kcontrol.errors import InvalidLeaderElectionConfig, OptionsError
from kcontrol.leaderelection._config import validate_timings

__all__ = ["LeaderElectionOptions"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionOptions:
    """How a manager takes part in leader election; durations are seconds.

    The fields are component-base's ``LeaderElectionConfiguration`` in snake_case, with the
    defaults kube-controller-manager gives its flags (``--leader-elect``,
    ``--leader-elect-lease-duration``, ...): ``leader_elect`` runs the controllers only while
    holding the Lease ``resource_namespace/resource_name`` (``resource_lock`` is ``leases``,
    the only kind); a standby takes it ``lease_duration`` after the last renewal it saw, the
    leader gives up after failing to renew for ``renew_deadline``, and both try again every
    ``retry_period``.

    kcontrol's own: ``identity`` is the holder identity (default ``<hostname>_<uuid>``, as
    upstream's); ``shards`` above 1 cuts the namespaces' hash into that many shards, each held
    through a Lease of its own (``<resource_name>-shard-<k>-of-<N>``) by one of the replicas
    (:class:`~kcontrol.leaderelection.ShardedElection`); 1 is one leader for everything.
    """

    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = ""
    resource_namespace: str = ""
    identity: str | None = None
    shards: int = 1

    def validate(self) -> None:
        """Raise :class:`~kcontrol.errors.OptionsError` (naming the flag) for values that
        cannot work together."""
        if self.leader_elect:
            try:
                validate_timings(
                    self.lease_duration,
                    self.renew_deadline,
                    self.retry_period,
                    names=(
                        "--leader-elect-lease-duration",
                        "--leader-elect-renew-deadline",
                        "--leader-elect-retry-period",
                    ),
                )
            except InvalidLeaderElectionConfig as error:
                raise OptionsError(str(error)) from None
            if not self.resource_name or not self.resource_namespace:
                raise OptionsError("--leader-elect-resource-name and -namespace must be set")
        if self.shards < 1:
            raise OptionsError(f"--shards must be at least 1, not {self.shards}")
        if self.shards > 1 and not self.leader_elect:
            raise OptionsError("--shards above 1 needs --leader-elect: each shard is a Lease")
