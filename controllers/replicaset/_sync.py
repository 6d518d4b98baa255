"""The ReplicaSet sync: read the cache, claim the pods, manage replicas, write the status.

A port of ``syncReplicaSet`` (and ``claimPods``). It is level-based: it trusts nothing but
the caches and the expectations, and reads as a sequence of steps::

    stale cache?           -> requeue through the rate limiter (not an error)
    ReplicaSet gone?       -> forget its expectations, done
    claim its pods         (adopt matching orphans, release pods that stopped matching)
    expectations satisfied and not being deleted?
                           -> create or delete pods (see _manage)
    pods created and not yet seen?
                           -> done: the sync their events trigger writes the status
    queued again meanwhile (and the last status was written)?
                           -> done: the sync that follows at once writes a newer one
    write the status       (only if it changed)
    a manage failure?      -> fail (retried with backoff)
    pods about to become available?
                           -> sync again when the first one does
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from kcontrol.client import PODS, Client, Object
from kcontrol.clock import Clock
from kcontrol.controller import (
    ClaimError,
    ConsistencyStore,
    ControllerRefManager,
    Result,
    SupersededWrites,
    UIDTrackingControllerExpectations,
    recheck_owner,
)
from kcontrol.errors import NotFound, SelectorError, StaleCache
from kcontrol.informers import Indexer, Lister, split_meta_namespace_key
from kcontrol.labels import Selector
from kcontrol.logging import get_logger

from ..podutil import (
    filter_active_pods,
    filter_claimed_pods,
    filter_pods_by_owner,
    filter_terminating_pods,
    find_min_next_pod_availability_check,
)
from ._kind import REPLICA_SET, ReplicaKind
from ._manage import ReplicaManager
from ._metrics import ReplicaSetMetrics
from ._status import calculate_status, status_in_sync, update_replicaset_status

__all__ = ["ReplicaSetSyncer"]

_log = get_logger(__name__)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


class ReplicaSetSyncer:
    """Syncs one ReplicaSet key at a time; see the module docstring.

    ``client`` reads live ReplicaSets (the pre-adoption check, the status retry) and writes
    pods and statuses; ``rs_lister`` and ``pod_indexer`` (carrying
    :data:`~kcontrol_controllers.podutil.POD_CONTROLLER_INDEX`) are the caches; ``enqueue`` puts a
    key back in the queue at once; ``terminating_replicas`` turns on
    ``status.terminatingReplicas``; ``kind`` is what the keys name (ReplicaSets unless
    given).
    """

    def __init__(
        self,
        *,
        client: Client,
        rs_lister: Lister,
        pod_indexer: Indexer,
        expectations: UIDTrackingControllerExpectations,
        manager: ReplicaManager,
        consistency: ConsistencyStore,
        metrics: ReplicaSetMetrics,
        clock: Clock,
        enqueue: Callable[[str], None],
        terminating_replicas: bool = True,
        kind: ReplicaKind = REPLICA_SET,
    ) -> None:
        self._kind = kind
        self._client = client
        self._rs_lister = rs_lister
        self._pod_indexer = pod_indexer
        self._expectations = expectations
        self._manager = manager
        self._consistency = consistency
        self._metrics = metrics
        self._clock = clock
        self._enqueue = enqueue
        self._terminating_replicas = terminating_replicas
        self._status_writes = SupersededWrites()

    async def sync(self, key: str) -> Result | None:
        """Converge the ReplicaSet ``key`` (``namespace/name``).

        Raises to have the key retried with backoff: a claim or status write failure, or the
        failure to create or delete pods (after the status recorded it). Raises
        :class:`~kcontrol.errors.StaleCache` while the informers have not seen this
        controller's own writes yet (retried rate-limited, like upstream's error return, but
        not an error: it is expected right after every write; see the runner). Returns
        ``Result(requeue_after=s)`` when pods will become available in ``s`` seconds.
        """
        namespace, name = split_meta_namespace_key(key)
        try:
            self._consistency.ensure_ready(key)
        except StaleCache as stale:
            self._metrics.stale_sync_skipped(stale.resource.group, stale.resource.plural)
            raise  # the runner retries it (see Controller)
        try:
            rs = self._rs_lister.get(namespace, name)
        except NotFound:
            _log.debug(f"{self._kind.kind} has been deleted", key=key)
            self._consistency.clear(key)
            self._expectations.delete_expectations(key)
            self._status_writes.forget(key)
            return None

        # Read before listing pods: a pod observed after this check is then listed too.
        needs_sync = self._expectations.satisfied_expectations(key)
        try:
            selector = self._kind.selector(rs)
        except SelectorError as error:
            _log.error("error converting pod selector to selector", key=key, error=str(error))
            return None  # retrying will not fix the spec; an update will enqueue it again

        owned_and_orphans = filter_pods_by_owner(
            self._pod_indexer, rs, self._kind.kind, include_orphans=True
        )
        active_pods = await self._claim_pods(
            key, rs, selector, filter_active_pods(owned_and_orphans)
        )
        terminating_pods = (
            filter_claimed_pods(rs, selector, filter_terminating_pods(owned_and_orphans))
            if self._terminating_replicas
            else None
        )

        failure = None
        if needs_sync and _meta(rs).get("deletionTimestamp") is None:
            failure = await self._manager.manage(rs, active_pods, self._clock.wall())
            if failure is None and self._creations_unseen(key):
                _log.debug("status write left to the sync the new pods trigger", key=key)
                return None

        now = self._clock.wall()  # availability of the status and of the requeue alike
        new_status = calculate_status(
            rs, active_pods, terminating_pods, failure.message if failure else None, now
        )
        if (
            failure is None
            and not status_in_sync(rs, new_status)
            and self._status_writes.leave_out(key)
        ):
            _log.debug("status write left to the sync queued meanwhile", key=key)
            return None
        updated = await update_replicaset_status(
            self._client, rs, new_status, resource=self._kind.resource
        )
        written = str(_meta(updated).get("resourceVersion") or "")
        self._consistency.wrote_at(key, str(_meta(rs).get("uid")), self._kind.resource, written)
        if failure is not None:
            raise failure.error
        return self._availability_check(key, updated, active_pods, now)

    def _creations_unseen(self, key: str) -> bool:
        """Whether this sync's pod creations all succeeded and some are not in the cache
        yet. Each of them enqueues the ReplicaSet when it arrives, and that sync writes a
        status counting it; the status this sync would write, from the pods as they were
        before, would be superseded at once, so it is not written. (Upstream writes it.)

        Deletions keep upstream's write: without it the sync their events trigger runs
        sooner, sees more of the deleted pods still terminating (a state the status
        reports) and writes more than was saved (docs/controllers/replicaset.md)."""
        expectations = self._expectations.get_expectations(key)
        return (
            expectations is not None
            and expectations.add > 0
            and not self._expectations.satisfied_expectations(key)
        )

    async def _claim_pods(
        self, key: str, rs: Mapping[str, Any], selector: Selector, pods: Sequence[Object]
    ) -> list[Object]:
        """The pods ``rs`` owns after adopting and releasing; raises :class:`ClaimError`.

        Adoption is preceded (once) by a live GET proving ``rs`` is neither gone nor being
        deleted. Adopted pods are recorded as writes for the consistency check.
        """
        manager = ControllerRefManager(
            self._client,
            rs,
            selector,
            (self._kind.api_version, self._kind.kind),
            PODS,
            can_adopt=recheck_owner(self._client, self._kind.resource, rs),
        )
        given = {id(pod) for pod in pods}
        try:
            claimed = await manager.claim(pods)
        except ClaimError as error:
            self._record_adoptions(key, rs, error.claimed, given)
            raise
        self._record_adoptions(key, rs, claimed, given)
        return claimed

    def _record_adoptions(
        self, key: str, rs: Mapping[str, Any], claimed: Sequence[Object], given: set[int]
    ) -> None:
        # The ref manager returns kept pods as given and adopted ones as the patch returned.
        uid = str(_meta(rs).get("uid"))
        for pod in claimed:
            if id(pod) not in given:
                version = str(_meta(pod).get("resourceVersion") or "")
                self._consistency.wrote_at(key, uid, PODS, version)

    def _availability_check(
        self, key: str, rs: Mapping[str, Any], active_pods: Sequence[Object], now: datetime
    ) -> Result | None:
        """Sync again when the next ready pod becomes available (at the latest after
        ``minReadySeconds``), while some ready pods are not available yet."""
        min_ready_seconds = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
        status = rs.get("status") or {}
        if min_ready_seconds <= 0 or (status.get("readyReplicas") or 0) == (
            status.get("availableReplicas") or 0
        ):
            return None
        delay = find_min_next_pod_availability_check(
            active_pods, min_ready_seconds, now, self._clock.wall()
        )
        if delay is None:
            delay = float(min_ready_seconds)
        if delay > 0:
            return Result(requeue_after=delay)
        self._enqueue(key)  # due now: a key added while it is being synced is synced again
        return None
