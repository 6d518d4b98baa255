"""Stale ``DisruptionTarget`` conditions: upstream's ``syncStalePodDisruption``.

A disruption (the eviction API, preemption, the taint manager) sets a True
``DisruptionTarget`` condition on a pod just before it deletes the pod. When the delete never
comes (the eviction was refused after the condition was written, say), the condition would
claim forever that the pod is about to go. A condition is stale when:

- it is True, on a pod that is not being deleted and not in a terminal phase, and
- its reason is not ``TerminationByKubelet`` (the kubelet's own may precede the deletion by
  any time), and
- it became True more than :data:`~._names.STALE_POD_DISRUPTION_TIMEOUT` ago.

A stale condition is replaced by ``DisruptionTarget`` False (no reason, no message, the
transition time now), written with a PUT of the pod's status checked against its
resourceVersion - as upstream v1.36 does (earlier releases used server-side apply). A pod
whose condition is not yet stale is looked at again when it will be.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kcontrol.client import PODS, Client
from kcontrol.clock import Clock
from kcontrol.controller import Result
from kcontrol.errors import NotFound
from kcontrol.informers import Lister, split_meta_namespace_key
from kcontrol.logging import get_logger
from kcontrol.metatime import format_time, parse_time

from ..conditions import get_condition
from ._names import DISRUPTION_TARGET, NAME, STALE_POD_DISRUPTION_TIMEOUT, TERMINATION_BY_KUBELET

__all__ = ["StalePodDisruptionSyncer", "stale_disruption_wait"]

_log = get_logger(__name__, controller=NAME)


def stale_disruption_wait(
    pod: Mapping[str, Any], now: datetime, timeout: float = STALE_POD_DISRUPTION_TIMEOUT
) -> float | None:
    """Upstream's ``nonTerminatingPodHasStaleDisruptionCondition``: ``None`` when the pod
    has no condition that could become stale; else the seconds until it is (0: it is)."""
    if (pod.get("metadata") or {}).get("deletionTimestamp") is not None:
        return None
    status = pod.get("status") or {}
    condition = get_condition(status, DISRUPTION_TARGET)
    if (
        condition is None
        or condition.get("status") != "True"
        or condition.get("reason") == TERMINATION_BY_KUBELET
        or status.get("phase") in ("Succeeded", "Failed")
    ):
        return None
    since = parse_time(condition.get("lastTransitionTime"))
    if since is None:
        return 0.0
    return max(timeout - (now - since).total_seconds(), 0.0)


class StalePodDisruptionSyncer:
    """Syncs one pod key of the stale-condition queue; see the module docstring.

    ``client`` writes pod statuses; ``pods`` is the cache; ``timeout`` is upstream's
    ``stalePodDisruptionTimeout`` (settable, as upstream's
    ``NewDisruptionControllerInternal`` allows for tests).
    """

    def __init__(
        self,
        *,
        client: Client,
        pods: Lister,
        clock: Clock,
        timeout: float = STALE_POD_DISRUPTION_TIMEOUT,
    ) -> None:
        self._client = client
        self._pods = pods
        self._clock = clock
        self.timeout = timeout

    def wait_for(self, pod: Mapping[str, Any]) -> float | None:
        """:func:`stale_disruption_wait` at the clock's time, with this syncer's timeout."""
        return stale_disruption_wait(pod, self._clock.wall(), self.timeout)

    async def sync(self, key: str) -> Result | None:
        namespace, name = split_meta_namespace_key(key)
        try:
            pod = self._pods.get(namespace, name)
        except NotFound:
            _log.debug("skipping clearing DisruptionTarget condition: pod was deleted", key=key)
            return None
        wait = self.wait_for(pod)
        if wait is None:
            return None
        if wait > 0:
            return Result(requeue_after=wait)
        updated = copy.deepcopy(pod)
        status = updated.setdefault("status", {})
        cleared: dict[str, Any] = {
            "type": DISRUPTION_TARGET,
            "status": "False",
            "lastTransitionTime": format_time(self._clock.wall()),
        }
        generation = (pod.get("metadata") or {}).get("generation")
        if generation:
            cleared["observedGeneration"] = generation
        status["conditions"] = [
            cleared if c.get("type") == DISRUPTION_TARGET else c
            for c in status.get("conditions") or ()
        ]
        await self._client.update_status(PODS, updated)
        _log.info("reset stale DisruptionTarget condition to False", key=key)
        return None
