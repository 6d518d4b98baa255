"""Registration with ``kcontrol-manager``: the flag, the factory and the :class:`ControllerSpec`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcontrol.manager import ControllerContext, ControllerFlag, ControllerSpec

from ._names import DEFAULT_WORKERS, NAME

if TYPE_CHECKING:
    from ._controller import DaemonSetsController

__all__ = ["CONCURRENT_SYNCS", "SPEC", "new_controller"]

CONCURRENT_SYNCS = ControllerFlag(
    "concurrent-daemonset-syncs",
    default=DEFAULT_WORKERS,
    help="The number of daemonset objects that are allowed to sync concurrently. Larger number "
    "= more responsive daemonsets, but more CPU (and network) load",
    minimum=1,
)
"""kube-controller-manager's ``--concurrent-daemonset-syncs`` (default 2)."""


def new_controller(ctx: ControllerContext) -> DaemonSetsController:
    """Build the DaemonSet controller from the manager's context: its client, shared
    informers, ``--concurrent-daemonset-syncs`` workers, metrics registry and an event
    recorder for ``daemonset-controller``."""
    from ._controller import DaemonSetsController  # noqa: PLC0415 - only when the manager runs it

    return DaemonSetsController(
        client=ctx.client,
        informers=ctx.informers,
        recorder=ctx.new_recorder(NAME),
        workers=ctx.flag(CONCURRENT_SYNCS.name),
        registry=ctx.registry,
    )


SPEC = ControllerSpec(NAME, new_controller, enabled_by_default=False, flags=(CONCURRENT_SYNCS,))
"""``daemonset-controller``, with ``--concurrent-daemonset-syncs``.

Disabled by default in kcontrol-manager (``--controllers=*,daemonset-controller`` enables
it), unlike kube-controller-manager: beside a kube-controller-manager still running its own
daemonset-controller every DaemonSet would be managed twice. Enable it together with
``-daemonset-controller`` in kube-controller-manager's ``--controllers``."""
