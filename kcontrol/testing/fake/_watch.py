"""One open watch on the fake API server: a queue the tracker feeds, iterated by the client.

The tracker offers every change of the watched resource to :meth:`Watcher.offer`, which filters
it the way the API server's watch cache does: a modification that moves an object into the
selection arrives as ADDED, one that moves it out as DELETED. Tests end streams with
:meth:`Watcher.close` (the server timing the watch out) or :meth:`Watcher.fail` (an error
mid-stream).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Final

from kcontrol.client import Object, Resource, WatchEvent
from kcontrol.client._decode import decode_json, encode_json
from kcontrol.testing.fake._filter import ObjectFilter

__all__ = ["ScriptedWatch", "Watcher"]

ADDED: Final = "ADDED"
MODIFIED: Final = "MODIFIED"
DELETED: Final = "DELETED"
BOOKMARK: Final = "BOOKMARK"

_END: Final = object()


class Watcher:
    """An open watch. Iterate it for events; it ends after :meth:`close`, raises the error
    given to :meth:`fail`, and is unregistered from the tracker by :meth:`stop`.

    Events are deep copies, one per watcher, so consumers may mutate them freely.
    """

    def __init__(
        self,
        resource: Resource,
        selection: ObjectFilter,
        *,
        bookmarks: bool,
        on_stop: Callable[[Watcher], None],
    ) -> None:
        self.resource = resource
        self.selection = selection
        self.bookmarks = bookmarks
        self._on_stop = on_stop
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        # Invariant: once _ended, nothing more is queued and iteration only stops.
        self._ended = False
        self._stopped = False

    def offer(self, event_type: str, obj: Object, old: Object | None = None) -> None:
        """Deliver a change if this watch selects it (``old`` is the previous state of a
        MODIFIED object)."""
        if self._ended:
            return
        now = self.selection.matches(obj)
        if event_type == MODIFIED:
            before = old is not None and self.selection.matches(old)
            if now and not before:
                event_type = ADDED
            elif before and not now:
                event_type, now = DELETED, True
        if now:
            self._queue.put_nowait(WatchEvent(event_type, _copy(obj)))

    def bookmark(self, resource_version: str, annotations: dict[str, str] | None = None) -> None:
        """Send a BOOKMARK at ``resource_version``, if the client allowed bookmarks."""
        if self._ended or not self.bookmarks:
            return
        metadata: Object = {"resourceVersion": resource_version}
        if annotations:
            metadata["annotations"] = dict(annotations)
        obj = {"apiVersion": self.resource.api_version, "kind": self.resource.kind}
        self._queue.put_nowait(WatchEvent(BOOKMARK, {**obj, "metadata": metadata}))

    def fail(self, error: BaseException) -> None:
        """End the stream with ``error``, raised to the consumer after queued events."""
        if not self._ended:
            self._ended = True
            self._queue.put_nowait(error)

    def close(self) -> None:
        """End the stream normally after the queued events, as a server timeout does."""
        if not self._ended:
            self._ended = True
            self._queue.put_nowait(_END)

    def stop(self) -> None:
        """Close and unregister; called when the client leaves the ``watch`` block."""
        self.close()
        if not self._stopped:
            self._stopped = True
            self._on_stop(self)

    @property
    def ended(self) -> bool:
        """True once the stream has been closed or failed (events may still be queued)."""
        return self._ended

    def __aiter__(self) -> Watcher:
        return self

    async def __anext__(self) -> WatchEvent:
        if self._stopped and self._queue.empty():
            raise StopAsyncIteration
        item = await self._queue.get()
        if isinstance(item, WatchEvent):
            return item
        self._queue.put_nowait(_END)  # later calls stop at once
        if isinstance(item, BaseException):
            raise item
        raise StopAsyncIteration


class ScriptedWatch:
    """A watch stream a reactor scripted: its events (exceptions are raised), then the end."""

    def __init__(self, items: Iterable[WatchEvent | BaseException]) -> None:
        self._items = iter(list(items))

    def __aiter__(self) -> ScriptedWatch:
        return self

    async def __anext__(self) -> WatchEvent:
        await asyncio.sleep(0)
        item = next(self._items, None)
        if item is None:
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            self._items = iter(())
            raise item
        return WatchEvent(item.type, _copy(item.object))


def _copy(obj: Object) -> Object:
    result: Object = decode_json(encode_json(obj))
    return result
