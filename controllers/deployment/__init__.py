"""The Deployment controller: kube-controller-manager's ``pkg/controller/deployment`` for
kcontrol.

It rolls a Deployment's pod template out through ReplicaSets - RollingUpdate within
``maxSurge``/``maxUnavailable``, or Recreate - scales them proportionally when the Deployment
is resized mid-rollout, keeps ``revisionHistoryLimit`` old ReplicaSets for rollbacks, and
reports progress in the Deployment's status and conditions, behaving as upstream does (same
annotations, condition reasons and messages, event reasons and messages) so that it can take
over from kube-controller-manager without a rollout: it finds existing ReplicaSets by
template equality, not by their ``pod-template-hash``.

Run by ``kcontrol-manager`` as ``deployment-controller`` (entry point
``kcontrol_controllers.deployment:SPEC``); :func:`new_controller` builds it from a
:class:`~kcontrol.manager.ControllerContext`.

Layout (one behaviour per module, as upstream): ``_controller`` (wiring, event handlers,
``syncDeployment``), ``_sync`` (shared steps), ``_scale`` (resizing, proportional scaling),
``_status``, ``_progress``, ``_rolling``, ``_recreate``, ``_rollback``, ``_writes`` (every
API write); pure helpers by topic: ``_replicas`` (maxSurge/maxUnavailable maths),
``_replicasets`` (new/old, equality, ordering, counts), ``_annotations``, ``_revisions``,
``_conditions``, ``_hashing``, ``_fields``.
"""

from ._controller import (
    DEFAULT_WORKERS,
    MAX_RETRIES,
    NAME,
    QUEUE_NAME,
    DeploymentController,
)
from ._factory import SPEC, new_controller
from ._hashing import compute_hash

__all__ = [
    "DEFAULT_WORKERS",
    "MAX_RETRIES",
    "NAME",
    "QUEUE_NAME",
    "SPEC",
    "DeploymentController",
    "compute_hash",
    "new_controller",
]
