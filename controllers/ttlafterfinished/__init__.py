"""The TTL-after-finished controller: kube-controller-manager's
``pkg/controller/ttlafterfinished`` for kcontrol (Kubernetes 1.36 behaviour).

It deletes a finished Job (a ``Complete`` or ``Failed`` condition that is ``True``) that has
``spec.ttlSecondsAfterFinished``, that many seconds after it finished (the condition's
``lastTransitionTime``): it waits for the expiry in the delaying queue, reads the Job fresh
from the API server before deleting it (its TTL may have changed), and deletes it in the
foreground (its pods first) with a precondition on its UID. Jobs without a TTL, or not
finished, are left alone.

Run by ``kcontrol-manager`` as ``ttl-after-finished-controller`` (entry point
``kcontrol_controllers.ttlafterfinished:SPEC``) with ``--concurrent-ttl-after-finished-syncs``
workers; :func:`new_controller` builds it from a :class:`~kcontrol.manager.ControllerContext`.

Layout: ``_controller`` (wiring, handlers, the sync), ``_ttl`` (finish and expiry times,
pure), ``_metrics``, ``_names`` (name, queue, defaults), ``_factory`` (the spec and its flag).
"""

from typing import TYPE_CHECKING

from ._factory import CONCURRENT_SYNCS, SPEC, new_controller
from ._names import DEFAULT_WORKERS, NAME, QUEUE_NAME

if TYPE_CHECKING:
    from ._controller import TTLAfterFinishedController
else:  # imported on first use: kcontrol-manager loads SPEC whether the controller runs or not
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, {"._controller": ["TTLAfterFinishedController"]})

__all__ = [
    "CONCURRENT_SYNCS",
    "DEFAULT_WORKERS",
    "NAME",
    "QUEUE_NAME",
    "SPEC",
    "TTLAfterFinishedController",
    "new_controller",
]
