"""Registration with ``kcontrol-manager``: the factory and its :class:`ControllerSpec`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcontrol.manager import ControllerContext, ControllerFlag, ControllerSpec

from ._names import DEFAULT_WORKERS, NAME

if TYPE_CHECKING:
    from ._controller import TTLAfterFinishedController

__all__ = ["CONCURRENT_SYNCS", "SPEC", "new_controller"]

CONCURRENT_SYNCS = ControllerFlag(
    "concurrent-ttl-after-finished-syncs",
    default=DEFAULT_WORKERS,
    help=f"The number of {NAME} workers that are allowed to sync concurrently.",
    minimum=1,
)
"""kube-controller-manager's ``--concurrent-ttl-after-finished-syncs`` (default 5)."""


def new_controller(ctx: ControllerContext) -> TTLAfterFinishedController:
    """Build the TTL-after-finished controller from the manager's context: its client, the
    shared Job informer, ``--concurrent-ttl-after-finished-syncs`` workers and the metrics
    registry. No event recorder: upstream records no events."""
    from ._controller import TTLAfterFinishedController  # noqa: PLC0415 - only when it runs

    return TTLAfterFinishedController(
        client=ctx.client,
        informers=ctx.informers,
        workers=ctx.flag(CONCURRENT_SYNCS.name),
        registry=ctx.registry,
    )


SPEC = ControllerSpec(NAME, new_controller, enabled_by_default=False, flags=(CONCURRENT_SYNCS,))
"""``ttl-after-finished-controller``, with ``--concurrent-ttl-after-finished-syncs``.

Disabled by default in kcontrol-manager (``--controllers=*,ttl-after-finished-controller``
enables it), unlike kube-controller-manager: a manager beside kube-controller-manager that
took it over by default would delete finished Jobs alongside kube-controller-manager's own
until the admin disabled that one. Off by default for good, as ``job-controller`` and
``cronjob-controller``: upgrading kcontrol must never start a second controller on objects
kube-controller-manager still manages; enabling one is a step taken together with disabling
kube-controller-manager's (docs/manager/takeover.md)."""
