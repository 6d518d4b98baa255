"""The kind of object the controller manages, as parameters of the one implementation.

Upstream runs ``pkg/controller/replicaset`` for ReplicaSets and, through the conversion
adapter of ``pkg/controller/replication``, for ReplicationControllers: an RC is converted to
an RS on the way in and back on the way out, as if it were an older version of the same API.
Here the objects stay as they are and the few places that differ read them through a
:class:`ReplicaKind`: the resource (informer, live reads, status writes), the kind and
apiVersion of the pods' controller references and of the events' object, how the pod
selector is read, the queue's name, and whether the status has ``terminatingReplicas``.
Everything else - spec.replicas, minReadySeconds, the template, the status counts and the
``ReplicaFailure`` condition - has the same shape in both kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kcontrol.client import REPLICASETS, Resource
from kcontrol.labels import Selector, selector_from_label_selector

from ._names import QUEUE_NAME

__all__ = ["POD_TEMPLATE_HASH_LABEL", "REPLICA_SET", "ReplicaKind", "label_selector_of"]

POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
"""The label a Deployment's ReplicaSets tell their pods apart by (apps/v1's
``DefaultDeploymentUniqueLabelKey``)."""


@dataclass(frozen=True, slots=True)
class ReplicaKind:
    """What one instance of the controller manages.

    - ``resource``: the API resource of the managed objects; its ``kind`` and
      ``api_version`` are what the pods' controller references name.
    - ``selector``: the pod selector of one object; raises
      :class:`~kcontrol.errors.SelectorError` when it is invalid.
    - ``queue_name``: the work queue's and the runner's name (metrics label).
    - ``status_terminating_replicas``: whether the kind's status has
      ``terminatingReplicas`` (upstream's ``EnableStatusTerminatingReplicas``); a kind
      without it must not be given one, or every sync would see a status to write.
    - ``sibling_pod_label``: a label the pods of objects with the same controller are told
      apart by, indexed on the pod informer for the deletion ranking's look at siblings'
      pods; ``None``: no index.
    """

    resource: Resource
    selector: Callable[[Mapping[str, Any]], Selector]
    queue_name: str
    status_terminating_replicas: bool = True
    sibling_pod_label: str | None = None

    @property
    def kind(self) -> str:
        return self.resource.kind

    @property
    def api_version(self) -> str:
        return self.resource.api_version


def label_selector_of(obj: Mapping[str, Any]) -> Selector:
    """The selector of ``spec.selector``, a ``metav1.LabelSelector`` (a ReplicaSet's)."""
    return selector_from_label_selector((obj.get("spec") or {}).get("selector"))


REPLICA_SET = ReplicaKind(
    REPLICASETS, label_selector_of, QUEUE_NAME, sibling_pod_label=POD_TEMPLATE_HASH_LABEL
)
"""ReplicaSets (apps/v1): the controller's default."""
