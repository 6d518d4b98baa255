"""ReplicationControllers for the ReplicaSet controller: upstream's ``replication_controller.go``
and ``conversion.go``.

Upstream's replication manager *is* the ReplicaSet controller, given adapters that convert
each ReplicationController to a ReplicaSet on the way in (informer, lister, client reads) and
back on the way out (status writes, the pod control's events). kcontrol's ReplicaSet
controller reads the few fields that differ through a
:class:`~kcontrol_controllers.replicaset._kind.ReplicaKind` instead, so the objects stay as
the API serves them; :data:`REPLICATION_CONTROLLER` is that kind, with what the conversion
does:

- ``spec.selector`` is a plain ``map[string]string``: it becomes a label selector with those
  ``matchLabels``; a missing selector selects nothing (the API server defaults it from the
  template's labels and refuses an empty one, so neither is seen in practice);
- pods are controlled by ``v1``/``ReplicationController`` references, events name the
  ReplicationController, status writes go to ``replicationcontrollers/status``;
- the status has no ``terminatingReplicas`` (upstream passes
  ``EnableStatusTerminatingReplicas: false``);
- the queue is ``replicationmanager``; no pod index by ``pod-template-hash`` (no Deployment
  owns ReplicationControllers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcontrol.client import REPLICATIONCONTROLLERS
from kcontrol.labels import Selector, selector_from_label_selector

from ..replicaset._controller import ReplicaSetController
from ..replicaset._kind import ReplicaKind
from ._names import QUEUE_NAME

__all__ = ["REPLICATION_CONTROLLER", "ReplicationManager", "map_selector_of"]


def map_selector_of(rc: Mapping[str, Any]) -> Selector:
    """The pod selector of a ReplicationController: its ``spec.selector`` map as the
    ``matchLabels`` of a label selector (``Convert_Map_to_unversioned_LabelSelector``); no
    map selects nothing. Raises :class:`~kcontrol.errors.SelectorError` for an invalid
    label key or value."""
    selector = (rc.get("spec") or {}).get("selector")
    return selector_from_label_selector(None if selector is None else {"matchLabels": selector})


REPLICATION_CONTROLLER = ReplicaKind(
    REPLICATIONCONTROLLERS, map_selector_of, QUEUE_NAME, status_terminating_replicas=False
)
"""ReplicationControllers (core v1), as the ReplicaSet controller manages them."""


class ReplicationManager(ReplicaSetController):
    """The ReplicaSet controller on ReplicationControllers (upstream's
    ``ReplicationManager``, which embeds the ReplicaSetController): the same arguments but
    ``kind``, which is :data:`REPLICATION_CONTROLLER`. Its handlers keep the ReplicaSet
    names (``add_replica_set`` receives a ReplicationController)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(kind=REPLICATION_CONTROLLER, **kwargs)
