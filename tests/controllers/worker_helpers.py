"""Syncing a key in a unit test as the runner's workers sync it."""

from __future__ import annotations

from kcontrol.controller import Controller


async def sync_as_worker(controller: Controller, key: str, *, event_during: bool = False) -> None:
    """Take ``key`` from ``controller``'s queue and sync it as a worker does, so that
    :func:`kcontrol.controller.superseded` is known to the sync; with ``event_during``, the
    key is queued again while the sync runs (a newer event), so the runner would sync it once
    more after."""
    queue = controller.queue
    queue.add(key)
    assert await queue.get() == key
    if event_during:
        queue.add(key)
    try:
        await controller._process(key)
    finally:
        queue.done(key)
