"""An operator's Manager on the test apiserver, and polling for what it did."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry

from kcontrol.envtest import ControlPlane
from kcontrol.manager import Manager, ManagerOptions

T = TypeVar("T")


def new_manager(plane: ControlPlane, *, user: str | None = None, **options: Any) -> Manager:
    """An operator's Manager (its defaults) on the test apiserver, with its own registry,
    as the administrator or as ``user`` (one of the plane's users); ``options`` are
    :class:`ManagerOptions` fields."""
    defaults = ManagerOptions.for_operator("builder-test", **options)
    kubeconfig = plane.user_kubeconfig(user) if user else plane.kubeconfig_path
    client = replace(defaults.client, kubeconfig=str(kubeconfig))
    return Manager(
        replace(defaults, client=client),
        name="builder-test",
        registry=CollectorRegistry(),
        freeze_gc_after_sync=False,
    )


async def eventually(
    probe: Callable[[], Awaitable[T | None]], *, within: float = 15.0, message: str = ""
) -> T:
    """Poll ``probe`` every 50 ms until it returns something truthy, for at most ``within``."""
    deadline = time.monotonic() + within
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within}s: {message}")
        await asyncio.sleep(0.05)
