"""Registration with ``kcontrol-manager``: the factory and its :class:`ControllerSpec`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kcontrol.manager import ControllerContext, ControllerFlag, ControllerSpec
from kcontrol.manager.flags import parse_bool

from ._names import NAME

if TYPE_CHECKING:
    from ._controller import DeploymentController

__all__ = ["AUTO_ROLLBACK", "CONCURRENT_SYNCS", "SPEC", "SYNC_TIMEOUT", "new_controller"]

CONCURRENT_SYNCS = ControllerFlag(
    "concurrent-deployment-syncs",
    default=5,
    help="The number of deployment objects that are allowed to sync concurrently.",
    minimum=1,
)
"""kube-controller-manager's ``--concurrent-deployment-syncs`` (default 5)."""

AUTO_ROLLBACK = ControllerFlag(
    "deployment-auto-rollback",
    default=False,
    help="Roll a Deployment back to its last good ReplicaSet when its rollout exceeds its "
    "progress deadline, and hold it there until the template changes (kcontrol's own; "
    "a Deployment's annotation deployment.kcontrol.io/auto-rollback=true|false overrides it).",
    parse=parse_bool,
)
"""kcontrol's automatic rollback for every Deployment that does not opt out (default off:
only Deployments annotated ``deployment.kcontrol.io/auto-rollback: "true"``)."""

SYNC_TIMEOUT: Final[float | None] = None
"""No limit on a whole sync, as upstream. A hung connection cannot hold a worker forever:
each API call is bounded by the client's request timeout. A limit on the whole sync would
cancel syncs that are only slow (waiting for the client's rate limiter, or on a 429's
Retry-After while the API server sheds load), throwing their work away and counting each as
one of the 15 failures after which the key is dropped."""


def new_controller(ctx: ControllerContext) -> DeploymentController:
    """Build the Deployment controller from the manager's context: its client, shared
    informers, ``--concurrent-deployment-syncs`` workers, ``--deployment-auto-rollback``,
    metrics registry and an event recorder for ``deployment-controller``."""
    from ._controller import DeploymentController  # noqa: PLC0415 - only when the manager runs it

    return DeploymentController(
        client=ctx.client,
        informers=ctx.informers,
        recorder=ctx.new_recorder(NAME),
        workers=ctx.flag(CONCURRENT_SYNCS.name),
        registry=ctx.registry,
        sync_timeout=SYNC_TIMEOUT,
        auto_rollback=ctx.flag(AUTO_ROLLBACK.name),
    )


SPEC = ControllerSpec(NAME, new_controller, flags=(CONCURRENT_SYNCS, AUTO_ROLLBACK))
"""``deployment-controller``, enabled by default, with ``--concurrent-deployment-syncs`` and
``--deployment-auto-rollback``."""
