"""A reflector's check of its shard: the objects a server sends under a shard selector are
verified to belong to the shard, and those that do not are dropped.

An API server with the ``ShardedListAndWatch`` feature gate (v1.36, alpha) sends only the
shard's objects, and every check passes. One without it ignores the ``shardSelector``
parameter and sends the whole collection: the first object outside the shard is logged (as a
warning the first time in the process - every replica still receives every event - and at
debug level for each informer after that) and from then on the shard is applied here, with
the server's hash, so the cache holds the same objects either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcontrol.client import Object, ShardSelector
from kcontrol.logging import BoundLogger

if TYPE_CHECKING:
    from kcontrol.informers._reflector import ReflectorStore

__all__ = ["ShardFilter"]

_warned = False
"""Whether a ShardFilter of this process has warned already (the others log at debug level:
a sharded manager builds its informers anew whenever its shards change)."""


class ShardFilter:
    """A :class:`~kcontrol.informers._reflector.ReflectorStore` in front of ``store`` that
    keeps only ``shard``'s objects (module docstring). ``local`` tells whether an object
    outside the shard has arrived (the server does not filter)."""

    def __init__(
        self,
        store: ReflectorStore,
        shard: ShardSelector,
        log: BoundLogger,
    ) -> None:
        self._store = store
        self._shard = shard
        self._log = log
        self.local = False

    def _keep(self, obj: Object) -> bool:
        if self._shard.matches(obj):
            return True
        if not self.local:
            self.local = True
            global _warned  # noqa: PLW0603 - one warning per process, see above
            log = self._log.debug if _warned else self._log.warning
            _warned = True
            log(
                "the API server does not filter by shard (its ShardedListAndWatch feature gate "
                "is off, or it is older than v1.36): every object still arrives, and the "
                "shard is applied here",
                shard=str(self._shard),
            )
        return False

    def add(self, obj: Object) -> None:
        if self._keep(obj):
            self._store.add(obj)

    def update(self, obj: Object) -> None:
        if self._keep(obj):
            self._store.update(obj)

    def delete(self, obj: Object) -> None:
        if self._keep(obj):
            self._store.delete(obj)

    async def replace(self, items: list[Object], resource_version: str) -> None:
        await self._store.replace([i for i in items if self._keep(i)], resource_version)
