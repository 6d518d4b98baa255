"""Resource locks: where the election record lives. :class:`LeaseLock` keeps it in a Lease.

Every write is a PUT of the object last read (or returned by the previous write) carrying its
``metadata.resourceVersion``, so the API server rejects it with 409 Conflict if anybody changed
the Lease in between: a stale leader cannot overwrite its successor, and no field another writer
set is lost. client-go's LeaseLock behaves the same; this is the only fencing leader election has.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kcontrol.client import LEASES, Client, Object, deep_copy
from kcontrol.errors import LockNotInitialized
from kcontrol.events import EventRecorder
from kcontrol.leaderelection._record import (
    LeaderElectionRecord,
    record_from_lease_spec,
    record_to_lease_spec,
)

__all__ = ["LeaseLock", "LockNotInitialized", "ResourceLock"]

EVENT_REASON = "LeaderElection"


class ResourceLock(Protocol):
    """The lock an elector contends for (client-go's ``resourcelock.Interface``).

    ``get`` raises :class:`~kcontrol.errors.NotFound` when the lock object does not exist;
    ``update`` must be preceded by a successful ``get`` or ``create`` and raises
    :class:`~kcontrol.errors.Conflict` when the object changed since. API failures surface as
    :class:`~kcontrol.errors.KcontrolError` subclasses.
    """

    @property
    def identity(self) -> str:
        """This candidate's identity, unique among all candidates."""
        ...

    def describe(self) -> str:
        """``namespace/name`` of the lock, for logs."""
        ...

    async def get(self) -> LeaderElectionRecord: ...

    async def create(self, record: LeaderElectionRecord) -> None: ...

    async def update(self, record: LeaderElectionRecord) -> None: ...

    def record_event(self, message: str) -> None:
        """Record ``"<identity> <message>"`` as an Event on the lock object, if configured."""
        ...


class LeaseLock:
    """A :class:`ResourceLock` backed by the ``coordination.k8s.io/v1`` Lease ``namespace/name``.

    The record maps to ``spec.holderIdentity``, ``leaseDurationSeconds``, ``acquireTime``,
    ``renewTime`` (MicroTime) and ``leaseTransitions``. ``labels`` are merged into the Lease's
    labels on create and on every update (other labels are kept). ``recorder`` (any
    :class:`~kcontrol.events.EventRecorder`) receives the "became leader" / "stopped leading"
    Events, with reason ``LeaderElection``.

    Not safe for concurrent use: one elector drives one lock.
    """

    def __init__(
        self,
        client: Client,
        namespace: str,
        name: str,
        identity: str,
        *,
        labels: Mapping[str, str] | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self._identity = identity
        self._labels = dict(labels or {})
        self._recorder = recorder
        # The Lease as the server last returned it; every update starts from (a copy of) it,
        # so its resourceVersion is the write precondition.
        self._lease: Object | None = None

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def lease(self) -> Object | None:
        """A copy of the Lease as last read or written, or ``None`` before the first."""
        return deep_copy(self._lease)

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def get(self) -> LeaderElectionRecord:
        lease = await self._client.get(LEASES, self.name, namespace=self.namespace)
        self._lease = lease
        return record_from_lease_spec(lease.get("spec"))

    async def create(self, record: LeaderElectionRecord) -> None:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if self._labels:
            metadata["labels"] = dict(self._labels)
        lease = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": metadata,
            "spec": record_to_lease_spec(record),
        }
        self._lease = await self._client.create(LEASES, lease, namespace=self.namespace)

    async def update(self, record: LeaderElectionRecord) -> None:
        if self._lease is None:
            raise LockNotInitialized(
                f"lease {self.describe()} not initialized, call get or create first"
            )
        lease = deep_copy(self._lease)
        lease["spec"] = record_to_lease_spec(record, lease.get("spec"))
        if self._labels:
            metadata = lease.setdefault("metadata", {})
            metadata["labels"] = {**(metadata.get("labels") or {}), **self._labels}
        self._lease = await self._client.update(LEASES, lease, namespace=self.namespace)

    def record_event(self, message: str) -> None:
        if self._recorder is None:
            return
        metadata = (self._lease or {}).get("metadata") or {}
        ref: dict[str, Any] = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "namespace": self.namespace,
            "name": self.name,
        }
        for key in ("uid", "resourceVersion"):
            if metadata.get(key):
                ref[key] = metadata[key]
        self._recorder.event(ref, "Normal", EVENT_REASON, f"{self._identity} {message}")
