"""The parameters of a LIST or a WATCH: :class:`ListOptions`, client-go's ``metav1.ListOptions``.

A collection request is a path - the resource and, for a namespaced one, the namespace, kept
apart as in client-go's ``Pods(ns).List(ctx, opts)`` - plus these options, which
:meth:`ListOptions.query` renders as query parameters. The object is frozen: derive one
request's options from another with :func:`dataclasses.replace`, as the pager and the
reflector do (the same selectors, a new resourceVersion, limit or continue token).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["ListOptions"]

_RESOURCE_VERSION_MATCHES: Final = frozenset({"NotOlderThan", "Exact"})
"""The values of ``resourceVersionMatch`` the API server accepts."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOptions:
    """What to list or watch, and from which version; every field is optional.

    Each option applies to a LIST, a WATCH or both, as on the server; :meth:`query` leaves
    out those the verb ignores. Rules that tie options together (``resourceVersionMatch``
    without ``resourceVersion``, ``sendInitialEvents`` without ``NotOlderThan``...) differ
    between a LIST and a WATCH and are the server's to enforce: it answers
    :class:`~kcontrol.errors.Invalid` or :class:`~kcontrol.errors.BadRequest`, and so does
    the fake client. Only an unknown ``resource_version_match``, wrong for every request, is
    refused here.
    """

    label_selector: str | None = None
    """Only objects whose labels match (``app=web,tier!=db``). ``None`` or ``""``: all."""
    field_selector: str | None = None
    """Only objects whose fields match (``spec.nodeName=n1``). ``None`` or ``""``: all."""
    resource_version: str | None = None
    """LIST: ``"0"`` for any recent state (the watch cache), a version for a state no older
    than it (exactly it with ``Exact``); ``None`` or ``""``: the latest (a quorum read).
    WATCH: the events after this version (``None``, ``""`` or ``"0"``: the current objects
    first, as ADDED events)."""
    resource_version_match: str | None = None
    """How ``resource_version`` is read: ``"NotOlderThan"`` or ``"Exact"``."""
    limit: int | None = None
    """LIST: at most this many items per page; ``None`` or ``<= 0``: every item at once."""
    continue_: str | None = None
    """LIST: the previous page's ``metadata.continue``, for the next page."""
    timeout_seconds: int | None = None
    """Ask the server to end the request after this many seconds (for a watch: how long the
    stream lasts)."""
    allow_watch_bookmarks: bool = True
    """WATCH: let the server send BOOKMARK events (resourceVersion progress)."""
    send_initial_events: bool | None = None
    """WATCH: start with the current state as ADDED events and a BOOKMARK that ends it (a
    streaming list; needs ``resource_version_match="NotOlderThan"`` and bookmarks)."""
    shard_selector: str | None = None
    """Only the objects of a shard (``shardSelector``; a CEL ``shardRange(...)`` expression,
    e.g. ``str(shard_selector(0, 3))``; see :mod:`kcontrol.client._shards`). Needs an API
    server with the ``ShardedListAndWatch`` feature gate (v1.36, alpha); others ignore it."""

    def __post_init__(self) -> None:
        match = self.resource_version_match
        if match and match not in _RESOURCE_VERSION_MATCHES:
            raise ValueError(
                f"resource_version_match must be one of {sorted(_RESOURCE_VERSION_MATCHES)}, "
                f"not {match!r}"
            )

    def query(self, *, watch: bool = False) -> dict[str, str]:
        """The query parameters of a LIST with these options, or of a WATCH if ``watch``.

        Options left unset (``None``, ``""``, a ``limit`` of 0) are left out, and so are the
        options of the other verb: ``limit`` and ``continue_`` in a watch,
        ``allow_watch_bookmarks`` and ``send_initial_events`` in a list.
        """
        params: dict[str, str] = {}
        _put(params, "labelSelector", self.label_selector)
        _put(params, "fieldSelector", self.field_selector)
        _put(params, "shardSelector", self.shard_selector)
        if watch:
            params["watch"] = "true"
        _put(params, "resourceVersion", self.resource_version)
        _put(params, "resourceVersionMatch", self.resource_version_match)
        if not watch:
            if self.limit is not None and self.limit > 0:
                params["limit"] = str(self.limit)
            _put(params, "continue", self.continue_)
        if self.timeout_seconds is not None:
            params["timeoutSeconds"] = str(self.timeout_seconds)
        if watch:
            if self.allow_watch_bookmarks:
                params["allowWatchBookmarks"] = "true"
            if self.send_initial_events is not None:
                params["sendInitialEvents"] = "true" if self.send_initial_events else "false"
        return params


def _put(params: dict[str, str], key: str, value: str | None) -> None:
    if value:
        params[key] = value
