"""The ReplicaSet controller, a port of kube-controller-manager's ``pkg/controller/replicaset``
(Kubernetes 1.36 behaviour).

It keeps ``spec.replicas`` pods running for every ReplicaSet: it adopts matching orphan pods
and releases pods that stopped matching, creates missing pods from the template in
slow-start batches, deletes extra pods in the order that disturbs least (see
:mod:`kcontrol_controllers.activepods`), waits for the informers to observe what it did
before acting again (expectations), and keeps ``status`` (replicas, fullyLabeledReplicas,
readyReplicas, availableReplicas, terminatingReplicas, observedGeneration, the
``ReplicaFailure`` condition) current.

``kcontrol-manager`` runs it through the entry point ``replicaset-controller`` (:data:`SPEC`),
with ``--concurrent-replicaset-syncs`` workers. Layout, by behaviour:

- ``_controller``: informers, event handlers, the runner; ``_lookup``: cache lookups;
- ``_sync``: the sync of one key; ``_manage``: creating and deleting pods (slow start,
  bursts, expectations) through the shared ``podcontrol`` (the requests and their events);
- ``_ranking``: which pods go first (pure, on the shared ``activepods`` order); ``_status``:
  status calculation and write;
- ``_metrics``: the controller's own metrics (waiting for the informers to see the
  controller's own writes is the library's :class:`~kcontrol.controller.ConsistencyStore`);
- ``_kind``: what the controller manages - ReplicaSets, or ReplicationControllers for
  :mod:`kcontrol_controllers.replicationcontroller` (upstream's replication manager is this
  controller too);
- ``_names``: name, queue, burst size; ``_factory``: the flag, the factory, :data:`SPEC` -
  all that importing the package loads (the rest is loaded on first use).
"""

from typing import TYPE_CHECKING

from ._factory import SPEC, new_controller
from ._names import BURST_REPLICAS, NAME, QUEUE_NAME

if TYPE_CHECKING:
    from ._controller import ReplicaSetController
else:  # imported on first use: kcontrol-manager loads SPEC whether the controller runs or not
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, {"._controller": ["ReplicaSetController"]})

__all__ = [
    "BURST_REPLICAS",
    "NAME",
    "QUEUE_NAME",
    "SPEC",
    "ReplicaSetController",
    "new_controller",
]
