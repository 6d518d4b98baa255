"""The DaemonSet controller, a port of kube-controller-manager's ``pkg/controller/daemon``
(Kubernetes 1.36 behaviour).

It runs one pod of a DaemonSet's template on every node that should have one (node name,
node affinity and selector, taints - not resources: the scheduler binds the pod), deletes the
pods on nodes that should not keep one and the failed ones (with a per-node backoff), records
each distinct template as a ControllerRevision, replaces out-of-date pods - ``OnDelete``, or
rolling within ``maxSurge`` / ``maxUnavailable`` - and keeps ``status`` current
(desiredNumberScheduled, currentNumberScheduled, numberMisscheduled, numberReady,
numberAvailable, updatedNumberScheduled, numberUnavailable, observedGeneration).

``kcontrol-manager`` runs it through the entry point ``daemonset-controller`` (:data:`SPEC`,
off by default), with ``--concurrent-daemonset-syncs`` workers. Layout, by behaviour:

- ``_controller``: informers, event handlers, the runner; ``_sync``: the sync of one key;
- ``_manage``: which nodes need a pod and which pods go, and sending that (slow start,
  expectations, the shared ``podcontrol``); ``_backoff``: the failed-pods backoff;
- ``_update``: one rolling-update step (pure); ``_history``: the ControllerRevisions
  (current, old, cleanup) on the shared :mod:`kcontrol_controllers.history`;
  ``_status``: the status counts (pure) and their write; ``_metrics``: the stale-cache metric;
- ``_placement``: whether a node should run a daemon pod, and keep one it runs already (on the
  shared :mod:`kcontrol_controllers.scheduling`); ``_pods``: the pod made for a node, which
  node a pod is for, whether it is up to date; ``_rolling``: the surge and unavailability
  limits;
- ``_names``: name, queue, defaults, labels, annotations and event reasons; ``_factory``: the
  flag, the factory, :data:`SPEC` - all that importing the package loads (the rest is loaded
  on first use).
"""

from typing import TYPE_CHECKING

from ._factory import SPEC, new_controller
from ._names import (
    BACKOFF_GC_INTERVAL,
    BURST_REPLICAS,
    DEFAULT_WORKERS,
    FAILED_DAEMON_POD_REASON,
    FAILED_PLACEMENT_REASON,
    NAME,
    QUEUE_NAME,
    SELECTING_ALL_REASON,
    STATUS_UPDATE_RETRIES,
    SUCCEEDED_DAEMON_POD_REASON,
    TEMPLATE_GENERATION_ANNOTATION,
    TEMPLATE_GENERATION_LABEL,
    UNIQUE_LABEL_KEY,
)

if TYPE_CHECKING:
    from ._controller import DaemonSetsController
else:  # imported on first use: kcontrol-manager loads SPEC whether the controller runs or not
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, {"._controller": ["DaemonSetsController"]})

__all__ = [
    "BACKOFF_GC_INTERVAL",
    "BURST_REPLICAS",
    "DEFAULT_WORKERS",
    "FAILED_DAEMON_POD_REASON",
    "FAILED_PLACEMENT_REASON",
    "NAME",
    "QUEUE_NAME",
    "SELECTING_ALL_REASON",
    "SPEC",
    "STATUS_UPDATE_RETRIES",
    "SUCCEEDED_DAEMON_POD_REASON",
    "TEMPLATE_GENERATION_ANNOTATION",
    "TEMPLATE_GENERATION_LABEL",
    "UNIQUE_LABEL_KEY",
    "DaemonSetsController",
    "new_controller",
]
