"""Registration with ``kcontrol-manager``: the factory, its :class:`ControllerSpec` and flags."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from kcontrol.manager import ControllerContext, ControllerFlag, ControllerSpec
from kcontrol.manager.flags import parse_bool

from ._names import DEFAULT_CONCURRENT_GC_SYNCS, EVENT_COMPONENT, NAME

if TYPE_CHECKING:
    from kcontrol.client import Resource
    from kcontrol.discovery import DiscoveryClient

    from ._controller import GarbageCollectorController

__all__ = [
    "CONCURRENT_GC_SYNCS",
    "ENABLE_GARBAGE_COLLECTOR",
    "SPEC",
    "deletable_resources",
    "new_controller",
]

CONCURRENT_GC_SYNCS = ControllerFlag(
    "concurrent-gc-syncs",
    default=DEFAULT_CONCURRENT_GC_SYNCS,
    help="The number of garbage collector workers that are allowed to sync concurrently.",
)
"""kube-controller-manager's ``--concurrent-gc-syncs`` (default 20)."""

ENABLE_GARBAGE_COLLECTOR = ControllerFlag(
    "enable-garbage-collector",
    default=True,
    parse=parse_bool,
    help=(
        "Enables the generic garbage collector. MUST be synced with the corresponding flag "
        "of the kube-apiserver."
    ),
)
"""kube-controller-manager's ``--enable-garbage-collector`` (default true): false leaves the
controller with nothing to run, even when ``--controllers`` names it."""


def new_controller(ctx: ControllerContext) -> GarbageCollectorController | None:
    """Build the garbage collector from the manager's context: its client (which must be the
    real API client: discovery and the REST mapper read the server's documents), an event
    recorder for ``garbage-collector-controller``, ``--concurrent-gc-syncs`` and the metrics
    registry. None (nothing to run) with ``--enable-garbage-collector=false``."""
    if not ctx.flag(ENABLE_GARBAGE_COLLECTOR.name):
        return None
    from kcontrol.discovery import DiscoveryClient, DynamicRESTMapper  # noqa: PLC0415

    from ._controller import GarbageCollectorController  # noqa: PLC0415

    discovery = DiscoveryClient(ctx.client)  # type: ignore[arg-type]
    return GarbageCollectorController(
        client=ctx.client,
        mapper=DynamicRESTMapper(discovery),
        discover=partial(deletable_resources, discovery),
        recorder=ctx.new_recorder(EVENT_COMPONENT),
        workers=ctx.flag(CONCURRENT_GC_SYNCS.name),
        registry=ctx.registry,
    )


async def deletable_resources(discovery: DiscoveryClient) -> list[Resource]:
    """The resources the collector monitors, from a fresh discovery read: those serving
    ``delete``, ``list`` and ``watch``, each once in its preferred version, as upstream's
    ``GetDeletableResources`` (a monitor per version would list and graph every object of a
    multi-version resource twice)."""
    found = await discovery.server_groups_and_resources()
    return found.supporting("delete", "list", "watch", preferred=True)


SPEC = ControllerSpec(
    NAME,
    new_controller,
    enabled_by_default=False,
    flags=(CONCURRENT_GC_SYNCS, ENABLE_GARBAGE_COLLECTOR),
    shardable=False,
)
"""``garbage-collector-controller``, with ``--concurrent-gc-syncs`` and
``--enable-garbage-collector``.

Disabled by default in kcontrol-manager (``--controllers=*,garbage-collector-controller``
enables it), unlike kube-controller-manager, for the reason the batch controllers are: two
collectors would act on every object twice; enabling it is a step taken together with
``-garbage-collector-controller`` there. It cannot run sharded (``--shards`` above 1): its
graph spans every namespace (docs/manager/sharding.md)."""
