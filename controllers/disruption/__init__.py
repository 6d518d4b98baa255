"""The disruption controller: kube-controller-manager's ``pkg/controller/disruption`` for
kcontrol (Kubernetes 1.36 behaviour).

It keeps the status of every PodDisruptionBudget - ``expectedPods``, ``currentHealthy``,
``desiredHealthy``, ``disruptionsAllowed``, ``disruptedPods`` and the ``DisruptionAllowed``
condition - which the eviction API reads to allow or refuse an eviction; and it sets to False
the ``DisruptionTarget`` conditions of pods that were marked for a disruption that never came.

Run by ``kcontrol-manager`` as ``disruption-controller`` (entry point
``kcontrol_controllers.disruption:SPEC``), off by default; :func:`new_controller` builds it
from a :class:`~kcontrol.manager.ControllerContext`.

Layout: ``_controller`` (wiring, handlers, the two queues), ``_sync`` (one PDB's sync and
the fail-safe), ``_status`` (the pure status maths and the condition), ``_finders`` (a pod's
controller and its scale), ``_stale`` (stale ``DisruptionTarget`` conditions), ``_names``
(name, queues, timeouts, condition vocabulary), ``_factory`` (the spec).
"""

from typing import TYPE_CHECKING

from ._factory import SPEC, new_controller
from ._names import (
    DELETION_TIMEOUT,
    NAME,
    QUEUE_NAME,
    STALE_POD_DISRUPTION_TIMEOUT,
    STALE_POD_QUEUE_NAME,
)

if TYPE_CHECKING:
    from ._controller import DisruptionController
    from ._finders import DiscoveryScaleSupport, ScaleFinder
else:  # imported on first use: kcontrol-manager loads SPEC whether the controller runs or not
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "._controller": ["DisruptionController"],
            "._finders": ["DiscoveryScaleSupport", "ScaleFinder"],
        },
    )

__all__ = [
    "DELETION_TIMEOUT",
    "NAME",
    "QUEUE_NAME",
    "SPEC",
    "STALE_POD_DISRUPTION_TIMEOUT",
    "STALE_POD_QUEUE_NAME",
    "DiscoveryScaleSupport",
    "DisruptionController",
    "ScaleFinder",
    "new_controller",
]
