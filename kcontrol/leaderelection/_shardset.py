"""The shards a replica of a sharded election holds: the write gate they open, the
selector its informers use, and how the API server is found to filter by shard.

The namespaces' hash (:func:`~kcontrol.client.shard_of`) is cut into ``N`` equal ranges, shard
``k`` held through the Lease ``<--leader-elect-resource-name>-shard-<k>-of-<N>``
(:class:`~kcontrol.leaderelection.ShardedElection`). :class:`ShardSet` is the
bookkeeping between that election and the controllers:

- the election runs :meth:`ShardSet.work` for each shard it wins: the shard is *held* (its
  writes pass :meth:`ShardSet.allows`) until the work is cancelled, and the work returns only
  once the controllers that ran over that shard have stopped (their syncs drained, as a
  single leader drains on SIGTERM) - so the shard's Lease is given up after its last write,
  the single Lease's guarantee, per shard;
- the manager runs one set of controllers over the held shards (their informers select the
  union of the held ranges) and builds it anew when the held set changes
  (:meth:`ShardSet.changes`, :meth:`ShardSet.set_running`); membership changes are rare, and
  one controller set keeps the Prometheus metrics single.

Writes: :meth:`ShardSet.allows` is the write gate's check. A write to namespace ``ns`` passes
while the Lease of ``shard_of(ns, N)`` is held and trusted on this process's clock
(:meth:`~kcontrol.leaderelection.LeaderElector.holds_lease`); a cluster-scoped object (``""``)
belongs to the shard ``""`` hashes into, as the API server's shard selector puts it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge

from kcontrol._registry import PerRegistry
from kcontrol.client import (
    HASH_SPACE,
    LEASES,
    SHARD_BY_NAMESPACE,
    Client,
    ListOptions,
    ShardRange,
    ShardSelector,
    shard_hash,
    shard_of,
    shards_selector,
)
from kcontrol.errors import KcontrolError
from kcontrol.leaderelection._elector import LeaderElector
from kcontrol.logging import get_logger

__all__ = ["ShardSet", "server_filters_shards"]

_log = get_logger(__name__)

_NAMESPACE_CACHE = 100_000
"""How many namespaces' shard indexes :meth:`ShardSet.allows` remembers (then it starts over)."""


class _Families:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.shards = Gauge(
            "kcontrol_manager_shards", "The shards the namespaces are cut into.", registry=registry
        )
        self.held = Gauge(
            "kcontrol_manager_shard_held",
            "1 for each shard this replica holds and runs controllers over, else 0.",
            ["shard"],
            registry=registry,
        )
        self.filtering = Gauge(
            "kcontrol_manager_shard_filtering",
            "1 for how objects are split: 'server' (the API server's shard selector) or "
            "'client' (every object arrives, the informers keep their shards').",
            ["mode"],
            registry=registry,
        )
        self.rebuilds = Counter(
            "kcontrol_manager_shard_rebuilds",
            "How often the controllers were built anew for a changed set of shards.",
            registry=registry,
        )


_families = PerRegistry(_Families).get


