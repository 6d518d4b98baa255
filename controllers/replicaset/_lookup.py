"""Cache lookups of the ReplicaSet controller: owners of pods, ReplicaSets selecting a pod,
sibling ReplicaSets and their pods. Every answer comes from the informers' caches (shared
objects: read-only)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcontrol.client import Object
from kcontrol.controller import get_controller_of, key_func, resolve_controller_ref
from kcontrol.errors import SelectorError
from kcontrol.informers import Indexer, Lister
from kcontrol.logging import get_logger

from ._kind import REPLICA_SET, ReplicaKind

__all__ = ["CONTROLLER_UID_INDEX", "ReplicaSetLookup", "controller_uid_index_func"]

_log = get_logger(__name__)

CONTROLLER_UID_INDEX = "controllerUID"
"""Name of the ReplicaSet informer index by the UID of the ReplicaSet's own controller."""


def controller_uid_index_func(rs: Object) -> list[str]:
    """Index values for :data:`CONTROLLER_UID_INDEX`: the controller's UID, if any."""
    ref = get_controller_of(rs)
    return [str(ref.get("uid"))] if ref is not None else []


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


class ReplicaSetLookup:
    """Reads the ReplicaSet cache (``rs_lister``, whose indexer ``rs_indexer`` carries
    :data:`CONTROLLER_UID_INDEX`) and the pod cache (``pod_lister``); ``kind`` says what
    those "ReplicaSets" are (ReplicationControllers for the replication controller)."""

    __slots__ = ("_kind", "_pod_lister", "_rs_indexer", "_rs_lister")

    def __init__(
        self,
        rs_lister: Lister,
        rs_indexer: Indexer,
        pod_lister: Lister,
        *,
        kind: ReplicaKind = REPLICA_SET,
    ) -> None:
        self._rs_lister = rs_lister
        self._rs_indexer = rs_indexer
        self._pod_lister = pod_lister
        self._kind = kind

    def resolve_controller_ref(
        self, namespace: str, controller_ref: Mapping[str, Any]
    ) -> Object | None:
        """The cached ReplicaSet a controller reference names, or ``None`` when the reference
        is not to a ReplicaSet, or names one that is gone or was re-created (other UID)."""
        return resolve_controller_ref(self._rs_lister, namespace, controller_ref, self._kind.kind)

    def pod_replica_sets(self, pod: Mapping[str, Any]) -> list[Object]:
        """The ReplicaSets of the pod's namespace whose selector matches its labels.

        A pod without labels matches none, and so does a ReplicaSet with an empty or invalid
        selector. More than one match is a user error (logged); the controller reference
        decides which one owns the pod.
        """
        pod_labels = _meta(pod).get("labels") or {}
        if not pod_labels:
            return []
        namespace = _meta(pod).get("namespace") or ""
        matches: list[Object] = []
        for rs in self._rs_lister.list(namespace):
            if _meta(rs).get("namespace") != namespace:
                continue
            try:
                selector = self._kind.selector(rs)
            except SelectorError:
                continue
            if selector.empty() or not selector.matches(pod_labels):
                continue
            matches.append(rs)
        if len(matches) > 1:
            _log.error(
                f"user error! more than one {self._kind.kind} is selecting pods", labels=pod_labels
            )
        return matches

    def replica_sets_with_same_controller(self, rs: Mapping[str, Any]) -> list[Object]:
        """The cached ReplicaSets controlled by ``rs``'s controller (``rs`` included); empty,
        with an error logged, when ``rs`` has no controller."""
        ref = get_controller_of(rs)
        if ref is None:
            _log.error(f"{self._kind.kind} has no controller", key=key_func(rs))
            return []
        return self._rs_indexer.by_index(CONTROLLER_UID_INDEX, str(ref.get("uid")))

    def indirectly_related_pods(self, rs: Mapping[str, Any]) -> list[Object]:
        """The pods selected by any ReplicaSet with the same controller as ``rs``, each once."""
        seen: set[str] = set()
        related: list[Object] = []
        for sibling in self.replica_sets_with_same_controller(rs):
            try:
                selector = self._kind.selector(sibling)
            except SelectorError:
                continue  # an invalid selector matches no pod
            for pod in self._pod_lister.list(_meta(sibling).get("namespace"), selector):
                uid = str(_meta(pod).get("uid"))
                if uid in seen:
                    continue
                seen.add(uid)
                related.append(pod)
        return related
