"""The client contract every kcontrol component depends on.

Objects are plain ``dict``s exactly as the API server sent them (decoded JSON): nothing is
dropped, so writing an object back never loses a field the server knows and we do not.
Components depend on the narrow :class:`Reader` / :class:`Writer` protocols; the real
:class:`~kcontrol.client.ApiClient` and the in-memory :class:`~kcontrol.testing.FakeClient`
both implement :class:`Client`.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, NamedTuple, Protocol

from kcontrol.client._options import ListOptions
from kcontrol.client._resources import (
    CONFIGMAPS,
    DEPLOYMENTS,
    EVENTS,
    LEASES,
    NAMESPACES,
    PODS,
    REPLICASETS,
    SECRETS,
    Resource,
)

__all__ = [
    "CONFIGMAPS",
    "DEPLOYMENTS",
    "EVENTS",
    "LEASES",
    "NAMESPACES",
    "PODS",
    "REPLICASETS",
    "SECRETS",
    "Client",
    "Object",
    "PatchType",
    "Reader",
    "Resource",
    "WatchEvent",
    "Writer",
]

Object = dict[str, Any]
"""A Kubernetes object (or list) as decoded JSON."""


class WatchEvent(NamedTuple):
    """One watch event: ``type`` is ADDED, MODIFIED, DELETED or BOOKMARK."""

    type: str
    object: Object


class PatchType(enum.StrEnum):
    """Patch flavours, valued by their content type."""

    JSON = "application/json-patch+json"
    MERGE = "application/merge-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"


class Reader(Protocol):
    """Read access. Every method raises :class:`~kcontrol.errors.ApiError` subclasses for API
    failures and :class:`~kcontrol.errors.ApiConnectionError` when the server is unreachable."""

    async def get(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Object: ...

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
        transform: Callable[[Object], Object] | None = None,
    ) -> Object:
        """One page of a LIST: the list object (``items``, ``metadata.resourceVersion``,
        ``metadata.continue``). ``options`` holds the selectors, resourceVersion, ``limit``
        and ``continue_`` (the previous page's ``metadata.continue``, for the next page).
        ``transform``, if given, is applied to each item (after ``kind``/``apiVersion`` are
        filled in) and its result is what ``items`` holds; implementations should apply it
        as each item is decoded, so untransformed items need not all exist at once."""
        ...

    def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent]]:
        """Open a watch: ``async with client.watch(...) as events: async for ev in events``.

        ``options`` holds the selectors, the resourceVersion to start after,
        ``timeout_seconds``, bookmarks and ``send_initial_events``. Entering raises the API
        error if the server refuses the watch (e.g. 410). Iteration yields events in server
        order, raises the mapped :class:`ApiError` for an ``ERROR`` event (410 Gone ->
        :class:`~kcontrol.errors.Gone`), raises :class:`~kcontrol.errors.ApiConnectionError`
        if the connection breaks, and ends when the server closes the stream. Leaving the
        block closes the connection.
        """
        ...


class Writer(Protocol):
    """Write access; errors as for :class:`Reader`. Namespaces default to the object's own."""

    async def create(
        self, resource: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Object: ...

    async def update(
        self, resource: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Object:
        """PUT the whole object; a stale ``metadata.resourceVersion`` raises Conflict."""
        ...

    async def update_status(
        self, resource: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Object:
        """PUT to the ``status`` subresource."""
        ...

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> Object: ...

    async def delete(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        preconditions: Mapping[str, str] | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> Object:
        """DELETE; ``preconditions`` may hold ``uid`` and/or ``resourceVersion``. Returns the
        server's answer (the object, possibly still terminating, or a Status)."""
        ...


class Client(Reader, Writer, Protocol):
    """Read and write access."""
