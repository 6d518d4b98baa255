"""Registration with ``kcontrol-manager``: the factory and its :class:`ControllerSpec`."""

from __future__ import annotations

from typing import Final

from controllers.deployment._controller import NAME, DeploymentController
from kcontrol.manager import ControllerContext, ControllerSpec

__all__ = ["SPEC", "SYNC_TIMEOUT", "new_controller"]

SYNC_TIMEOUT: Final = 60.0
"""Seconds one sync may take before it is cancelled and retried. A sync makes a handful of
API calls; a hung connection must not hold a worker (and its key) forever."""


def new_controller(ctx: ControllerContext) -> DeploymentController:
    """Build the Deployment controller from the manager's context: its client, shared
    informers, ``--concurrent-deployment-syncs`` workers, metrics registry and an event
    recorder for ``deployment-controller``."""
    return DeploymentController(
        client=ctx.client,
        informers=ctx.informers,
        recorder=ctx.new_recorder(NAME),
        workers=ctx.options.concurrent_deployment_syncs,
        registry=ctx.registry,
        sync_timeout=SYNC_TIMEOUT,
    )


SPEC = ControllerSpec(NAME, new_controller)
"""``deployment-controller``, enabled by default."""
