"""Managing replicas: create the missing pods in slow-start batches, delete the extra ones.

A port of the ReplicaSet controller's ``manageReplicas`` and ``slowStartBatch``. Both
directions act on at most ``burst_replicas`` pods per sync and record expectations *before*
sending anything, so the next sync waits until the informer has seen the results.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kcontrol.client import Object
from kcontrol.controller import UIDTrackingControllerExpectations, key_func
from kcontrol.errors import NotFound, error_message, is_namespace_terminating
from kcontrol.logging import get_logger

from ..podcontrol import PodControl
from ..podutil import new_controller_ref, pod_key
from ._kind import REPLICA_SET, ReplicaKind
from ._names import BURST_REPLICAS
from ._ranking import pods_to_delete

__all__ = [
    "BURST_REPLICAS",
    "REPLICA_SET_API_VERSION",
    "REPLICA_SET_KIND",
    "SLOW_START_INITIAL_BATCH_SIZE",
    "ManageFailure",
    "ReplicaManager",
    "slow_start_batch",
]

_log = get_logger(__name__)

SLOW_START_INITIAL_BATCH_SIZE = 1
"""The first creation batch; each batch that fully succeeds doubles the next."""

REPLICA_SET_API_VERSION = "apps/v1"
REPLICA_SET_KIND = "ReplicaSet"
"""What the controller references of the pods name (``metav1.NewControllerRef``)."""


@dataclass(frozen=True, slots=True)
class ManageFailure:
    """Why managing replicas failed: ``error`` is what the sync raises (so the key is retried
    with backoff), ``message`` what the ``ReplicaFailure`` condition says (the text upstream's
    error carries)."""

    error: Exception
    message: str


async def slow_start_batch(
    count: int, initial_batch_size: int, call: Callable[[], Awaitable[None]]
) -> tuple[int, Exception | None]:
    """Run ``call`` ``count`` times in concurrent batches of ``initial_batch_size``, then
    double that after each batch in which every call succeeded; stop after the first batch
    with a failure (once all of its calls are done).

    Returns how many calls succeeded and the first failure in completion order (``None`` if
    none failed). ``CancelledError`` is never swallowed: cancelling cancels the batch.
    """
    remaining = count
    successes = 0
    batch_size = min(remaining, initial_batch_size)
    while batch_size > 0:
        errors: list[Exception] = []
        async with asyncio.TaskGroup() as batch:
            for _ in range(batch_size):
                batch.create_task(_collect_error(call, errors))
        successes += batch_size - len(errors)
        if errors:
            return successes, errors[0]
        remaining -= batch_size
        batch_size = min(2 * batch_size, remaining)
    return successes, None


async def _collect_error(call: Callable[[], Awaitable[None]], errors: list[Exception]) -> None:
    try:
        await call()
    except Exception as error:
        errors.append(error)


RelatedPods = Callable[[Mapping[str, Any]], list[Object]]
"""The pods of a ReplicaSet and of its siblings (the ReplicaSets with the same controller)."""


class ReplicaManager:
    """Brings the number of a ReplicaSet's active pods towards ``spec.replicas``.

    ``expectations`` are raised before acting and lowered for every request that failed or
    was skipped; ``pod_control`` sends the requests and records the events; ``related_pods``
    feeds the co-location rule of the deletion ranking; ``observe_age_ratio`` receives the
    age ratios of the pods chosen for deletion (a metric); ``kind`` names the controller
    references of the pods created.
    """

    def __init__(
        self,
        *,
        expectations: UIDTrackingControllerExpectations,
        pod_control: PodControl,
        related_pods: RelatedPods,
        burst_replicas: int = BURST_REPLICAS,
        observe_age_ratio: Callable[[float], object] | None = None,
        kind: ReplicaKind = REPLICA_SET,
    ) -> None:
        if burst_replicas < 1:
            raise ValueError(f"burst_replicas must be >= 1, got {burst_replicas}")
        self._kind = kind
        self._expectations = expectations
        self._pod_control = pod_control
        self._related_pods = related_pods
        self._burst = burst_replicas
        self._observe_age_ratio = observe_age_ratio

    async def manage(
        self, rs: Mapping[str, Any], active_pods: Sequence[Object], now: datetime
    ) -> ManageFailure | None:
        """Create or delete pods so that ``active_pods`` (the pods ``rs`` owns, as claimed)
        move towards ``spec.replicas``; ``now`` is the reference time of the deletion
        ranking. Returns the failure, if any; never raises one (``CancelledError`` aside).

        Does not modify ``rs`` or ``active_pods``.
        """
        diff = len(active_pods) - int((rs.get("spec") or {}).get("replicas", 1))
        if diff < 0:
            return await self._scale_up(rs, min(-diff, self._burst))
        if diff > 0:
            return await self._scale_down(rs, active_pods, min(diff, self._burst), now)
        return None

    async def _scale_up(self, rs: Mapping[str, Any], count: int) -> ManageFailure | None:
        key = key_func(rs)
        meta = rs["metadata"]
        namespace = meta["namespace"]
        template = (rs.get("spec") or {}).get("template") or {}
        controller_ref = new_controller_ref(rs, self._kind.api_version, self._kind.kind)
        # Raised before any request: the informer may see a pod before create() returns.
        self._expectations.expect_creations(key, count)
        _log.info("too few replicas, creating pods", key=key, count=count)

        async def create() -> None:
            try:
                await self._pod_control.create_pod(namespace, template, rs, controller_ref)
            except Exception as error:
                if is_namespace_terminating(error):
                    return  # every creation will fail: nothing to do or report
                raise

        successes, error = await slow_start_batch(count, SLOW_START_INITIAL_BATCH_SIZE, create)
        skipped = count - successes
        if skipped > 0:
            # Neither the failed nor the never-attempted pods will be observed.
            _log.info(
                "slow-start failure: skipping pods, lowering expectations",
                key=key,
                skipped=skipped,
            )
            self._expectations.lower_expectations(key, skipped, 0)
        if error is None:
            return None
        return ManageFailure(error, error_message(error))

    async def _scale_down(
        self, rs: Mapping[str, Any], active_pods: Sequence[Object], count: int, now: datetime
    ) -> ManageFailure | None:
        key = key_func(rs)
        namespace = rs["metadata"]["namespace"]
        _log.info("too many replicas, deleting pods", key=key, count=count)
        victims = pods_to_delete(
            active_pods, self._related_pods(rs), count, now, self._observe_age_ratio
        )
        # Snapshot the keys of the pods to be deleted, so that each deletion is counted once,
        # whether it is seen as a deletionTimestamp update or as the final delete.
        self._expectations.expect_deletions(key, [pod_key(pod) for pod in victims])
        errors: list[Exception] = []

        async def delete(pod: Mapping[str, Any]) -> None:
            try:
                await self._pod_control.delete_pod(namespace, pod["metadata"]["name"], rs)
            except Exception as error:
                # The informer will not see this deletion.
                self._expectations.deletion_observed(key, pod_key(pod))
                if not isinstance(error, NotFound):
                    _log.info("failed to delete pod", key=key, pod=pod_key(pod))
                    errors.append(error)

        async with asyncio.TaskGroup() as deletions:
            for pod in victims:
                deletions.create_task(delete(pod))
        if not errors:
            return None
        # Upstream reports the first failure; they are likely all alike.
        return ManageFailure(errors[0], f"unable to delete pods: {error_message(errors[0])}")
