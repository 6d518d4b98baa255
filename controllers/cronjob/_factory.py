"""Registration with ``kcontrol-manager``: the flag, the factory and the :class:`ControllerSpec`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcontrol.manager import ControllerContext, ControllerFlag, ControllerSpec

from ._names import DEFAULT_WORKERS, NAME

if TYPE_CHECKING:
    from ._controller import CronJobController

__all__ = ["CONCURRENT_SYNCS", "SPEC", "new_controller"]

CONCURRENT_SYNCS = ControllerFlag(
    "concurrent-cron-job-syncs",
    default=DEFAULT_WORKERS,
    help="The number of cron job objects that are allowed to sync concurrently. Larger number = "
    "more responsive jobs, but more CPU (and network) load",
    minimum=1,
)
"""kube-controller-manager's ``--concurrent-cron-job-syncs`` (default 5)."""


def new_controller(ctx: ControllerContext) -> CronJobController:
    """Build the CronJob controller from the manager's context: its client, shared informers,
    ``--concurrent-cron-job-syncs`` workers, metrics registry and an event recorder for
    ``cronjob-controller``."""
    from ._controller import CronJobController  # noqa: PLC0415 - only when the manager runs it

    return CronJobController(
        client=ctx.client,
        informers=ctx.informers,
        recorder=ctx.new_recorder(NAME),
        workers=ctx.flag(CONCURRENT_SYNCS.name),
        registry=ctx.registry,
    )


SPEC = ControllerSpec(NAME, new_controller, enabled_by_default=False, flags=(CONCURRENT_SYNCS,))
"""``cronjob-controller``, with ``--concurrent-cron-job-syncs``.

Disabled by default in kcontrol-manager (``--controllers=*,cronjob-controller`` enables it),
unlike kube-controller-manager, as ``job-controller``: a manager beside a
kube-controller-manager that still runs its own cronjob-controller would have two controllers
scheduling every CronJob (the Job names keep an activation from running twice, but both
would write the status and delete the history) until the admin disabled that one. Enable it
together with ``-cronjob-controller`` in kube-controller-manager's ``--controllers``."""
