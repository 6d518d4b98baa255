"""A reflector's LIST, page by page, into memory: client-go's ``tools/pager`` for informers.

:meth:`ListPager.list` follows ``continue`` tokens until the last page. If a token expires
mid-list (it outlived etcd's compaction window), the list is redone in one request at the
version first asked for, as client-go's pager falls back to a full list.

GC policy (:class:`kcontrol._gc.GcPause`): the cyclic GC is paused from the first item of a
page that decodes, and given back before each further page is requested - waiting for the
server is not decoding - then held again while the store is replaced, and settled in one
pass at the end (:meth:`ListPager.replace`). The pause belongs to the pager: use it as a
``with`` block around one LIST and its store update; leaving it gives back whatever is still
held, on success, failure or cancellation alike.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import NamedTuple, Self

from kcontrol._gc import GcPause
from kcontrol.client import ListOptions, Object, Reader, Resource
from kcontrol.clock import Clock
from kcontrol.errors import is_resource_expired
from kcontrol.logging import BoundLogger

__all__ = ["ListPager", "Listed"]

ReplaceFunc = Callable[[list[Object], str], Awaitable[None]]
"""A store's ``replace(items, resource_version)``."""


class Listed(NamedTuple):
    """The outcome of one LIST."""

    items: list[Object]
    resource_version: str
    paginated: bool
    """Whether the server answered with more than one page."""


class ListPager:
    """Lists one collection (``resource`` in ``namespace``, selected by ``options``) with
    ``transform`` applied to each item as it decodes; see the module docstring.

    Each request's options are ``options`` with the pager's resourceVersion, ``limit`` and
    ``continue_``."""

    def __init__(
        self,
        reader: Reader,
        resource: Resource,
        *,
        namespace: str | None,
        options: ListOptions,
        transform: Callable[[Object], Object] | None,
        clock: Clock,
        log: BoundLogger,
    ) -> None:
        self._reader = reader
        self._resource = resource
        self._namespace = namespace
        self._options = options
        self._pause = GcPause(clock=clock)
        self._hook = self._decode_hook(transform)
        self._log = log

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._pause.release()  # without settling: a no-op once replace() finished

    async def list(self, resource_version: str, limit: int | None) -> Listed:
        """Every page of one LIST at ``resource_version``, ``limit`` items per page (None:
        one page). Errors of the requests propagate."""
        items: list[Object] = []
        continue_token: str | None = None
        paginated = False
        while True:
            self._pause.release()  # waiting for the server is not decoding
            try:
                page = await self._request(
                    None if continue_token else resource_version, limit, continue_token
                )
            except Exception as err:
                if not (continue_token and is_resource_expired(err)):
                    raise
                self._log.info("list continuation expired, listing in one piece")
                self._pause.release()
                page = await self._request(resource_version, None, None)
                metadata = page.get("metadata") or {}
                return Listed(
                    page.get("items") or [], metadata.get("resourceVersion", ""), paginated
                )
            items.extend(page.get("items") or [])
            metadata = page.get("metadata") or {}
            continue_token = metadata.get("continue") or None
            if continue_token is None:
                return Listed(items, metadata.get("resourceVersion", ""), paginated)
            paginated = True

    async def replace(self, replace: ReplaceFunc, listed: Listed, *, freeze: bool) -> None:
        """Hand ``listed`` to ``replace`` (a store's) with the GC paused, then settle the
        pause (with ``gc.freeze()`` if ``freeze`` and the process allows it)."""
        self._pause.hold(lease=False)  # storing is CPU work too
        await replace(listed.items, listed.resource_version)
        self._pause.finish(freeze=freeze)

    async def _request(
        self, resource_version: str | None, limit: int | None, continue_token: str | None
    ) -> Object:
        options = dataclasses.replace(
            self._options,
            resource_version=resource_version,
            limit=limit,
            continue_=continue_token,
        )
        return await self._reader.list(
            self._resource, namespace=self._namespace, options=options, transform=self._hook
        )

    def _decode_hook(
        self, transform: Callable[[Object], Object] | None
    ) -> Callable[[Object], Object]:
        """The per-item hook of a LIST: pauses the GC as decoding starts, then transforms."""
        hold = self._pause.hold
        if transform is None:

            def hold_gc(obj: Object) -> Object:
                hold()
                return obj

            return hold_gc

        def hold_gc_and_transform(obj: Object) -> Object:
            hold()
            return transform(obj)

        return hold_gc_and_transform
