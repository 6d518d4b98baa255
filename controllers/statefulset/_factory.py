"""Registration with ``kcontrol-manager``: the flag, the factory and the :class:`ControllerSpec`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcontrol.manager import ControllerContext, ControllerFlag, ControllerSpec
from kcontrol.manager.flags import parse_bool

from ._names import NAME

if TYPE_CHECKING:
    from ._controller import StatefulSetController

__all__ = ["CONCURRENT_SYNCS", "MAX_UNAVAILABLE", "SPEC", "new_controller"]

CONCURRENT_SYNCS = ControllerFlag(
    "concurrent-statefulset-syncs",
    default=5,
    help="The number of statefulset objects that are allowed to sync concurrently. Larger "
    "number = more responsive statefulsets, but more CPU (and network) load",
    minimum=1,
)
"""kube-controller-manager's ``--concurrent-statefulset-syncs`` (default 5)."""

MAX_UNAVAILABLE = ControllerFlag(
    "statefulset-max-unavailable",
    default=False,
    help="Honour spec.updateStrategy.rollingUpdate.maxUnavailable of StatefulSets (the "
    "MaxUnavailableStatefulSet feature gate of kube-controller-manager: beta, off by default "
    "in Kubernetes 1.36). Off: a rolling update replaces one pod at a time.",
    parse=parse_bool,
)
"""kube-controller-manager's ``--feature-gates=MaxUnavailableStatefulSet=...`` (default off),
as a flag of this controller: kcontrol-manager has no feature gates."""


def new_controller(ctx: ControllerContext) -> StatefulSetController:
    """Build the StatefulSet controller from the manager's context: its client, shared
    informers, ``--concurrent-statefulset-syncs`` workers, metrics registry and an event
    recorder for ``statefulset-controller``."""
    from ._controller import StatefulSetController  # noqa: PLC0415 - only when the manager runs it

    return StatefulSetController(
        client=ctx.client,
        informers=ctx.informers,
        recorder=ctx.new_recorder(NAME),
        workers=ctx.flag(CONCURRENT_SYNCS.name),
        registry=ctx.registry,
        max_unavailable=bool(ctx.flag(MAX_UNAVAILABLE.name)),
    )


SPEC = ControllerSpec(
    NAME, new_controller, enabled_by_default=False, flags=(CONCURRENT_SYNCS, MAX_UNAVAILABLE)
)
"""``statefulset-controller``, with ``--concurrent-statefulset-syncs`` and
``--statefulset-max-unavailable``.

Disabled by default in kcontrol-manager (``--controllers=*,statefulset-controller`` enables
it), unlike kube-controller-manager: beside a kube-controller-manager that still runs its own
statefulset-controller, every StatefulSet would be managed twice (pods deleted and made again
by two controllers, revisions written by both). Enable it together with
``-statefulset-controller`` in kube-controller-manager's ``--controllers``."""
