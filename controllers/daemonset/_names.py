"""The DaemonSet controller's names, defaults, and the labels, annotations and event reasons
it shares with kube-controller-manager (upstream ``pkg/controller/daemon`` and the
``apps/v1`` / ``extensions/v1beta1`` constants it uses, Kubernetes 1.36)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "BACKOFF_GC_INTERVAL",
    "BURST_REPLICAS",
    "DEFAULT_WORKERS",
    "FAILED_DAEMON_POD_REASON",
    "FAILED_PLACEMENT_REASON",
    "NAME",
    "QUEUE_NAME",
    "SELECTING_ALL_REASON",
    "STATUS_UPDATE_RETRIES",
    "SUCCEEDED_DAEMON_POD_REASON",
    "TEMPLATE_GENERATION_ANNOTATION",
    "TEMPLATE_GENERATION_LABEL",
    "UNIQUE_LABEL_KEY",
]

NAME: Final = "daemonset-controller"
"""The controller's name: ``--controllers`` entry and event source."""
QUEUE_NAME: Final = "daemonset"
"""The work queue's name (the ``name`` label of the ``workqueue_*`` metrics)."""
DEFAULT_WORKERS: Final = 2
"""kube-controller-manager's ``--concurrent-daemonset-syncs`` default."""
BURST_REPLICAS: Final = 250
"""The most pods one sync creates, and the most it deletes (upstream ``BurstReplicas``)."""
STATUS_UPDATE_RETRIES: Final = 1
"""Status writes retried after a failed one, with a fresh read, before the sync gives up."""
BACKOFF_GC_INTERVAL: Final = 60.0
"""Seconds between sweeps of the failed-pods backoff entries that have expired."""

# -- on pods and DaemonSets --------------------------------------------------------------------

UNIQUE_LABEL_KEY: Final = "controller-revision-hash"
"""The pod label holding the hash of the ControllerRevision a pod was made from
(``apps.DefaultDaemonSetUniqueLabelKey``, which is ``ControllerRevisionHashLabelKey``)."""
TEMPLATE_GENERATION_LABEL: Final = "pod-template-generation"
"""The pod label holding the DaemonSet's template generation when the pod was made
(``extensions.DaemonSetTemplateGenerationKey``), still compared for older pods."""
TEMPLATE_GENERATION_ANNOTATION: Final = "deprecated.daemonset.template.generation"
"""The DaemonSet annotation the API server keeps at its template generation
(``apps.DeprecatedTemplateGeneration``)."""

# -- event reasons -----------------------------------------------------------------------------

SELECTING_ALL_REASON: Final = "SelectingAll"
"""Warning: the DaemonSet's selector is empty and would select every pod; it is not synced."""
FAILED_PLACEMENT_REASON: Final = "FailedPlacement"
"""Warning: a daemon pod could not be placed on a node."""
FAILED_DAEMON_POD_REASON: Final = "FailedDaemonPod"
"""Warning: a daemon pod failed and is deleted, to be replaced."""
SUCCEEDED_DAEMON_POD_REASON: Final = "SucceededDaemonPod"
"""Normal: a daemon pod ran to completion and is deleted, to be replaced."""
