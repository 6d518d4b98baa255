"""One PodDisruptionBudget's sync: upstream's ``sync``, ``trySync`` and ``failSafe``.

Level-based: it reads the PDB and its pods from the caches and writes the status the
numbers give. First match wins::

    PDB gone from the cache           -> done
    selector invalid                  -> warning NoPods, fail-safe
    no pods                           -> event NoPods (normal), carry on with zero
    expected count cannot be computed -> warning CalculateExpectedPodCountFailed, fail-safe
    pods without a controller         -> warning UnmanagedPods, carry on
    disruptedPods entries expired     -> warning NotDeleted on each pod, entry dropped
    status already current            -> done (no write)
    write the status (PUT status, resourceVersion-checked)
        Conflict                      -> error: retried with backoff, no fail-safe
        other error                   -> fail-safe
    a disruptedPods entry kept        -> sync again when the first one expires

The expected count and the healthy target (upstream's ``getExpectedPodCount``):

- ``maxUnavailable`` set: expected = the sum of the scales of the pods' controllers;
  desired = expected - maxUnavailable (a percentage of expected, rounded up), at least 0;
- ``minAvailable`` an integer: desired = it; expected = the number of selected pods
  (being deleted or not) - controllers are not looked up;
- ``minAvailable`` a percentage: expected as for ``maxUnavailable``; desired = that
  percentage of it, rounded up;
- neither: 0 and 0.

The fail-safe writes ``disruptionsAllowed: 0`` and ``DisruptionAllowed``
False/``SyncFailed`` with the error, so the eviction API refuses evictions while the
controller cannot tell; if that write succeeds the key is done (as upstream), else it is
retried.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from kcontrol.client import PODDISRUPTIONBUDGETS, Client, Object
from kcontrol.clock import Clock
from kcontrol.controller import Result, get_controller_of
from kcontrol.errors import Conflict, NotFound
from kcontrol.events import EventRecorder
from kcontrol.informers import Lister, split_meta_namespace_key
from kcontrol.labels import selector_from_label_selector
from kcontrol.logging import get_logger

from ..intstr import scaled_value_from_int_or_percent
from ._finders import ControllerFinders
from ._names import NAME
from ._status import (
    PdbCounts,
    build_disrupted_pod_map,
    count_healthy_pods,
    new_status,
    set_sync_failed,
    status_is_current,
)

__all__ = ["PdbSyncer", "UnmanagedPods"]

_log = get_logger(__name__, controller=NAME)

UnmanagedPods = list[str]
"""Names of selected pods that have no controller."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


