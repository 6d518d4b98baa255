"""Registration with ``kcontrol-manager``: the factory and its :class:`ControllerSpec`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcontrol.manager import ControllerContext, ControllerSpec

from ._names import NAME

if TYPE_CHECKING:
    from ._controller import DisruptionController

__all__ = ["SPEC", "new_controller"]


def new_controller(ctx: ControllerContext) -> DisruptionController:
    """Build the disruption controller from the manager's context: its client, the shared
    informers, an event recorder for ``disruption-controller`` and the metrics registry.
    The finder of custom ``/scale`` kinds maps kinds with a discovery-backed REST mapper
    and asks the group version's discovery document whether a 404 means "no scale
    subresource"; both need the real API client (a fake client gets no such finder).
    Upstream has no flag for this controller (one worker per queue, fixed timeouts)."""
    from kcontrol.client import ApiClient  # noqa: PLC0415 - only when it runs
    from kcontrol.discovery import DynamicRESTMapper  # noqa: PLC0415

    from ._controller import DisruptionController  # noqa: PLC0415
    from ._finders import DiscoveryScaleSupport, ScaleFinder  # noqa: PLC0415

    scale_finder = None
    if isinstance(ctx.client, ApiClient):
        scale_finder = ScaleFinder(
            ctx.client, DynamicRESTMapper(ctx.client), DiscoveryScaleSupport(ctx.client)
        )
    return DisruptionController(
        client=ctx.client,
        informers=ctx.informers,
        recorder=ctx.new_recorder(NAME),
        scale_finder=scale_finder,
        registry=ctx.registry,
    )


SPEC = ControllerSpec(NAME, new_controller, enabled_by_default=False)
"""``disruption-controller``, with no flags of its own (kube-controller-manager has none).

Disabled by default in kcontrol-manager (``--controllers=*,disruption-controller`` enables
it), unlike kube-controller-manager, for the reason the batch controllers are: two
controllers writing every PDB's status would race each other; enabling it is a step taken
together with ``-disruption-controller`` there (docs/manager/index.md, "Taking over from
kube-controller-manager")."""