class ShardSet:
    """The shards of ``count`` this replica holds (module docstring). ``registry`` receives
    ``kcontrol_manager_shards``, ``kcontrol_manager_shard_held{shard}``,
    ``kcontrol_manager_shard_filtering{mode}`` and
    ``kcontrol_manager_shard_rebuilds_total``."""

    def __init__(self, count: int, registry: CollectorRegistry | None = None) -> None:
        if count < 1:
            raise ValueError(f"there must be at least one shard, not {count}")
        self.count = count
        # The electors of the shards whose writes are open (held, or given back and still
        # covered by running controllers), and the shards the controllers should cover.
        self._electors: dict[int, LeaderElector] = {}
        self._wanted: set[int] = set()
        self._running: frozenset[int] = frozenset()
        self._changed = asyncio.Event()
        self._running_changed = asyncio.Condition()
        self._index_of: dict[str, int] = {}
        self.filtering: str | None = None
        """``server`` (the API server sends each shard only), ``client`` (it sends all, the
        informers filter) or ``None`` before the first check."""
        families = _families(registry if registry is not None else CollectorRegistry())
        families.shards.set(count)
        self._held_metric = families.held
        for index in range(count):
            self._held_metric.labels(str(index)).set(0)
        self._filtering_metric = families.filtering
        self._rebuilds = families.rebuilds

    # -- the write gate ----------------------------------------------------------------------

    def index_of(self, namespace: str) -> int:
        """The shard of the objects in ``namespace`` (``""``: cluster-scoped ones)."""
        index = self._index_of.get(namespace)
        if index is None:
            if len(self._index_of) >= _NAMESPACE_CACHE:
                self._index_of.clear()
            index = self._index_of[namespace] = shard_of(namespace, self.count)
        return index

    def allows(self, namespace: str) -> bool:
        """The write gate: may an object in ``namespace`` be written now?"""
        elector = self._electors.get(self.index_of(namespace))
        return elector is not None and elector.holds_lease()

    def leading(self) -> bool:
        """Whether any shard the running controllers cover is still trusted: their syncs'
        guard (a replica paused past its Leases starts no sync)."""
        return any(
            elector.holds_lease()
            for index, elector in self._electors.items()
            if index in self._running
        )

    # -- the election's side -----------------------------------------------------------------

    async def work(self, index: int, elector: LeaderElector) -> None:
        """Hold shard ``index`` (guarded by ``elector``) until cancelled; then return once no
        running controller covers it any more (module docstring). Its writes stay open
        while the controllers covering it drain their syncs - the Lease is still held, and
        the gate still checks that it is trusted - and close when they have stopped."""
        self._electors[index] = elector
        self._wanted.add(index)
        self._held_metric.labels(str(index)).set(1)
        self._changed.set()
        try:
            await asyncio.Event().wait()
        finally:
            self._wanted.discard(index)
            self._held_metric.labels(str(index)).set(0)
            self._changed.set()
            try:
                async with self._running_changed:
                    await self._running_changed.wait_for(lambda: index not in self._running)
            finally:
                del self._electors[index]

    # -- the controllers' side ---------------------------------------------------------------

    @property
    def held(self) -> frozenset[int]:
        """The shards the controllers should cover: held, and not being given back."""
        return frozenset(self._wanted)

    @property
    def running(self) -> frozenset[int]:
        return self._running

    async def changes(self, quiet: float) -> frozenset[int]:
        """Wait for the held set to change and return it: at once when a shard the
        controllers cover is being given back (its Lease waits for them), else after
        ``quiet`` seconds without another change (the shards won in one round come
        together)."""
        await self._changed.wait()
        self._changed.clear()
        while not self._running - self._wanted:
            try:
                await asyncio.wait_for(self._changed.wait(), quiet)
            except TimeoutError:
                break
            self._changed.clear()
        return self.held

    async def set_running(self, shards: Iterable[int]) -> None:
        """Record which shards the controllers now cover (none while they are rebuilt)."""
        running = frozenset(shards)
        if running:
            self._rebuilds.inc()
        async with self._running_changed:
            self._running = running
            self._running_changed.notify_all()

    def selector(self, shards: Iterable[int]) -> ShardSelector:
        """The informers' selector for ``shards`` (neighbours merged)."""
        return shards_selector(shards, self.count, key=SHARD_BY_NAMESPACE)

    def set_filtering(self, mode: str) -> None:
        self.filtering = mode
        for known in ("server", "client"):
            self._filtering_metric.labels(known).set(1 if known == mode else 0)


async def server_filters_shards(client: Client, namespace: str, label_selector: str) -> bool:
    """Whether the API server applies shard selectors (the ``ShardedListAndWatch`` feature gate
    is on), judged by one LIST of the Leases ``label_selector`` selects in ``namespace`` - at
    least one must exist, e.g. this replica's member Lease - under a selector whose range
    leaves ``namespace`` out: a server that filters returns none, one that ignores the selector
    returns them. A server that refuses the request counts as not filtering."""
    h = shard_hash(namespace)
    start, end = (0, h) if h > 0 else (1, HASH_SPACE)
    outside = ShardRange(SHARD_BY_NAMESPACE, start, end)
    options = ListOptions(
        label_selector=label_selector, shard_selector=str(ShardSelector((outside,))), limit=1
    )
    try:
        page = await client.list(LEASES, namespace=namespace, options=options)
    except KcontrolError as error:
        _log.warning("the API server refused a shard selector", error=str(error))
        return False
    return not page.get("items")
