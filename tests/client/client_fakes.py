"""A scriptable local HTTP server standing in for kube-apiserver in the client's unit tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body) if self.body else None


def status_body(code: int, reason: str, message: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message or reason,
        "reason": reason,
        "code": code,
        **extra,
    }


def json_response(
    body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        body=orjson.dumps(body), status=status, headers=headers, content_type="application/json"
    )


def event_line(event_type: str, obj: dict[str, Any]) -> bytes:
    return orjson.dumps({"type": event_type, "object": obj}) + b"\n"


class FakeApiServer:
    """Records every request; answers from routes set by the test, else echoes the request.

    The echo answer is a JSON object with the method, path, query and decoded body, so a test
    can assert what the client sent from the value the client returns.
    """

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.routes: dict[tuple[str, str], Handler] = {}
        self.release = asyncio.Event()  # set at teardown: frees handlers parked on it
        self.parked = asyncio.Event()  # set when a request reaches park()
        self.app = web.Application()
        self.app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self.url = ""

    def route(self, method: str, path: str, handler: Handler) -> None:
        self.routes[(method, path)] = handler

    def respond(
        self,
        method: str,
        path: str,
        body: Any,
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> None:
        async def handler(_: web.Request) -> web.StreamResponse:
            if isinstance(body, bytes):
                return web.Response(body=body, status=status, headers=headers)
            return json_response(body, status, headers)

        self.route(method, path, handler)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(
            Recorded(
                method=request.method,
                path=request.path,
                query=dict(request.query),
                headers=dict(request.headers),
                body=body,
            )
        )
        handler = self.routes.get((request.method, request.path))
        if handler is not None:
            return await handler(request)
        return json_response(
            {
                "method": request.method,
                "path": request.path,
                "query": dict(request.query),
                "body": orjson.loads(body) if body else None,
                "contentType": request.headers.get("Content-Type"),
            }
        )

    async def park(self, _: web.Request) -> web.StreamResponse:
        """A handler that never answers (until teardown)."""
        self.parked.set()
        await self.release.wait()
        return web.Response(status=500)
