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
``_status``, ``_progress``, ``_rolling``, ``_recreate``, ``_rollback``, ``_hold`` (a step of
a Deployment rolled back automatically, kcontrol's own), ``_writes`` (every API write); pure
helpers by topic: ``_autorollback`` (when to roll back automatically and hold),
``_replicas`` (maxSurge/maxUnavailable maths),
``_replicasets`` (new/old, equality, ordering, counts), ``_annotations``, ``_revisions``,
``_conditions``, ``_hashing``, ``_fields``; ``_names`` (name, queue, defaults) and ``_factory``
(:data:`SPEC`), all that importing the package loads (the rest is loaded on first use).
"""

from typing import TYPE_CHECKING

from ._factory import SPEC, new_controller
from ._names import DEFAULT_WORKERS, MAX_RETRIES, NAME, QUEUE_NAME

if TYPE_CHECKING:
    from ._autorollback import AUTO_ROLLBACK_ANNOTATION, ROLLED_BACK, ROLLED_BACK_TO_ANNOTATION
    from ._controller import DeploymentController
    from ._hashing import compute_hash
else:  # imported on first use: kcontrol-manager loads SPEC whether the controller runs or not
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "._autorollback": [
                "AUTO_ROLLBACK_ANNOTATION",
                "ROLLED_BACK",
                "ROLLED_BACK_TO_ANNOTATION",
            ],
            "._controller": ["DeploymentController"],
            "._hashing": ["compute_hash"],
        },
    )

__all__ = [
    "AUTO_ROLLBACK_ANNOTATION",
    "DEFAULT_WORKERS",
    "MAX_RETRIES",
    "NAME",
    "QUEUE_NAME",
    "ROLLED_BACK",
    "ROLLED_BACK_TO_ANNOTATION",
    "SPEC",
    "DeploymentController",
    "compute_hash",
    "new_controller",
]
