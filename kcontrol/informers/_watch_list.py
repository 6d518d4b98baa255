"""The streaming list ("watch-list", KEP-3157): a reflector's initial state from a watch.

Instead of a LIST, the reflector opens a watch with :data:`REQUEST_OPTIONS`
(``sendInitialEvents=true``, ``resourceVersionMatch=NotOlderThan``). The server sends the
current state as synthetic ADDED events, then a BOOKMARK annotated
``k8s.io/initial-events-end: "true"`` that carries the resourceVersion of that state; after
it the same stream goes on as an ordinary watch. :class:`InitialEvents` is the first part of
such a stream: it folds the events into a state until that bookmark, and then replaces a
store's content with it.

GC policy (:class:`kcontrol._gc.GcPause`): the cyclic GC is paused from the first initial
event until the store update is done, as while a LIST decodes, and the pause lapses whenever
the stream delivers nothing for :data:`GC_PAUSE_LEASE` seconds (waiting for the server is
not decoding). The pause belongs to the :class:`InitialEvents`: entering it takes nothing,
leaving it gives back whatever is still held - on the end bookmark, on a failure, or on
cancellation alike. Only a reflector's first sync may settle the pause with ``gc.freeze()``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Final, Self

from kcontrol._gc import GcPause
from kcontrol.client import Object, WatchEvent
from kcontrol.clock import Clock
from kcontrol.informers._keys import meta_namespace_key_func

__all__ = [
    "GC_PAUSE_LEASE",
    "INITIAL_EVENTS_END_ANNOTATION",
    "REQUEST_OPTIONS",
    "InitialEvents",
]

INITIAL_EVENTS_END_ANNOTATION: Final = "k8s.io/initial-events-end"
GC_PAUSE_LEASE: Final = 1.0
"""A streaming list's GC pause lapses after this many seconds without an initial event."""
REQUEST_OPTIONS: Final[dict[str, Any]] = {
    "send_initial_events": True,
    "resource_version_match": "NotOlderThan",
}
"""The :class:`~kcontrol.client.ListOptions` fields that make a watch a streaming list (with
``allow_watch_bookmarks``), for :func:`dataclasses.replace`."""

ObjectTransform = Callable[[str, Object], Object | None]
"""The reflector's per-object transform, given the event type; ``None`` drops the object."""
ReplaceFunc = Callable[[list[Object], str], Awaitable[None]]
"""A store's ``replace(items, resource_version)``."""


class InitialEvents:
    """The initial state of one streaming list, collected from its events.

    Use it as a ``with`` block around reading the stream (it owns the GC pause, see the
    module docstring). Feed it each event with :meth:`add` until that returns True - the end
    bookmark - then call :meth:`replace` once; events after that are ordinary watch events,
    not for it. Objects go through ``transform`` as they arrive (bookmarks do not); a
    DELETED event removes an object collected earlier.
    """

    __slots__ = ("_objects", "_pause", "_resource_version", "_transform")

    def __init__(self, transform: ObjectTransform, *, clock: Clock) -> None:
        self._transform = transform
        self._pause = GcPause(lease=GC_PAUSE_LEASE, clock=clock)
        self._objects: dict[str, Object] = {}
        # The end bookmark's resourceVersion; None until it has arrived.
        self._resource_version: str | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._pause.release()  # without settling: a no-op once replace() finished

    def __len__(self) -> int:
        return len(self._objects)

    def add(self, event: WatchEvent) -> bool:
        """Fold one event into the state; True when it is the bookmark that ends it."""
        self._pause.hold()
        kind, obj = event
        if kind == "BOOKMARK":
            annotations = (obj.get("metadata") or {}).get("annotations") or {}
            if annotations.get(INITIAL_EVENTS_END_ANNOTATION) != "true":
                return False
            self._resource_version = (obj.get("metadata") or {}).get("resourceVersion", "")
            return True
        key = meta_namespace_key_func(obj)
        if kind == "DELETED":
            self._objects.pop(key, None)
            return False
        transformed = self._transform(kind, obj)
        if transformed is not None:
            self._objects[key] = transformed
        return False

    async def replace(self, replace: ReplaceFunc, *, freeze: bool) -> tuple[int, str]:
        """Hand the state to ``replace`` (a store's), then settle the GC pause (with
        ``gc.freeze()`` if ``freeze`` and the process allows it); returns the number of
        objects and the resourceVersion they were stored at. Only after :meth:`add`
        returned True."""
        if self._resource_version is None:
            raise RuntimeError("the initial events have not ended yet")
        items = list(self._objects.values())
        self._objects = {}
        self._pause.hold(lease=False)  # storing is CPU work too
        await replace(items, self._resource_version)
        self._pause.finish(freeze=freeze)
        return len(items), self._resource_version
