"""The replication controller, kube-controller-manager's ``replicationcontroller-controller``
(``pkg/controller/replication``, Kubernetes 1.36 behaviour).

As upstream, it is the ReplicaSet controller (:mod:`kcontrol_controllers.replicaset`) run on
ReplicationControllers: one implementation, parametrised by the kind it manages, where
upstream converts each RC to a ReplicaSet and back. It keeps ``spec.replicas`` pods for every
ReplicationController, adopting the orphans its map selector matches, and writes its status
(replicas, fullyLabeledReplicas, readyReplicas, availableReplicas, observedGeneration, the
``ReplicaFailure`` condition - no terminatingReplicas, which the RC API lacks). Its pods are
controlled by ``v1``/``ReplicationController`` references and its events name the
ReplicationController, from ``replication-controller``.

``kcontrol-manager`` runs it through the entry point ``replicationcontroller-controller``
(:data:`SPEC`, opt-in), with ``--concurrent-rc-syncs`` workers. Layout:

- ``_adapter``: the ReplicationController kind and :class:`ReplicationManager`;
- ``_names``: name, event source, queue; ``_factory``: the flag, the factory, :data:`SPEC` -
  all that importing the package loads (the rest is loaded on first use).
"""

from typing import TYPE_CHECKING

from ._factory import SPEC, new_controller
from ._names import BURST_REPLICAS, EVENT_SOURCE, NAME, QUEUE_NAME

if TYPE_CHECKING:
    from ._adapter import REPLICATION_CONTROLLER, ReplicationManager
else:  # imported on first use: kcontrol-manager loads SPEC whether the controller runs or not
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__, {"._adapter": ["REPLICATION_CONTROLLER", "ReplicationManager"]}
    )

__all__ = [
    "BURST_REPLICAS",
    "EVENT_SOURCE",
    "NAME",
    "QUEUE_NAME",
    "REPLICATION_CONTROLLER",
    "SPEC",
    "ReplicationManager",
    "new_controller",
]
