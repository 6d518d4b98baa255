"""The pod garbage collector: kube-controller-manager's ``pkg/controller/podgc`` for kcontrol
(Kubernetes 1.36 behaviour).

Every 20 s it deletes the oldest terminated pods beyond ``--terminated-pod-gc-threshold``,
and force-deletes (grace period 0, after marking them ``Failed``) the pods bound to nodes
that no longer exist (after a 40 s quarantine and a live GET of the node), the terminating
pods never scheduled, and the terminating pods on NotReady nodes tainted
``node.kubernetes.io/out-of-service``.

Run by ``kcontrol-manager`` as ``pod-garbage-collector-controller`` (entry point
``kcontrol_controllers.podgc:SPEC``), off by default; :func:`new_controller` builds it from a
:class:`~kcontrol.manager.ControllerContext`.

Layout: ``_controller`` (wiring and the periodic loop), ``_gc`` (one collection: the four
passes, their pure selections, the status patch and delete), ``_metrics``, ``_names`` (name,
periods, defaults), ``_factory`` (the spec and its flag).
"""

from typing import TYPE_CHECKING

from ._factory import SPEC, TERMINATED_POD_GC_THRESHOLD, new_controller
from ._names import (
    DEFAULT_TERMINATED_POD_GC_THRESHOLD,
    GC_CHECK_PERIOD,
    NAME,
    NODE_QUEUE_NAME,
    QUARANTINE_TIME,
)

if TYPE_CHECKING:
    from ._controller import PodGCController
else:  # imported on first use: kcontrol-manager loads SPEC whether the controller runs or not
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, {"._controller": ["PodGCController"]})

__all__ = [
    "DEFAULT_TERMINATED_POD_GC_THRESHOLD",
    "GC_CHECK_PERIOD",
    "NAME",
    "NODE_QUEUE_NAME",
    "QUARANTINE_TIME",
    "SPEC",
    "TERMINATED_POD_GC_THRESHOLD",
    "PodGCController",
    "new_controller",
]