class PdbSyncer:
    """Syncs one PDB key; see the module docstring.

    ``client`` writes PDB statuses; ``pdbs`` and ``pods`` are the caches; ``finders`` map a
    pod's controller to its scale; ``recorder`` takes the events; ``clock`` gives the time
    of the disrupted-pod checks and of the condition transitions.
    """

    def __init__(
        self,
        *,
        client: Client,
        pdbs: Lister,
        pods: Lister,
        finders: ControllerFinders,
        recorder: EventRecorder,
        clock: Clock,
    ) -> None:
        self._client = client
        self._pdbs = pdbs
        self._pods = pods
        self._finders = finders
        self._recorder = recorder
        self._clock = clock

    async def sync(self, key: str) -> Result | None:
        namespace, name = split_meta_namespace_key(key)
        try:
            pdb = self._pdbs.get(namespace, name)
        except NotFound:
            _log.debug("PodDisruptionBudget has been deleted", key=key)
            return None
        try:
            return await self._try_sync(pdb)
        except Conflict:
            raise  # the PDB changed under us (an eviction): sync again, no fail-safe
        except Exception as error:  # anything else: make the budget refuse evictions
            _log.error("Failed to sync PDB", key=key, error=str(error))
            await self._fail_safe(pdb, error)
            return None

    async def _try_sync(self, pdb: Object) -> Result | None:
        try:
            pods = self.pods_for(pdb)
        except ValueError as error:
            self._recorder.eventf(pdb, "Warning", "NoPods", "Failed to get pods: %s", error)
            raise
        if not pods:
            self._recorder.event(pdb, "Normal", "NoPods", "No matching pods found")
        try:
            expected, desired, unmanaged = await self.expected_pod_count(pdb, pods)
        except Exception as error:
            self._recorder.eventf(
                pdb,
                "Warning",
                "CalculateExpectedPodCountFailed",
                "Failed to calculate the number of expected pods: %s",
                error,
            )
            raise
        if unmanaged:
            _log.debug("found unmanaged pods associated with this PDB", pods=unmanaged)
            self._recorder.eventf(
                pdb,
                "Warning",
                "UnmanagedPods",
                "Pods selected by this PodDisruptionBudget (selector: %s) were found to be "
                "unmanaged. As a result, the status of the PDB cannot be calculated correctly, "
                "which may result in undefined behavior. To account for these pods please set "
                '".spec.minAvailable" field of the PDB to an integer value.',
                (pdb.get("spec") or {}).get("selector"),
            )
        now = self._clock.wall()
        disrupted = build_disrupted_pod_map(
            pods, (pdb.get("status") or {}).get("disruptedPods"), now
        )
        for pod in disrupted.expired:
            self._recorder.eventf(
                pod,
                "Warning",
                "NotDeleted",
                "Pod was expected by PDB %s/%s to be deleted but it wasn't",
                _meta(pdb).get("namespace"),
                _meta(pdb).get("name"),
            )
        counts = PdbCounts(
            current_healthy=count_healthy_pods(pods, disrupted.kept, now),
            desired_healthy=desired,
            expected_pods=expected,
            disrupted_pods=disrupted.kept,
        )
        if not status_is_current(pdb, counts):
            updated = copy.deepcopy(pdb)
            updated["status"] = new_status(pdb, counts, now)
            await self._client.update_status(PODDISRUPTIONBUDGETS, updated)
        if disrupted.recheck_at is not None:
            return Result(requeue_after=max((disrupted.recheck_at - now).total_seconds(), 0.001))
        return None

    def pods_for(self, pdb: Mapping[str, Any]) -> list[Object]:
        """The cached pods of the PDB's namespace its selector matches: no selector
        matches none, an empty one every pod. Raises
        :class:`~kcontrol.labels.SelectorError` (a ``ValueError``) for an invalid one."""
        selector = selector_from_label_selector((pdb.get("spec") or {}).get("selector"))
        pods: list[Object] = self._pods.list(str(_meta(pdb).get("namespace") or ""), selector)
        return pods

    async def expected_pod_count(
        self, pdb: Mapping[str, Any], pods: Sequence[Object]
    ) -> tuple[int, int, UnmanagedPods]:
        """``(expectedPods, desiredHealthy, unmanaged pod names)``; see the module
        docstring. Raises for a controller that cannot be found or read, and for a
        malformed IntOrString."""
        spec = pdb.get("spec") or {}
        max_unavailable = spec.get("maxUnavailable")
        min_available = spec.get("minAvailable")
        if max_unavailable is not None:
            expected, unmanaged = await self.expected_scale(pods)
            unavailable = scaled_value_from_int_or_percent(max_unavailable, expected, True)
            return expected, max(expected - unavailable, 0), unmanaged
        if isinstance(min_available, int) and not isinstance(min_available, bool):
            return len(pods), min_available, []
        if isinstance(min_available, str):
            expected, unmanaged = await self.expected_scale(pods)
            return (
                expected,
                scaled_value_from_int_or_percent(min_available, expected, True),
                unmanaged,
            )
        return 0, 0, []

    async def expected_scale(self, pods: Sequence[Object]) -> tuple[int, UnmanagedPods]:
        """The sum of the scales of the pods' controllers (each counted once), and the
        names of the pods with no controller. Raises ``LookupError`` for a pod whose
        controller no finder knows."""
        scales: dict[str, int] = {}
        unmanaged: UnmanagedPods = []
        for pod in pods:
            ref = get_controller_of(pod)
            if ref is None:
                unmanaged.append(str(_meta(pod).get("name")))
                continue
            if ref.get("uid") in scales:
                continue
            found = await self._finders.find(ref, str(_meta(pod).get("namespace") or ""))
            if found is None:
                raise LookupError(f'found no controllers for pod "{_meta(pod).get("name")}"')
            scales[found.uid] = found.replicas
        return sum(scales.values()), unmanaged

    async def _fail_safe(self, pdb: Object, error: Exception) -> None:
        updated = copy.deepcopy(pdb)
        set_sync_failed(updated.setdefault("status", {}), str(error), self._clock.wall())
        await self._client.update_status(PODDISRUPTIONBUDGETS, updated)
