"""Registration with ``kcontrol-manager``: the flag, the factory and the :class:`ControllerSpec`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcontrol.manager import ControllerContext, ControllerFlag, ControllerSpec

from ._names import DEFAULT_WORKERS, NAME

if TYPE_CHECKING:
    from ._controller import JobController

__all__ = ["CONCURRENT_SYNCS", "SPEC", "new_controller"]

CONCURRENT_SYNCS = ControllerFlag(
    "concurrent-job-syncs",
    default=DEFAULT_WORKERS,
    help="The number of job objects that are allowed to sync concurrently. Larger number = "
    "more responsive jobs, but more CPU (and network) load",
    minimum=1,
)
"""kube-controller-manager's ``--concurrent-job-syncs`` (default 5)."""


def new_controller(ctx: ControllerContext) -> JobController:
    """Build the Job controller from the manager's context: its client, shared informers,
    ``--concurrent-job-syncs`` workers, metrics registry and an event recorder for
    ``job-controller``."""
    from ._controller import JobController  # noqa: PLC0415 - only when the manager runs it

    return JobController(
        client=ctx.client,
        informers=ctx.informers,
        recorder=ctx.new_recorder(NAME),
        workers=ctx.flag(CONCURRENT_SYNCS.name),
        registry=ctx.registry,
    )


SPEC = ControllerSpec(NAME, new_controller, enabled_by_default=False, flags=(CONCURRENT_SYNCS,))
"""``job-controller``, with ``--concurrent-job-syncs``.

Disabled by default in kcontrol-manager (``--controllers=*,job-controller`` enables it),
unlike kube-controller-manager: a manager beside a kube-controller-manager that still runs its
own job-controller would otherwise manage every Job twice (two sets of expectations, pods
created twice) until the admin disabled that one. Enable it together with
``-job-controller`` in kube-controller-manager's ``--controllers``. Off by default for good,
as ``ttl-after-finished-controller`` and ``cronjob-controller``: upgrading kcontrol must
never start a second controller on objects kube-controller-manager still manages."""
