"""Prometheus metrics of leader election, named as ``k8s.io/component-base`` names them.

================================  =======  ===================================================
``leader_election_master_status``  gauge    1 while this process leads the lease, else 0
``leader_election_slowpath_total`` counter  renewals that had to re-read the lease first
================================  =======  ===================================================

Both carry the single label ``name`` (the elector's configured name). The families are created
once per :class:`~prometheus_client.CollectorRegistry` and shared by every elector on it.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from kcontrol._registry import PerRegistry

__all__ = ["LeaderMetrics"]

_LABELS = ("name",)


class _Families:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.master_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease. "
            "Please make sure to group by name.",
            _LABELS,
            registry=registry,
        )
        self.slowpath = Counter(
            "leader_election_slowpath_total",
            "Total number of slow path exercised in renewing leader leases. 'name' is the "
            "string used to identify the lease. Please make sure to group by name.",
            _LABELS,
            registry=registry,
        )


_families = PerRegistry(_Families).get


class LeaderMetrics:
    """The series of one elector; starts at "not leading", as client-go's elector does."""

    __slots__ = ("_slowpath", "_status")

    def __init__(self, name: str, registry: CollectorRegistry | None) -> None:
        families = _families(registry)
        self._status = families.master_status.labels(name)
        self._slowpath = families.slowpath.labels(name)
        self._status.set(0)

    def leader_on(self) -> None:
        self._status.set(1)

    def leader_off(self) -> None:
        self._status.set(0)

    def slowpath_exercised(self) -> None:
        self._slowpath.inc()
