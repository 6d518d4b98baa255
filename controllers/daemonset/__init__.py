"""The DaemonSet controller, a port of kube-controller-manager's ``pkg/controller/daemon``
(Kubernetes 1.36 behaviour) - so far its pure parts; the controller itself (informers, event
handlers, the sync, status writes, ControllerRevision history) and its ``SPEC`` are still to
come, and this package exports only its names.

It will run one pod of a DaemonSet's template on every node that should have one, delete the
pods on nodes that should not, and replace pods whose template is out of date, OnDelete or
rolling within ``maxSurge`` / ``maxUnavailable``. Layout, by behaviour:

- ``_placement``: whether a node should run a daemon pod, and keep one it runs already
  (node name, node affinity, taints - on the shared :mod:`kcontrol_controllers.scheduling`);
- ``_pods``: the pod made for a node (template, the tolerations every daemon pod gets, pinning
  to the node by node affinity), which node a pod is for, whether it is up to date or
  available, the order of a node's pods, the failed-pods backoff key;
- ``_rolling``: the surge and unavailability limits of a rolling update, and a node's old and
  new pod;
- ``_names``: name, queue, defaults, and the labels, annotations and event reasons shared
  with upstream - all that importing the package loads.
"""

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
