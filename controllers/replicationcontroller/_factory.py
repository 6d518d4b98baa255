"""Registration with ``kcontrol-manager``: the flag, the factory and the :class:`ControllerSpec`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcontrol.manager import ControllerContext, ControllerFlag, ControllerSpec

from ._names import EVENT_SOURCE, NAME

if TYPE_CHECKING:
    from ._adapter import ReplicationManager

__all__ = ["CONCURRENT_SYNCS", "SPEC", "new_controller"]

CONCURRENT_SYNCS = ControllerFlag(
    "concurrent-rc-syncs",
    default=5,
    help="The number of replication controllers that are allowed to sync concurrently. Larger "
    "number = more responsive replica management, but more CPU (and network) load",
    minimum=1,
)
"""kube-controller-manager's ``--concurrent-rc-syncs`` (default 5)."""


def new_controller(ctx: ControllerContext) -> ReplicationManager:
    """Build the replication controller from the manager's context: its client, shared
    informers, ``--concurrent-rc-syncs`` workers, metrics registry and an event recorder for
    ``replication-controller``."""
    from ._adapter import ReplicationManager  # noqa: PLC0415 - only when the manager runs it

    return ReplicationManager(
        client=ctx.client,
        informers=ctx.informers,
        recorder=ctx.new_recorder(EVENT_SOURCE),
        workers=ctx.flag(CONCURRENT_SYNCS.name),
        registry=ctx.registry,
    )


SPEC = ControllerSpec(NAME, new_controller, enabled_by_default=False, flags=(CONCURRENT_SYNCS,))
"""``replicationcontroller-controller``, with ``--concurrent-rc-syncs``.

Disabled by default in kcontrol-manager (``--controllers=*,replicationcontroller-controller``
enables it), unlike kube-controller-manager: beside a kube-controller-manager still running
its own every ReplicationController would be managed twice. Enable it together with
``-replicationcontroller-controller`` in kube-controller-manager's ``--controllers``."""
