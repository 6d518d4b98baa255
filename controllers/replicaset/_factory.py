"""Registration with ``kcontrol-manager``: the flag, the factory and the :class:`ControllerSpec`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcontrol.manager import ControllerContext, ControllerFlag, ControllerSpec

from ._names import NAME

if TYPE_CHECKING:
    from ._controller import ReplicaSetController

__all__ = ["CONCURRENT_SYNCS", "SPEC", "new_controller"]

CONCURRENT_SYNCS = ControllerFlag(
    "concurrent-replicaset-syncs",
    default=5,
    help="The number of replica sets that are allowed to sync concurrently.",
    minimum=1,
)
"""kube-controller-manager's ``--concurrent-replicaset-syncs`` (default 5)."""


def new_controller(ctx: ControllerContext) -> ReplicaSetController:
    """The :data:`~kcontrol.manager.ControllerFactory` of the ReplicaSet controller."""
    from ._controller import ReplicaSetController  # noqa: PLC0415 - only when the manager runs it

    return ReplicaSetController(
        client=ctx.client,
        informers=ctx.informers,
        recorder=ctx.new_recorder(NAME),
        workers=ctx.flag(CONCURRENT_SYNCS.name),
        registry=ctx.registry,
    )


SPEC = ControllerSpec(NAME, new_controller, flags=(CONCURRENT_SYNCS,))
"""Registered through the ``kcontrol.controllers`` entry point ``replicaset-controller``."""
