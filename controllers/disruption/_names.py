"""The disruption controller's names, timeouts and API vocabulary: what its ``SPEC`` needs,
without the controller."""

from __future__ import annotations

from typing import Final

__all__ = [
    "DELETION_TIMEOUT",
    "DISRUPTION_ALLOWED",
    "DISRUPTION_TARGET",
    "INSUFFICIENT_PODS",
    "NAME",
    "QUEUE_NAME",
    "STALE_POD_DISRUPTION_TIMEOUT",
    "STALE_POD_QUEUE_NAME",
    "SUFFICIENT_PODS",
    "SYNC_FAILED",
    "TERMINATION_BY_KUBELET",
]

NAME: Final = "disruption-controller"
"""The controller's name for ``--controllers``, as kube-controller-manager's (which also
accepts the alias ``disruption``; its bootstrap RBAC role is
``system:controller:disruption-controller``)."""

QUEUE_NAME: Final = "disruption"
"""The PodDisruptionBudget queue, named as upstream's (the ``name`` label of the
``workqueue_*`` metrics)."""

STALE_POD_QUEUE_NAME: Final = "stale_pod_disruption"
"""The queue of pods whose ``DisruptionTarget`` condition may be stale, named as upstream's."""

DELETION_TIMEOUT: Final = 120.0
"""Upstream's ``DeletionTimeout``: seconds an entry of ``status.disruptedPods`` (a pod the
eviction API let go) is kept while the pod shows no ``deletionTimestamp``; past it the pod is
assumed not to be deleted after all, and counts as healthy again."""

STALE_POD_DISRUPTION_TIMEOUT: Final = 120.0
"""Upstream's ``stalePodDisruptionTimeout``: seconds a pod may carry a True
``DisruptionTarget`` condition without being deleted before the condition is set to False."""

DISRUPTION_ALLOWED: Final = "DisruptionAllowed"
"""``policy/v1``'s ``DisruptionAllowedCondition``: the PDB condition this controller keeps."""

SUFFICIENT_PODS: Final = "SufficientPods"
"""Reason of a True ``DisruptionAllowed``: ``disruptionsAllowed > 0``."""

INSUFFICIENT_PODS: Final = "InsufficientPods"
"""Reason of a False ``DisruptionAllowed`` computed from the pods."""

SYNC_FAILED: Final = "SyncFailed"
"""Reason of a False ``DisruptionAllowed`` written because the status could not be
computed (the fail-safe); its message is the error."""

DISRUPTION_TARGET: Final = "DisruptionTarget"
"""The pod condition a disruption (eviction, preemption, taint manager, ...) sets before it
deletes the pod."""

TERMINATION_BY_KUBELET: Final = "TerminationByKubelet"
"""``DisruptionTarget`` reason set by the kubelet; such a condition is never stale."""
