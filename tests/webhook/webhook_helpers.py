"""A WebhookServer on a free loopback port for one test, with its self-signed certificate."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from kcontrol.serving._http import Handler
from kcontrol.webhook import WebhookOptions, WebhookServer


@contextlib.asynccontextmanager
async def serving(**handlers: Handler) -> AsyncIterator[WebhookServer]:
    """Serve each handler at ``/<its keyword>`` (``_`` becomes ``-``) until the block ends."""
    server = WebhookServer(WebhookOptions(port=0, bind_address="127.0.0.1", hosts=("127.0.0.1",)))
    for name, handler in handlers.items():
        server.register("/" + name.replace("_", "-"), handler)
    task = asyncio.create_task(server.run())
    try:
        await asyncio.wait_for(server.wait_ready(), 10)
        yield server
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
