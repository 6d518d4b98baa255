"""Writing a StatefulSet's status: a port of ``stateful_set_status_updater.go``.

The new status replaces the set's whole ``status`` (``replicas/status``'s update carries the
set's resourceVersion); a conflict is retried with client-go's ``DefaultRetry`` on the copy
the set cache holds by then.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcontrol.client import STATEFULSETS, Object, Writer, deep_copy
from kcontrol.clock import Clock
from kcontrol.errors import NotFound
from kcontrol.informers import Lister
from kcontrol.logging import get_logger
from kcontrol.retry import DEFAULT_RETRY, retry_on_conflict

from ._fields import name, namespace

__all__ = ["StatusUpdater"]

_log = get_logger(__name__)


class StatusUpdater:
    """Writes ``statefulsets/status`` through ``client``, refreshing from ``set_lister``
    between conflicting attempts (paced on ``clock``)."""

    __slots__ = ("_client", "_clock", "_sets")

    def __init__(self, client: Writer, set_lister: Lister, *, clock: Clock | None = None) -> None:
        self._client = client
        self._sets = set_lister
        self._clock = clock

    async def update_status(self, set_: Mapping[str, Any], status: Mapping[str, Any]) -> Object:
        """Write ``status`` as ``set_``'s status; returns the set as stored. Raises the last
        failure (a Conflict once the attempts run out)."""
        current: Object = deep_copy(dict(set_))

        async def attempt() -> Object:
            nonlocal current
            current["status"] = deep_copy(dict(status))
            try:
                return await self._client.update_status(
                    STATEFULSETS, current, namespace=namespace(set_)
                )
            except Exception:
                try:
                    current = deep_copy(self._sets.get(namespace(set_), name(set_)))
                except NotFound as missing:
                    _log.info("error getting StatefulSet", set=name(set_), error=str(missing))
                raise

        return await retry_on_conflict(DEFAULT_RETRY, attempt, clock=self._clock)
