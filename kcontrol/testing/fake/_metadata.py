"""The fake's metadata view, made by :meth:`kcontrol.testing.fake.FakeClient.metadata_only`.

What :meth:`ApiClient.metadata_only <kcontrol.client.ApiClient.metadata_only>` gets from a
real server, made from the fake's whole objects: each object reduced to
``{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": ...}``, a
LIST to a ``PartialObjectMetadataList`` (see :mod:`kcontrol.client._metadata`). Requests
go through the fake client, so they are recorded as its actions (``get``/``list``/``watch``
of the resource, as for whole objects), reactors answer them (with whole objects, which are
reduced likewise) and watches are the tracker's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from kcontrol.client import ListOptions, Object, Reader, Resource, WatchEvent
from kcontrol.client._metadata import (
    META_API_VERSION,
    PARTIAL_OBJECT_METADATA_LIST,
    PartialObjectMetadataEvents,
    as_partial_object_metadata,
)

__all__ = ["FakeMetadataClient"]


class FakeMetadataClient:
    """A :class:`~kcontrol.client.Reader` of ``PartialObjectMetadata`` over ``reader``, a
    reader of whole objects (the fake client); see the module docstring."""

    __slots__ = ("_reader",)

    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    async def get(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Object:
        obj = await self._reader.get(resource, name, namespace=namespace, subresource=subresource)
        return as_partial_object_metadata(obj)

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
        transform: Callable[[Object], Object] | None = None,
    ) -> Object:
        page = await self._reader.list(resource, namespace=namespace, options=options)
        items = [as_partial_object_metadata(item) for item in page.get("items") or ()]
        return {
            "apiVersion": META_API_VERSION,
            "kind": PARTIAL_OBJECT_METADATA_LIST,
            "metadata": page.get("metadata") or {},
            "items": items if transform is None else [transform(item) for item in items],
        }

    @asynccontextmanager
    async def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
    ) -> AsyncIterator[AsyncIterator[WatchEvent]]:
        async with self._reader.watch(resource, namespace=namespace, options=options) as events:
            yield PartialObjectMetadataEvents(events)


if TYPE_CHECKING:

    def _implements_reader(client: FakeMetadataClient) -> Reader:
        return client
