"""Objects' metadata only: client-go's ``metadata`` client, as a view of an :class:`ApiClient`.

A controller that reads only names, labels, owner references or finalizers of some objects
(the objects it owns, say) need not download and cache their bodies. The API server answers
any GET, LIST or watch with each object reduced to ``apiVersion``/``kind``/``metadata`` when
asked for it in the Accept header (content negotiation with the ``as``/``g``/``v``
parameters; JSON here, protobuf in client-go)::

    Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json
    Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json

(the first for a LIST, the second for a GET or a watch). An answer then looks like::

    {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": {...}}

with all of ``metadata`` (labels, annotations, ownerReferences, finalizers, resourceVersion,
uid, deletionTimestamp, managedFields...) and nothing else; a LIST is a
``PartialObjectMetadataList`` of those. The ``kind`` and ``apiVersion`` are the server's:
:class:`MetadataClient` keeps them as sent, so an object read this way cannot be mistaken
for (or written back as) the whole object. The informers restore the resource's own kind in
their caches (:mod:`kcontrol.informers._metadata`).

A server that does not know ``PartialObjectMetadata`` (an old or aggregated API server)
picks the plain ``application/json`` offered last and sends whole objects; they are reduced
on arrival to the same shape, so callers see one shape whatever the server did. (client-go
decodes such answers into ``PartialObjectMetadata`` too, dropping the rest.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final

from kcontrol.client._decode import ListDecoder
from kcontrol.client._interface import Object, Reader, Resource, WatchEvent
from kcontrol.client._options import ListOptions
from kcontrol.client._resources import object_path
from kcontrol.client._transport import Transport
from kcontrol.client._watch import WatchStream

__all__ = [
    "ACCEPT_METADATA",
    "ACCEPT_METADATA_LIST",
    "META_API_VERSION",
    "PARTIAL_OBJECT_METADATA",
    "PARTIAL_OBJECT_METADATA_LIST",
    "MetadataClient",
    "PartialObjectMetadataEvents",
    "as_partial_object_metadata",
]

META_API_VERSION: Final = "meta.k8s.io/v1"
PARTIAL_OBJECT_METADATA: Final = "PartialObjectMetadata"
PARTIAL_OBJECT_METADATA_LIST: Final = "PartialObjectMetadataList"
ACCEPT_METADATA: Final = (
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
)
"""The Accept header of a GET or a watch for metadata only (JSON as the fallback)."""
ACCEPT_METADATA_LIST: Final = (
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)
"""The Accept header of a LIST for metadata only (JSON as the fallback)."""

_NO_OPTIONS = ListOptions()


def as_partial_object_metadata(obj: Object) -> Object:
    """``obj`` as a ``PartialObjectMetadata``: itself if the server sent one, else a new
    dict holding only its ``metadata`` (shared, not copied) under the meta.k8s.io/v1 type."""
    if obj.get("kind") == PARTIAL_OBJECT_METADATA and obj.get("apiVersion") == META_API_VERSION:
        return obj
    metadata = obj.get("metadata")
    return {
        "apiVersion": META_API_VERSION,
        "kind": PARTIAL_OBJECT_METADATA,
        "metadata": metadata if isinstance(metadata, dict) else {},
    }


class PartialObjectMetadataEvents:
    """The events of a watch, each object passed through :func:`as_partial_object_metadata`
    (bookmarks included, which carry only a resourceVersion). Errors and the end of the
    stream propagate from ``events`` unchanged."""

    __slots__ = ("_events",)

    def __init__(self, events: AsyncIterator[WatchEvent]) -> None:
        self._events = events

    def __aiter__(self) -> PartialObjectMetadataEvents:
        return self

    async def __anext__(self) -> WatchEvent:
        event_type, obj = await anext(self._events)
        return WatchEvent(event_type, as_partial_object_metadata(obj))


class MetadataClient:
    """A :class:`~kcontrol.client.Reader` whose objects are ``PartialObjectMetadata``.

    Made by :meth:`ApiClient.metadata_only <kcontrol.client.ApiClient.metadata_only>`: it
    sends its requests through that client (connections, credentials, rate limiter, user
    agent, timeout, retries and metrics are that client's) and differs only in what it asks
    for and gets back (module docstring). Paths, options, errors and the watch protocol are
    those of :class:`~kcontrol.client.Reader`; items of a LIST carry the server's
    ``PartialObjectMetadata`` kind, not the resource's.
    """

    __slots__ = ("_transport",)

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    async def get(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Object:
        path = object_path(resource, name, namespace, subresource)
        obj = await self._transport.request("GET", path, accept=ACCEPT_METADATA)
        return as_partial_object_metadata(obj)

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
        transform: Callable[[Object], Object] | None = None,
    ) -> Object:
        """One LIST page as a ``PartialObjectMetadataList``; each item is reduced (if the
        server sent it whole) and passed to ``transform`` as soon as it is decoded."""
        params = (options or _NO_OPTIONS).query()

        def item_hook(item: Object) -> Object:
            item = as_partial_object_metadata(item)
            return item if transform is None else transform(item)

        page = await self._transport.request(
            "GET",
            resource.path(namespace),
            params=params,
            decoder=lambda: ListDecoder(item_hook),
            accept=ACCEPT_METADATA_LIST,
        )
        page["apiVersion"] = META_API_VERSION
        page["kind"] = PARTIAL_OBJECT_METADATA_LIST
        return page

    @asynccontextmanager
    async def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
    ) -> AsyncIterator[AsyncIterator[WatchEvent]]:
        params = (options or _NO_OPTIONS).query(watch=True)
        response = await self._transport.open_stream(
            resource.path(namespace), params, accept=ACCEPT_METADATA
        )
        try:
            yield PartialObjectMetadataEvents(WatchStream(response))
        finally:
            response.close()  # drop the connection: a half-read stream cannot be reused


if TYPE_CHECKING:

    def _implements_reader(client: MetadataClient) -> Reader:
        return client
