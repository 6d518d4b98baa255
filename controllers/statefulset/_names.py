"""The StatefulSet controller's names: the controller and its queue, the labels it writes on
pods, the kinds it owns, and the values of the ``spec`` fields it branches on."""

from __future__ import annotations

from typing import Final

__all__ = [
    "API_VERSION",
    "DELETE_POLICY",
    "KIND",
    "MAX_BATCH_SIZE",
    "NAME",
    "ON_DELETE",
    "ORDERED_READY",
    "PARALLEL",
    "POD_API_VERSION",
    "POD_INDEX_LABEL",
    "POD_KIND",
    "POD_NAME_LABEL",
    "QUEUE_NAME",
    "RETAIN_POLICY",
    "REVISION_LABEL",
    "ROLLING_UPDATE",
]

NAME: Final = "statefulset-controller"
"""The controller's name for ``--controllers``, and the source of its events."""

QUEUE_NAME: Final = "statefulset"
"""The work queue's name (the ``name`` label of the ``workqueue_*`` metrics)."""

API_VERSION: Final = "apps/v1"
KIND: Final = "StatefulSet"
"""The controller's kind (upstream ``controllerKind``): what its pods' controller references,
its ControllerRevisions' and its claims' owner references name."""

POD_API_VERSION: Final = "v1"
POD_KIND: Final = "Pod"
"""The kind of a pod as a claim's owner (upstream ``podKind``)."""

POD_NAME_LABEL: Final = "statefulset.kubernetes.io/pod-name"
"""Each pod's own name, as a label (``apps.StatefulSetPodNameLabel``): a Service can select a
single member."""

POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"
"""Each pod's ordinal, as a decimal label (``apps.PodIndexLabel``; feature gate PodIndexLabel,
GA and always on in 1.36)."""

REVISION_LABEL: Final = "controller-revision-hash"
"""The name of the ControllerRevision a pod was made from (``apps.StatefulSetRevisionLabel``)."""

MAX_BATCH_SIZE: Final = 500
"""The most pods a ``Parallel`` set creates or deletes at once (upstream ``MaxBatchSize``)."""

ORDERED_READY: Final = "OrderedReady"
PARALLEL: Final = "Parallel"
"""``spec.podManagementPolicy`` values: one pod at a time in ordinal order, or all at once."""

ROLLING_UPDATE: Final = "RollingUpdate"
ON_DELETE: Final = "OnDelete"
"""``spec.updateStrategy.type`` values."""

RETAIN_POLICY: Final = "Retain"
DELETE_POLICY: Final = "Delete"
"""``spec.persistentVolumeClaimRetentionPolicy`` values (``whenDeleted``, ``whenScaled``)."""
