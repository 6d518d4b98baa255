"""The StatefulSet sync of one key: a port of ``StatefulSetController.sync`` and
``syncStatefulSet``. Level-based, first match wins::

    cache behind the controller's own writes?
                           -> requeue through the rate limiter (not an error)
    StatefulSet gone?      -> forget it, done
    selector invalid?      -> done (retrying cannot fix the spec; an update requeues it)
    adopt orphan revisions (a live GET first proves the set is still this one)
    claim its pods         (adopt orphans that match and are members by name, release the
                            pods it owns that stopped matching)
    update the set         (pods, claims, revisions, status: see _control)
    some ready pods not available yet (minReadySeconds)?
                           -> sync again after minReadySeconds

Every write the sync makes is recorded for the consistency check of the next sync.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kcontrol.client import PODS, STATEFULSETS, Client, Object
from kcontrol.clock import Clock
from kcontrol.controller import (
    CannotAdopt,
    ConsistencyStore,
    ControllerRefManager,
    Result,
    get_controller_of,
    recheck_owner,
)
from kcontrol.errors import NotFound, SelectorError, StaleCache
from kcontrol.informers import Indexer, Lister, split_meta_namespace_key
from kcontrol.labels import Selector, selector_from_label_selector
from kcontrol.logging import get_logger

from ..podutil import filter_pods_by_owner
from ._control import StatefulSetControl
from ._fields import meta, spec, spec_replicas, uid
from ._history import StatefulSetHistory, orphans
from ._identity import is_member_of
from ._metrics import StatefulSetMetrics
from ._names import API_VERSION, KIND
from ._podstate import get_min_ready_seconds

__all__ = ["StatefulSetSyncer"]

_log = get_logger(__name__)


class StatefulSetSyncer:
    """Syncs one StatefulSet key at a time; see the module docstring.

    ``client`` reads live sets (the checks before adopting) and patches pods (adopt,
    release); ``set_lister`` and ``pod_indexer`` (carrying the pod controller index) are
    the caches; ``control`` does the work on the set's pods.
    """

    def __init__(
        self,
        *,
        client: Client,
        set_lister: Lister,
        pod_indexer: Indexer,
        history: StatefulSetHistory,
        control: StatefulSetControl,
        consistency: ConsistencyStore,
        metrics: StatefulSetMetrics,
        clock: Clock,
    ) -> None:
        self._client = client
        self._sets = set_lister
        self._pods = pod_indexer
        self._history = history
        self._control = control
        self._consistency = consistency
        self._metrics = metrics
        self._clock = clock

    async def sync(self, key: str) -> Result | None:
        """Converge the StatefulSet ``key`` (``namespace/name``). Raises to have the key
        retried with backoff (:class:`~kcontrol.errors.StaleCache`, not an error, while the
        caches are behind the controller's own writes); returns
        ``Result(requeue_after=minReadySeconds)`` while some pods are not available yet."""
        try:
            self._consistency.ensure_ready(key)
        except StaleCache as stale:
            self._metrics.stale_sync_skipped(stale.resource.group, stale.resource.plural)
            raise  # the runner retries it (see Controller)
        namespace, name = split_meta_namespace_key(key)
        try:
            set_ = self._sets.get(namespace, name)
        except NotFound:
            _log.debug("StatefulSet has been deleted", key=key)
            self._consistency.clear(key)
            self._control.forget(key)
            return None
        try:
            selector = selector_from_label_selector(spec(set_).get("selector"))
        except SelectorError as error:
            _log.error("error converting StatefulSet selector", key=key, error=str(error))
            return None
        with self._consistency.recording(key, uid(set_)):
            await self._adopt_orphan_revisions(set_)
            pods = await self._claim_pods(set_, selector)
            status = await self._control.update_stateful_set(set_, pods, self._clock.wall())
        min_ready = get_min_ready_seconds(set_)
        if (
            min_ready > 0
            and status is not None
            and int(status.get("availableReplicas") or 0) != spec_replicas(set_)
        ):
            return Result(requeue_after=float(min_ready))
        return None

    async def _adopt_orphan_revisions(self, set_: Mapping[str, Any]) -> None:
        """Adopt the orphan revisions the set's selector matches, after checking with a live
        read that the set is still the one cached (not deleted and re-created)."""
        found = orphans(await self._history.list_revisions(set_))
        if not found:
            return
        try:
            await recheck_owner(self._client, STATEFULSETS, set_)()
        except Exception as error:
            raise CannotAdopt(f"can't adopt ControllerRevisions: {error}") from error
        await self._history.adopt_orphan_revisions(set_, found)

    async def _claim_pods(self, set_: Mapping[str, Any], selector: Selector) -> list[Object]:
        """The pods the set owns after adopting and releasing. Only pods named as members
        of the set (``<set>-<ordinal>``) are claimed; one it owns that is not is released."""
        candidates = filter_pods_by_owner(self._pods, set_, KIND, include_orphans=True)
        members = [pod for pod in candidates if is_member_of(set_, pod)]
        manager = ControllerRefManager(
            self._client,
            set_,
            selector,
            (API_VERSION, KIND),
            PODS,
            can_adopt=recheck_owner(self._client, STATEFULSETS, set_),
        )
        claimed = await manager.claim(members)
        await self._release_non_members(manager, set_, candidates)
        return claimed

    @staticmethod
    async def _release_non_members(
        manager: ControllerRefManager, set_: Mapping[str, Any], pods: Sequence[Object]
    ) -> None:
        if meta(set_).get("deletionTimestamp") is not None:
            return
        for pod in pods:
            ref = get_controller_of(pod)
            if ref is not None and ref.get("uid") == uid(set_) and not is_member_of(set_, pod):
                await manager.release(pod)


def _ns(set_: Mapping[str, Any]) -> str:
    return str(meta(set_).get("namespace") or "")
