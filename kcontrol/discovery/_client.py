"""DiscoveryClient: what the API server serves, read from its discovery documents.

A port of client-go's ``discovery.DiscoveryClient``, reading with raw GETs through the
:class:`~kcontrol.client.ApiClient` (its session, credentials, rate limiter and metrics).
The two roots (``/api`` and ``/apis``) are asked for in the aggregated format first; a server
that does not serve it answers with the legacy format, and the client then reads each group
version's document as well (:mod:`kcontrol.discovery._documents` describes both). Nothing is
cached here: every call asks the server; :class:`~kcontrol.discovery.DynamicRESTMapper`
is the cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Protocol

import orjson

from kcontrol.client import Resource
from kcontrol.discovery._documents import (
    AGGREGATED_DISCOVERY_ACCEPT,
    APIGroup,
    ServerResources,
    is_aggregated,
    parse_aggregated,
    parse_api_group_list,
    parse_api_versions,
    parse_resource_list,
    parse_verbs,
    split_api_version,
)
from kcontrol.errors import ApiConnectionError, KcontrolError, NotFound
from kcontrol.logging import get_logger

__all__ = ["DiscoveryClient", "RawReader"]

_log = get_logger(__name__)


class RawReader(Protocol):
    """Raw GETs of paths that are not resources: :meth:`kcontrol.client.ApiClient.get_raw`."""

    async def get_raw(self, path: str, *, accept: str | None = None) -> bytes: ...


class _Root:
    """One root document read: its groups, and their resources if it was aggregated."""

    def __init__(
        self,
        groups: list[APIGroup],
        resources: dict[str, tuple[Resource, ...]] | None,
        stale: dict[str, str],
        verbs: dict[Resource, frozenset[str]] | None = None,
    ) -> None:
        self.groups = groups
        self.resources = resources  # None: legacy, each version still to be read
        self.stale = stale
        self.verbs = verbs or {}


class DiscoveryClient:
    """Reads the server's discovery documents; see the module docstring.

    ``client`` is an :class:`~kcontrol.client.ApiClient` (or anything with its
    ``get_raw``). ``legacy=True`` never asks for the aggregated format (client-go's
    ``UseLegacyDiscovery``). Errors are the client's: :class:`~kcontrol.errors.ApiError`
    subclasses and :class:`~kcontrol.errors.ApiConnectionError` (also for a document that
    is not JSON).
    """

    def __init__(self, client: RawReader, *, legacy: bool = False) -> None:
        self._client = client
        self._accept = None if legacy else AGGREGATED_DISCOVERY_ACCEPT

    async def server_groups(self) -> tuple[APIGroup, ...]:
        """Every group the server serves, the core group first, each with its versions in
        order of preference (two requests)."""
        core, named = await self._roots()
        return (*core.groups, *named.groups)

    async def server_resources_for(self, api_version: str) -> tuple[Resource, ...]:
        """The resources (subresources left out) of one group version, from its own
        document (one request): ``/api/v1`` or ``/apis/<group>/<version>``.

        Raises :class:`~kcontrol.errors.NotFound` when the server does not serve that
        group version (a CRD's group before it is established), :class:`ValueError` for a
        malformed ``api_version``.
        """
        return (await self._read_version(api_version))[0]

    async def _read_version(
        self, api_version: str
    ) -> tuple[tuple[Resource, ...], dict[Resource, frozenset[str]]]:
        group, version = split_api_version(api_version)
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        document = await self._get(path, accept=None)
        resources = parse_resource_list(api_version, document)
        return resources, parse_verbs(resources, document)

    async def server_groups_and_resources(self) -> ServerResources:
        """Every group and every group version's resources (client-go's
        ``ServerGroupsAndResources``).

        Two requests where the server serves aggregated discovery; otherwise two more
        requests per group version, all at once. A group version whose own read fails
        (an aggregated API server that is down, say) is reported in ``failed`` rather than
        failing the whole read; a failure of a root document raises.
        """
        core, named = await self._roots()
        resources: dict[str, tuple[Resource, ...]] = {}
        failed: dict[str, str] = {}
        verbs: dict[Resource, frozenset[str]] = {}
        pending: list[str] = []
        for root in (core, named):
            failed.update(root.stale)
            verbs.update(root.verbs)
            if root.resources is not None:
                resources.update(root.resources)
            else:
                pending.extend(v for g in root.groups for v in g.api_versions)
        if pending:
            read = await self._read_each(pending)
            for api_version, outcome in read.items():
                if isinstance(outcome, str):
                    failed[api_version] = outcome
                else:
                    resources[api_version] = outcome[0]
                    verbs.update(outcome[1])
        return ServerResources(
            groups=(*core.groups, *named.groups),
            resources=resources,
            failed=failed,
            verbs=verbs,
        )

    # -- reading -----------------------------------------------------------------------------

    async def _roots(self) -> tuple[_Root, _Root]:
        # One after the other, as client-go: an error is raised as itself.
        return await self._root("/api"), await self._root("/apis")

    async def _root(self, path: str) -> _Root:
        try:
            document = await self._get(path, accept=self._accept)
        except NotFound:
            if path != "/api":
                raise
            # An aggregated API server may serve no core group at all (as client-go).
            return _Root([], {}, {})
        if is_aggregated(document):
            groups, resources, stale = parse_aggregated(document)
            verbs = {
                r: v
                for api_version, listed in resources.items()
                for r, v in parse_verbs(listed, document, api_version).items()
            }
            return _Root(groups, resources, stale, verbs)
        groups = parse_api_versions(document) if path == "/api" else parse_api_group_list(document)
        return _Root(groups, None, {})

    async def _read_each(
        self, api_versions: list[str]
    ) -> dict[str, tuple[tuple[Resource, ...], dict[Resource, frozenset[str]]] | str]:
        """Each group version's resources and their verbs, or the reason its read failed."""
        outcomes: dict[str, tuple[tuple[Resource, ...], dict[Resource, frozenset[str]]] | str] = {}

        async def read(api_version: str) -> None:
            try:
                outcomes[api_version] = await self._read_version(api_version)
            except KcontrolError as error:
                _log.debug(
                    "group version discovery failed", api_version=api_version, error=str(error)
                )
                outcomes[api_version] = str(error)

        async with asyncio.TaskGroup() as group:
            for api_version in api_versions:
                group.create_task(read(api_version))
        return outcomes

    async def _get(self, path: str, *, accept: str | None) -> Mapping[str, Any]:
        body = await self._client.get_raw(path, accept=accept)
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError as error:
            raise ApiConnectionError(f"GET {path}: the discovery document is not JSON") from error
        if not isinstance(document, dict):
            raise ApiConnectionError(f"GET {path}: the discovery document is not an object")
        return document
