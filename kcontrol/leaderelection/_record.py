"""The leader election record and its mapping onto a ``coordination.k8s.io/v1`` Lease spec.

A :class:`LeaderElectionRecord` is what client-go's ``resourcelock.LeaderElectionRecord`` is:
the part of the lock object that candidates read and write. Timestamps in it are informational:
electors never compare them with their own clock, they only notice that the record *changed*
(see :mod:`kcontrol.leaderelection._elector`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kcontrol.metatime import format_micro_time, parse_time

__all__ = [
    "LeaderElectionRecord",
    "record_from_lease_spec",
    "record_to_lease_spec",
]


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    """The election state stored in the lock object.

    ``holder_identity`` empty means nobody holds the lease (a leader stepped down) and any
    candidate may take it at once. Two records compare equal exactly when every field does;
    electors use that to detect that another candidate renewed.
    """

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    leader_transitions: int = 0
    strategy: str = ""
    preferred_holder: str = ""


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def record_from_lease_spec(spec: Mapping[str, Any] | None) -> LeaderElectionRecord:
    """Read the record out of a Lease's ``spec``; missing fields read as zero values."""
    spec = spec if isinstance(spec, Mapping) else {}
    return LeaderElectionRecord(
        holder_identity=_str(spec.get("holderIdentity")),
        lease_duration_seconds=_int(spec.get("leaseDurationSeconds")),
        acquire_time=parse_time(spec.get("acquireTime")),
        renew_time=parse_time(spec.get("renewTime")),
        leader_transitions=_int(spec.get("leaseTransitions")),
        strategy=_str(spec.get("strategy")),
        preferred_holder=_str(spec.get("preferredHolder")),
    )


def record_to_lease_spec(
    record: LeaderElectionRecord, base: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The Lease ``spec`` holding ``record``, on top of ``base`` (the spec read from the server).

    The election fields (holder, duration, acquire/renew time, transitions) are always written;
    ``strategy`` and ``preferredHolder`` are written when the record sets them and otherwise kept
    as they are in ``base``, so fields that coordinated leader election (or any other writer)
    put there survive.
    """
    spec: dict[str, Any] = dict(base) if isinstance(base, Mapping) else {}
    spec["holderIdentity"] = record.holder_identity
    spec["leaseDurationSeconds"] = record.lease_duration_seconds
    spec["leaseTransitions"] = record.leader_transitions
    for key, moment in (("acquireTime", record.acquire_time), ("renewTime", record.renew_time)):
        if moment is None:
            spec.pop(key, None)
        else:
            spec[key] = format_micro_time(moment)
    if record.strategy:
        spec["strategy"] = record.strategy
    if record.preferred_holder:
        spec["preferredHolder"] = record.preferred_holder
    return spec
