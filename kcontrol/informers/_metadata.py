"""Metadata-only informers: what a cache of ``PartialObjectMetadata`` holds, and how it is read.

:meth:`SharedInformerFactory.for_resource(..., metadata_only=True)
<kcontrol.informers.SharedInformerFactory.for_resource>` lists and watches through the
client's metadata view (``client.metadata_only()``: :class:`~kcontrol.client.MetadataClient`
for an :class:`~kcontrol.client.ApiClient`, the fake's own for
:class:`~kcontrol.testing.FakeClient`), so the informer's cache holds, per object, only::

    {"apiVersion": "v1", "kind": "Pod", "metadata": {...}}

The server sends these as ``kind: PartialObjectMetadata``, ``apiVersion: meta.k8s.io/v1``;
:class:`RestoredKindReader` gives each object the ``apiVersion`` and ``kind`` of the resource
it was read from before it is transformed and cached, as controller-runtime's cache does
for its metadata informers (its "GVK fixup" of list items and watch events). So code that
dispatches on ``obj["kind"]``, or builds an owner reference from a cached owner
(``apiVersion``, ``kind``, ``name``, ``uid``), works on a metadata-only cache as on a full
one; the whole ``metadata`` - labels, annotations, ownerReferences, finalizers,
resourceVersion, uid, generation, deletionTimestamp, managedFields - is there.

Such an object is not the whole object: never send it back with ``update`` (a PUT would
clear every field it lacks - a ConfigMap's ``data``, say). Change what it holds with a
merge patch of ``metadata`` or server-side apply, or ``get`` the object first.
controller-runtime refuses the update outright ("cannot update using only metadata"); plain
dicts carry no such mark, hence this rule.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from kcontrol.client import ListOptions, Object, Reader, Resource, WatchEvent

__all__ = ["RestoredKindReader", "metadata_reader"]


@runtime_checkable
class _HasMetadataView(Protocol):
    def metadata_only(self) -> Reader: ...


def metadata_reader(client: Reader) -> RestoredKindReader:
    """The reader of ``client``'s metadata-only informers: its ``metadata_only()`` view,
    with each object's kind restored. Raises :class:`TypeError` if ``client`` has no such
    view."""
    if not isinstance(client, _HasMetadataView):
        raise TypeError(
            f"{type(client).__name__} cannot read metadata only: it has no metadata_only() "
            "view (ApiClient and FakeClient have one)"
        )
    return RestoredKindReader(client.metadata_only())


def _restore_kind(obj: Object, api_version: str, kind: str) -> Object:
    """Set ``obj``'s ``apiVersion``/``kind``, in place (a fresh object). The two strings
    are made once per request, so that every object of it shares them."""
    obj["apiVersion"] = api_version
    obj["kind"] = kind
    return obj


class _RestoredKindEvents:
    """Watch events with each object's kind restored (see :func:`_restore_kind`)."""

    __slots__ = ("_api_version", "_events", "_kind")

    def __init__(self, events: AsyncIterator[WatchEvent], resource: Resource) -> None:
        self._events = events
        self._api_version = resource.api_version
        self._kind = resource.kind

    def __aiter__(self) -> _RestoredKindEvents:
        return self

    async def __anext__(self) -> WatchEvent:
        event_type, obj = await anext(self._events)
        return WatchEvent(event_type, _restore_kind(obj, self._api_version, self._kind))


class RestoredKindReader:
    """A :class:`~kcontrol.client.Reader` over a metadata view that gives every object the
    ``apiVersion``/``kind`` of the resource it was read from (module docstring).

    The objects of ``reader`` must be fresh (not shared), as a client's are: they are
    changed in place. In a LIST, the kind is restored before ``transform`` sees an item; the
    list object itself stays a ``PartialObjectMetadataList``."""

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
        return _restore_kind(obj, resource.api_version, resource.kind)

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
        transform: Callable[[Object], Object] | None = None,
    ) -> Object:
        api_version, kind = resource.api_version, resource.kind

        def restored(item: Object) -> Object:
            item = _restore_kind(item, api_version, kind)
            return item if transform is None else transform(item)

        return await self._reader.list(
            resource, namespace=namespace, options=options, transform=restored
        )

    @asynccontextmanager
    async def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
    ) -> AsyncIterator[AsyncIterator[WatchEvent]]:
        async with self._reader.watch(resource, namespace=namespace, options=options) as events:
            yield _RestoredKindEvents(events, resource)


if TYPE_CHECKING:

    def _implements_reader(reader: RestoredKindReader) -> Reader:
        return reader
