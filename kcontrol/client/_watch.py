"""The event iterator of one open watch: newline-delimited ``{"type", "object"}`` JSON.

Mirrors client-go's ``watch.StreamWatcher`` over a ``json`` framer: events come in server
order; an ``ERROR`` event carries a ``metav1.Status`` and becomes the matching
:class:`~kcontrol.errors.ApiError` (410 Gone / ``Expired`` -> :class:`~kcontrol.errors.Gone`);
a broken connection or a garbled frame becomes :class:`~kcontrol.errors.ApiConnectionError`;
the server closing the stream (its ``timeoutSeconds`` elapsed) ends the iteration.
"""

from __future__ import annotations

import collections
from typing import Any

import orjson

from kcontrol.client._decode import LineSplitter
from kcontrol.client._fields import decode_watch_frame_keeping_fields
from kcontrol.client._http import HttpProtocolError, Response
from kcontrol.client._interface import WatchEvent
from kcontrol.errors import ApiConnectionError, api_error_from_status

__all__ = ["EVENT_TYPES", "WatchStream", "parse_event"]

EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})


def parse_event(line: bytes) -> WatchEvent:
    """Decode one watch frame (the object's ``fieldsV1`` kept raw, see
    :mod:`kcontrol.client._fields`); raise the mapped error for ``ERROR`` frames."""
    try:
        frame: Any = decode_watch_frame_keeping_fields(line)
    except orjson.JSONDecodeError as e:
        raise ApiConnectionError(f"malformed watch event ({len(line)} bytes)") from e
    if not isinstance(frame, dict):
        raise ApiConnectionError("malformed watch event: not a JSON object")
    event_type = frame.get("type")
    obj = frame.get("object")
    if event_type == "ERROR":
        status = obj if isinstance(obj, dict) else None
        code = status.get("code") if status is not None else None
        raise api_error_from_status(code if isinstance(code, int) else 500, status)
    if event_type not in EVENT_TYPES or not isinstance(obj, dict):
        raise ApiConnectionError(f"malformed watch event of type {event_type!r}")
    return WatchEvent(event_type, obj)


class WatchStream:
    """``AsyncIterator[WatchEvent]`` over a watch response; see the module docstring.

    The response belongs to whoever opened it (the ``watch()`` context manager closes it);
    this object only reads. After it raised or ended, it stays ended.
    """

    __slots__ = ("_done", "_lines", "_pending", "_response")

    def __init__(self, response: Response) -> None:
        self._response = response
        self._lines = LineSplitter()
        self._pending: collections.deque[bytes] = collections.deque()
        self._done = False

    def __aiter__(self) -> WatchStream:
        return self

    async def __anext__(self) -> WatchEvent:
        while not self._pending:
            if self._done:
                raise StopAsyncIteration
            await self._read()
        try:
            return parse_event(self._pending.popleft())
        except BaseException:
            self._finish()
            raise

    async def _read(self) -> None:
        try:
            chunk = await self._response.read_chunk()
        except (HttpProtocolError, OSError) as e:
            self._finish()
            raise ApiConnectionError(f"watch stream broke: {e!r}") from e
        except BaseException:
            self._finish()
            raise
        if chunk:
            self._pending.extend(self._lines.feed(chunk))
            return
        self._done = True  # clean end of stream: the server's timeoutSeconds elapsed
        tail = self._lines.flush()
        if tail is not None:
            self._pending.append(tail)  # parse_event rejects it if the frame was cut short

    def _finish(self) -> None:
        self._done = True
        self._pending.clear()
