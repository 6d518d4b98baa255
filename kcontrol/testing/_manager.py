"""Running a :class:`~kcontrol.manager.Manager` for the length of a test.

An operator's tests run the same manager its ``__main__`` runs, against a
:class:`~kcontrol.testing.FakeClient` (unit tests) or a real API server (envtest)::

    async with running(manager, client=FakeClient(resources=[WEBSITES, DEPLOYMENTS])) as fake:
        await fake.create(WEBSITES, website)
        ...  # assert on what the operator wrote: fake.actions, fake.get(...)
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator
from typing import TypeVar

from kcontrol.client import Client
from kcontrol.manager import Manager

__all__ = ["running"]

C = TypeVar("C", bound=Client)


@contextlib.asynccontextmanager
async def running(
    manager: Manager, *, client: C | None = None, ready_within: float = 30.0
) -> AsyncIterator[C | None]:
    """Run ``manager`` in a task for the block (on ``client`` when given, see
    :meth:`Manager.run <kcontrol.manager.Manager.run>`), entered once it is
    :meth:`~kcontrol.manager.Manager.ready` (controllers running, caches synced); yields
    ``client``. On exit the manager is cancelled and drained, as on SIGTERM, and the objects
    its first sync froze out of the garbage collector (``gc.freeze()``, see
    :class:`~kcontrol.manager.Manager`) are unfrozen, so the test process is left as it was.

    A run that fails before it is ready raises its error here; one that is not ready within
    ``ready_within`` seconds raises :class:`TimeoutError`.
    """
    frozen_before = gc.get_freeze_count()
    task = asyncio.create_task(manager.run(client=client), name=f"manager {manager.component}")
    try:
        async with asyncio.timeout(ready_within):
            while not manager.ready():
                if task.done():
                    task.result()  # raises the run's error
                    raise RuntimeError("the manager stopped before it was ready")
                await asyncio.sleep(0.01)
        yield client
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if frozen_before == 0 and gc.get_freeze_count():
            gc.unfreeze()  # the run's gc.freeze() after its first sync: not for the next test
