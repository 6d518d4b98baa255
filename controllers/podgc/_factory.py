"""Registration with ``kcontrol-manager``: the factory and its :class:`ControllerSpec`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcontrol.manager import ControllerContext, ControllerFlag, ControllerSpec

from ._names import DEFAULT_TERMINATED_POD_GC_THRESHOLD, NAME

if TYPE_CHECKING:
    from ._controller import PodGCController

__all__ = ["SPEC", "TERMINATED_POD_GC_THRESHOLD", "new_controller"]

TERMINATED_POD_GC_THRESHOLD = ControllerFlag(
    "terminated-pod-gc-threshold",
    default=DEFAULT_TERMINATED_POD_GC_THRESHOLD,
    help=(
        "Number of terminated pods that can exist before the terminated pod garbage "
        "collector starts deleting terminated pods. If <= 0, the terminated pod garbage "
        "collector is disabled."
    ),
)
"""kube-controller-manager's ``--terminated-pod-gc-threshold`` (default 12500; ``<= 0``
turns the terminated-pod pass off, the other passes still run)."""


def new_controller(ctx: ControllerContext) -> PodGCController:
    """Build the pod garbage collector from the manager's context: its client, the shared pod
    and node informers, ``--terminated-pod-gc-threshold`` and the metrics registry. Upstream's
    periods (20 s between collections, a 40 s quarantine) have no flag, here as there."""
    from ._controller import PodGCController  # noqa: PLC0415 - only when it runs

    return PodGCController(
        client=ctx.client,
        informers=ctx.informers,
        terminated_pod_threshold=ctx.flag(TERMINATED_POD_GC_THRESHOLD.name),
        registry=ctx.registry,
    )


SPEC = ControllerSpec(
    NAME, new_controller, enabled_by_default=False, flags=(TERMINATED_POD_GC_THRESHOLD,)
)
"""``pod-garbage-collector-controller``, with ``--terminated-pod-gc-threshold``.

Disabled by default in kcontrol-manager (``--controllers=*,pod-garbage-collector-controller``
enables it), unlike kube-controller-manager, for the reason the batch controllers are:
upgrading kcontrol must never start a second collector beside kube-controller-manager's;
enabling it is a step taken together with ``-pod-garbage-collector-controller`` there
(docs/manager/index.md, "Taking over from kube-controller-manager")."""
