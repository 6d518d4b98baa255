"""DynamicRESTMapper: REST mapping from the server's discovery, cached, re-read on a miss.

A port of controller-runtime's dynamic (lazy) RESTMapper (``apiutil.NewDynamicRESTMapper``):

- nothing is read until the first lookup misses; that miss reads the whole discovery once
  (:meth:`~kcontrol.discovery.DiscoveryClient.server_groups_and_resources`: two requests
  where the server serves aggregated discovery);
- a hit is answered from the cache, with no request;
- a miss re-reads the discovery document of that one group version (one small request) and
  looks again, so a kind whose CRD was installed after start is found on the first lookup
  that follows. A group version the server does not serve (404) is cached as serving
  nothing; the kind is still unknown: :class:`~kcontrol.errors.NoKindMatch`.

Misses are rate-limited per group version: one that was read less than
``min_refresh_interval`` seconds ago (the first full read counts) is not read again - the
lookup fails at once from the cache - so a stream of lookups of unknown kinds costs at most
one request per group version per interval. Concurrent misses on one group version share a
single read. A read that fails (server unreachable, 403, an aggregated API server down)
raises its error and does not count: the next miss tries again.

A resource once found stays mapped until a miss re-reads its group version (as upstream): a
CRD deleted since is noticed by the requests made with its resource (404), not here.
"""

from __future__ import annotations

import asyncio

from kcontrol.client import Resource
from kcontrol.clock import Clock, RealClock
from kcontrol.discovery._client import DiscoveryClient, RawReader
from kcontrol.discovery._documents import split_api_version
from kcontrol.discovery._restmapper import ResourceIndex
from kcontrol.errors import NoKindMatch, NoResourceMatch, NotFound
from kcontrol.logging import get_logger

__all__ = ["DEFAULT_MIN_REFRESH_INTERVAL", "DynamicRESTMapper"]

_log = get_logger(__name__)

DEFAULT_MIN_REFRESH_INTERVAL = 1.0
"""Seconds before a group version's discovery is read again for a missing kind."""


class DynamicRESTMapper:
    """A :class:`~kcontrol.discovery.RESTMapper` over the server's discovery; see the
    module docstring.

    ``source`` is the :class:`~kcontrol.client.ApiClient` to read discovery with, or a
    :class:`~kcontrol.discovery.DiscoveryClient` (``DiscoveryClient(client, legacy=True)``
    to never ask for aggregated discovery). ``clock`` measures ``min_refresh_interval``.
    """

    def __init__(
        self,
        source: RawReader | DiscoveryClient,
        *,
        min_refresh_interval: float = DEFAULT_MIN_REFRESH_INTERVAL,
        clock: Clock | None = None,
    ) -> None:
        if min_refresh_interval < 0:
            raise ValueError("min_refresh_interval must be >= 0")
        self._discovery = source if isinstance(source, DiscoveryClient) else DiscoveryClient(source)
        self._min_refresh_interval = min_refresh_interval
        self._clock: Clock = clock or RealClock()
        self._index = ResourceIndex()
        # Clock time of the last successful read of each group version's resources (a 404
        # counts: the answer was "nothing"). The first full read sets it for every version
        # it read.
        self._read_at: dict[str, float] = {}
        # Group versions whose last read answered 404.
        self._unserved: set[str] = set()
        self._initial_read_done = False
        self._initial_read_lock = asyncio.Lock()
        # One lock per group version ever missed: concurrent misses share one read.
        self._locks: dict[str, asyncio.Lock] = {}

    async def resource_for(self, api_version: str, kind: str) -> Resource:
        """The resource serving ``kind`` at ``api_version``, from the cache or, on a miss,
        after re-reading that group version (rate-limited); :class:`NoKindMatch` if the
        server does not serve it. Read failures raise the client's error."""
        found = self._index.by_kind(api_version, kind)
        if found is not None:
            return found
        detail = await self._refresh(api_version)
        found = self._index.by_kind(api_version, kind)
        if found is None:
            raise NoKindMatch(api_version, kind, detail)
        return found

    async def kind_for(self, api_version: str, plural: str) -> Resource:
        """The resource named ``plural`` at ``api_version``, as :meth:`resource_for` finds
        one; :class:`NoResourceMatch` if the server does not serve it."""
        found = self._index.by_plural(api_version, plural)
        if found is not None:
            return found
        detail = await self._refresh(api_version)
        found = self._index.by_plural(api_version, plural)
        if found is None:
            raise NoResourceMatch(api_version, plural, detail)
        return found

    async def _refresh(self, api_version: str) -> str:
        """Bring ``api_version`` up to date unless it was read within the interval. Returns
        what the error should add when the cache still lacks what was asked for."""
        try:
            split_api_version(api_version)
        except ValueError:
            return "not a valid apiVersion"
        async with self._locks.setdefault(api_version, asyncio.Lock()):
            if not self._initial_read_done:
                await self._read_everything()
            last = self._read_at.get(api_version)
            if last is None or self._clock.now() - last >= self._min_refresh_interval:
                await self._read_group_version(api_version)
        if api_version in self._unserved:
            return "the server does not serve this apiVersion"
        return ""

    async def _read_everything(self) -> None:
        async with self._initial_read_lock:
            if self._initial_read_done:
                return
            found = await self._discovery.server_groups_and_resources()
            now = self._clock.now()
            for api_version, resources in found.resources.items():
                self._index.replace_group_version(api_version, resources)
                self._read_at[api_version] = now
            for api_version, reason in found.failed.items():
                _log.info("group version not discovered", api_version=api_version, reason=reason)
            self._initial_read_done = True
            _log.debug("discovery read", group_versions=len(found.resources))

    async def _read_group_version(self, api_version: str) -> None:
        _log.debug("re-reading group version discovery", api_version=api_version)
        try:
            resources = await self._discovery.server_resources_for(api_version)
        except NotFound:
            resources = ()
            self._unserved.add(api_version)
        else:
            self._unserved.discard(api_version)
        self._index.replace_group_version(api_version, resources)
        self._read_at[api_version] = self._clock.now()
