"""The StatefulSet sync's core: a port of ``stateful_set_control.go``'s ``UpdateStatefulSet``.

One pass, given the set and the pods it owns, reads as upstream's::

    revisions        list (oldest first); current and update revision (may create one)
    split            replicas by ordinal (empty slots get new pods), condemned beyond the range
    being deleted?   -> status only
    each replica     (OrderedReady: in order, stop at the first that blocks;
                      Parallel: in slow-start batches, nothing blocks)
        failed or succeeded      -> delete it (made again once it is gone); stop
        not created              -> wait if a claim is stale; create claims, then the pod;
                                    OrderedReady stops
        pending                  -> create its missing claims
        terminating, not running and ready, not available
                                 -> OrderedReady stops
        identity, storage or claim owners wrong
                                 -> update the pod
    each condemned   claims' owners set for the retention policy
    each condemned   (highest ordinal first) terminating -> OrderedReady waits;
                     OrderedReady and an unhealthy pod not the first unavailable -> wait;
                     else delete it (OrderedReady: one per pass)
    OnDelete?        -> done
    RollingUpdate    delete, from the highest ordinal down to the partition, a pod not at the
                     update revision: one, waiting for the unavailable ones (default), or up
                     to maxUnavailable at once (MaxUnavailableStatefulSet, off by default)
    status           written when it changed (a finished rolling update completed first),
                     also after a failure above - unless the set was queued again during
                     the pass and nothing the next pass decides from changed (it writes a
                     newer one; never left out twice in a row, see
                     kcontrol.controller.SupersededWrites; upstream writes each)
    history          revisions beyond revisionHistoryLimit deleted, also after a failure

Errors raise (the key is retried with backoff); the status is written first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from kcontrol.client import Object, deep_copy
from kcontrol.controller import SupersededWrites
from kcontrol.errors import NotFound
from kcontrol.logging import get_logger

from ._fields import (
    meta,
    name,
    namespace,
    pod_management_policy,
    update_strategy,
    update_strategy_type,
)
from ._history import SetRevisions, StatefulSetHistory
from ._identity import identity_matches
from ._metrics import StatefulSetMetrics
from ._names import MAX_BATCH_SIZE, ON_DELETE
from ._podcontrol import AggregateError, StatefulPodControl, aggregate
from ._pods import get_pod_revision
from ._podstate import (
    get_min_ready_seconds,
    is_created,
    is_failed,
    is_pending,
    is_running_and_available,
    is_running_and_ready,
    is_succeeded,
    is_terminating,
    is_unavailable,
)
from ._replicas import (
    CondemnedStep,
    allows_burst,
    condemned_step,
    first_unavailable,
    get_stateful_set_max_unavailable,
    rolling_update_deletions,
    split_by_ordinal,
)
from ._revisions import apply_revision
from ._status import (
    complete_rolling_update,
    decides_next_pass,
    inconsistent_status,
    new_status,
    update_replica_counts,
)
from ._status_updater import StatusUpdater
from ._storage import storage_matches

__all__ = ["StatefulSetControl", "run_for_all", "slow_start_batch"]

_log = get_logger(__name__)

Step = Callable[[int], Awaitable[bool]]
"""One step on the pod at an index; returns whether an ``OrderedReady`` pass must stop."""


async def slow_start_batch(count: int, step: Step) -> tuple[int, Exception | None]:
    """Run ``step(0)`` ... ``step(count - 1)`` in concurrent batches of 1, 2, 4, ... (at most
    :data:`MAX_BATCH_SIZE`), stopping after the first batch with a failure; returns how many
    succeeded and the batch's failures (one error, or an :class:`AggregateError`). What the
    steps return is ignored."""
    successes, index, remaining = 0, 0, count
    batch = min(remaining, 1)
    while batch > 0:
        errors: list[Exception] = []
        async with asyncio.TaskGroup() as group:
            for i in range(index, index + batch):
                group.create_task(_collect_error(step, i, errors))
        index += batch
        successes += batch - len(errors)
        failure = aggregate(errors)
        if failure is not None:
            return successes, failure
        remaining -= batch
        batch = min(2 * batch, remaining, MAX_BATCH_SIZE)
    return successes, None


async def _collect_error(step: Step, index: int, errors: list[Exception]) -> None:
    try:
        await step(index)
    except Exception as error:
        errors.append(error)


async def run_for_all(count: int, step: Step, monotonic: bool) -> tuple[bool, Exception | None]:
    """Apply ``step`` to indices ``0..count-1``: in order, stopping at the first step that
    says so or fails (``monotonic``), or in slow-start batches. Returns (stop the pass,
    the failure)."""
    if monotonic:
        for i in range(count):
            try:
                if await step(i):
                    return True, None
            except Exception as error:
                return True, error
        return False, None
    _, failure = await slow_start_batch(count, step)
    return failure is not None, failure


class StatefulSetControl:
    """Converges one set's pods towards its spec (module docstring).

    ``pod_control`` writes pods and claims; ``history`` reads and writes revisions;
    ``status_updater`` writes the status; ``max_unavailable`` turns on the
    MaxUnavailableStatefulSet rolling update (beta, off by default in Kubernetes 1.36).
    """

    __slots__ = ("_history", "_left_out", "_max_unavailable", "_metrics", "_pods", "_status")

    def __init__(
        self,
        *,
        pod_control: StatefulPodControl,
        history: StatefulSetHistory,
        status_updater: StatusUpdater,
        metrics: StatefulSetMetrics,
        max_unavailable: bool = False,
    ) -> None:
        self._pods = pod_control
        self._history = history
        self._status = status_updater
        self._metrics = metrics
        self._max_unavailable = max_unavailable
        self._left_out = SupersededWrites()

    def forget(self, key: str) -> None:
        """Drop what is remembered of the set ``key`` (``namespace/name``): it is gone."""
        self._left_out.forget(key)
        self._history.forget(key)

    async def update_stateful_set(
        self, set_: Mapping[str, Any], pods: Sequence[Object], now: datetime
    ) -> Object | None:
        """One pass over ``set_`` (from the cache; not modified) and the ``pods`` it owns at
        ``now``; returns the status computed (``None`` when the revisions could not be
        worked out). Raises the first failure, after writing the status and truncating the
        history."""
        set_ = deep_copy(dict(set_))
        revisions = await self._history.list_revisions(set_)
        revs: SetRevisions | None = None
        status: Object | None = None
        failure: Exception | None = None
        try:
            revs = await self._history.get_revisions(set_, revisions)
            status, failure = await self._update_pods(set_, revs, pods, now)
            try:
                await self._write_status(set_, status)
            except Exception as status_error:
                if failure is not None:
                    _log.error("could not update status", set=_key(set_), error=str(status_error))
                else:
                    failure = status_error
        except Exception as error:
            failure = error
        try:
            await self._truncate(set_, pods, revisions, revs)
        except Exception as truncate_error:
            if failure is None:
                raise
            raise AggregateError([failure, truncate_error]) from failure
        if failure is not None:
            raise failure
        return status

    async def _truncate(
        self,
        set_: Mapping[str, Any],
        pods: Sequence[Object],
        revisions: Sequence[Object],
        revs: SetRevisions | None,
    ) -> None:
        current = revs.current if revs is not None else None
        update = revs.update if revs is not None else None
        await self._history.truncate_history(set_, pods, revisions, current, update)

    async def _write_status(self, set_: Mapping[str, Any], status: Object) -> None:
        complete_rolling_update(set_, status)
        if not inconsistent_status(set_, status):
            return
        if not decides_next_pass(set_, status) and self._left_out.leave_out(_key(set_)):
            return  # a report the pass queued meanwhile writes anew
        await self._status.update_status(set_, status)
        _log.debug(
            "updated status",
            set=_key(set_),
            replicas=status.get("replicas"),
            ready=status.get("readyReplicas"),
            current=status.get("currentReplicas"),
            updated=status.get("updatedReplicas"),
        )

    # -- updateStatefulSet -------------------------------------------------------------------

    async def _update_pods(
        self,
        set_: Mapping[str, Any],
        revs: SetRevisions,
        pods: Sequence[Object],
        now: datetime,
    ) -> tuple[Object, Exception | None]:
        """Create, update and delete pods; returns the status and the failure, if any."""
        current_set = apply_revision(set_, revs.current)
        update_set = apply_revision(set_, revs.update)
        current_name, update_name = name(revs.current), name(revs.update)
        status = new_status(set_, current_name, update_name, revs.collision_count)
        min_ready = get_min_ready_seconds(set_)
        update_replica_counts(status, min_ready, now, pods)

        split = split_by_ordinal(
            set_,
            pods,
            current_set=current_set,
            update_set=update_set,
            current_revision=current_name,
            update_revision=update_name,
        )
        replicas, condemned = split.replicas, split.condemned
        unavailable, first_unavailable_pod = first_unavailable(split, min_ready, now)
        if unavailable:
            _log.debug(
                "StatefulSet has unavailable pods",
                set=_key(set_),
                unavailable=unavailable,
                pod=name(first_unavailable_pod or {}),
            )
        if meta(set_).get("deletionTimestamp") is not None:
            return status, None

        monotonic = not allows_burst(set_)

        def recount() -> None:
            update_replica_counts(status, min_ready, now, replicas, condemned)

        async def process_replica(i: int) -> bool:
            return await self._process_replica(set_, update_set, monotonic, replicas[i], now)

        stop, error = await run_for_all(len(replicas), process_replica, monotonic)
        if stop or error is not None:
            recount()
            return status, error

        async def fix_claims(i: int) -> bool:
            pod = condemned[i]
            if not await self._pods.claims_match_retention_policy(update_set, pod):
                await self._pods.update_pod_claim_for_retention_policy(update_set, pod)
            return False

        stop, error = await run_for_all(len(condemned), fix_claims, monotonic)
        if stop or error is not None:
            recount()
            return status, error

        async def process_condemned(i: int) -> bool:
            pod = condemned[i]
            step = condemned_step(
                pod,
                first_unavailable_pod,
                monotonic=monotonic,
                min_ready_seconds=min_ready,
                now=now,
            )
            if step is CondemnedStep.WAIT:
                _log.debug("waiting before scaling down", set=_key(set_), pod=name(pod))
                return True
            if step is CondemnedStep.SKIP:
                return False
            _log.info(
                "pod of StatefulSet is terminating for scale down", set=_key(set_), pod=name(pod)
            )
            await self._pods.delete_stateful_pod(set_, pod)
            return True

        stop, error = await run_for_all(len(condemned), process_condemned, monotonic)
        recount()
        if stop or error is not None:
            return status, error

        if update_strategy_type(set_) == ON_DELETE:
            return status, None
        if self._max_unavailable:
            error = await self._roll_within_max_unavailable(
                set_, replicas, update_name, status, now
            )
            return status, error
        return status, await self._roll_one(set_, replicas, update_name, status, now)

    async def _process_replica(
        self,
        set_: Mapping[str, Any],
        update_set: Mapping[str, Any],
        monotonic: bool,
        pod: Object,
        now: datetime,
    ) -> bool:
        """The replica step (module docstring); returns whether an ``OrderedReady`` pass
        stops here."""
        if is_failed(pod) or is_succeeded(pod):
            # A succeeded pod is made again too: a pod stopped by its node can end either way.
            if not is_terminating(pod):
                await self._pods.delete_stateful_pod(set_, pod)
            return True  # the new pod is made once this one is gone
        if not is_created(pod):
            if await self._pods.pod_claim_is_stale(set_, pod):
                return True  # its claim goes with an earlier pod of its name: wait
            await self._pods.create_stateful_pod(set_, pod)
            if monotonic:
                return True
        if is_pending(pod):
            await self._pods.create_missing_persistent_volume_claims(set_, pod)
        if monotonic:
            if is_terminating(pod):
                _log.debug("waiting for pod to terminate", set=_key(set_), pod=name(pod))
                return True
            if not is_running_and_ready(pod):
                _log.debug("waiting for pod to be running and ready", set=_key(set_), pod=name(pod))
                return True
            if not is_running_and_available(pod, get_min_ready_seconds(set_), now):
                _log.debug("waiting for pod to be available", set=_key(set_), pod=name(pod))
                return True
        try:
            retention_match = await self._pods.claims_match_retention_policy(update_set, pod)
        except Exception:
            retention_match = True  # expected while the pod is being changed otherwise
        if identity_matches(set_, pod) and storage_matches(set_, pod) and retention_match:
            return False
        await self._pods.update_stateful_pod(update_set, pod)
        return False

    async def _roll_one(
        self,
        set_: Mapping[str, Any],
        replicas: Sequence[Object],
        update_revision: str,
        status: Object,
        now: datetime,
    ) -> Exception | None:
        """The rolling update without MaxUnavailableStatefulSet: from the top ordinal down to
        the partition, delete the first pod not at the update revision (then stop), but stop
        first at a pod that is unavailable."""
        rolling = update_strategy(set_).get("rollingUpdate")
        update_min = int((rolling or {}).get("partition") or 0)
        min_ready = get_min_ready_seconds(set_)
        for target in range(len(replicas) - 1, update_min - 1, -1):
            pod = replicas[target]
            if get_pod_revision(pod) != update_revision and not is_terminating(pod):
                _log.info(
                    "pod of StatefulSet is terminating for update", set=_key(set_), pod=name(pod)
                )
                try:
                    await self._pods.delete_stateful_pod(set_, pod)
                except NotFound:
                    pass
                except Exception as error:
                    return error
                status["currentReplicas"] = int(status.get("currentReplicas") or 0) - 1
                return None
            if is_unavailable(pod, min_ready, now):
                _log.debug("waiting for pod to update", set=_key(set_), pod=name(pod))
                return None
        return None

    async def _roll_within_max_unavailable(
        self,
        set_: Mapping[str, Any],
        replicas: Sequence[Object],
        update_revision: str,
        status: Object,
        now: datetime,
    ) -> Exception | None:
        """The rolling update with MaxUnavailableStatefulSet: delete, from the top ordinal
        down to the partition, up to ``maxUnavailable`` minus the unavailable replicas pods
        not at the update revision."""
        ns, set_name, policy = namespace(set_), name(set_), pod_management_policy(set_)
        rolling = update_strategy(set_).get("rollingUpdate")
        if rolling is not None:
            try:
                limit = get_stateful_set_max_unavailable(
                    rolling.get("maxUnavailable"), len(replicas)
                )
            except ValueError as error:
                return error
            self._metrics.set_max_unavailable(ns, set_name, policy, limit)
        min_ready = get_min_ready_seconds(set_)
        unavailable = sum(1 for pod in replicas if is_unavailable(pod, min_ready, now))
        self._metrics.set_unavailable_replicas(ns, set_name, policy, unavailable)
        for index in rolling_update_deletions(set_, replicas, update_revision, now):
            pod = replicas[index]
            _log.info("pod of StatefulSet is terminating for update", set=_key(set_), pod=name(pod))
            try:
                await self._pods.delete_stateful_pod(set_, pod)
            except NotFound:
                pass
            except Exception as error:
                return error
            status["currentReplicas"] = int(status.get("currentReplicas") or 0) - 1
        return None


def _key(set_: Mapping[str, Any]) -> str:
    return f"{namespace(set_)}/{name(set_)}"
