"""JSON in and out of the wire format, as plain ``dict``s (no generated models).

Plain dicts keep every field, so objects can be written back without loss; typed structs
would be cheaper only because they drop what they do not declare. Most of a big LIST's
decode time would be the cyclic GC running over and over as the heap grows, hence the pause
below. Interning repeated string values is left to the informers, which do it as objects
arrive (``ReflectorOptions.intern_strings``); plain client calls do not.

One part of every object is not decoded: ``metadata.managedFields[*].fieldsV1``, server-side
apply's field sets, stays the raw JSON the server sent, as a
:class:`~kcontrol.client.FieldsV1` (``bytes``), as client-go keeps it; :func:`encode_json`
writes it back byte for byte (:mod:`kcontrol.client._fields`).

:func:`decode_list` serves the informers' LISTs: the list is split into raw items first
(msgspec, no copy, no decode), then each item is decoded and passed to a hook (the
informer's transform, e.g. dropping ``managedFields``) before the next, so the untransformed
objects are never all alive at once, and a cache keeps no holes that a whole-list decode
would leave behind in CPython's allocator pools.

A reflector whose transform keeps a few fields of each object may have its LISTs' items
decoded by a decoder of its own (:func:`list_items_decoded_by`, declared with
:func:`kcontrol.informers.decoding_list_items_with`): the fields the transform drops are
then never built. Everything else is decoded whole.

Watch bodies are newline-delimited JSON; :class:`LineSplitter` cuts them into lines of any
length (a reader's line limit must not let one big object break a watch).

How the decoder was chosen, and what each of these choices saves, measured:
docs/benchmarks.md.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import msgspec
import orjson

from kcontrol._gc import gc_paused
from kcontrol.client._fields import FieldsV1, decode_keeping_fields

__all__ = [
    "ItemDecoder",
    "ItemHook",
    "LineSplitter",
    "ListDecoder",
    "decode_json",
    "decode_list",
    "encode_json",
    "list_items_decoded_by",
]

ItemHook = Callable[[dict[str, Any]], dict[str, Any]]
"""Called with each decoded list item; returns the item to keep (the same or another)."""

ItemDecoder = Callable[[bytes], Any]
"""Decodes one list item's JSON (see :func:`list_items_decoded_by`)."""

_ITEM_DECODER: contextvars.ContextVar[ItemDecoder | None] = contextvars.ContextVar(
    "kcontrol_list_item_decoder", default=None
)


@contextlib.contextmanager
def list_items_decoded_by(decoder: ItemDecoder) -> Iterator[None]:
    """Within the block (and the tasks it starts), the items of LIST bodies are decoded by
    ``decoder`` instead of whole: bytes of one item's JSON object -> the object its item
    hook is given (for instance one holding only the fields a transform keeps). It must
    raise :class:`ValueError` when the bytes are not one whole JSON value (the
    :class:`ListDecoder` tries candidate item ends). The list itself, and every other body
    (a GET, a watch frame), is decoded as always."""
    token = _ITEM_DECODER.set(decoder)
    try:
        yield
    finally:
        _ITEM_DECODER.reset(token)


def _item_decoder() -> ItemDecoder:
    return _ITEM_DECODER.get() or decode_keeping_fields


GC_PAUSE_THRESHOLD = 256 * 1024
"""Bodies at least this large are decoded with the cyclic GC paused (see :func:`decode_json`)."""


def decode_json(data: bytes | bytearray | memoryview) -> Any:
    """Decode one JSON document into dicts, lists, str, int, float, bool and None.

    Decoding a large LIST creates hundreds of thousands of containers, and the cyclic garbage
    collector, triggered by allocation counts, runs many times in the middle - including
    full collections as the heap grows - although fresh JSON holds no cycles to free. Big
    bodies are therefore decoded with the collector paused for the (synchronous) call; the
    young-generation pass it defers costs far less than the collections it avoids.

    ``metadata.managedFields[*].fieldsV1`` of an object is kept raw, as a
    :class:`~kcontrol.client.FieldsV1` (see :mod:`kcontrol.client._fields`).
    """
    data = bytes(data)
    if len(data) < GC_PAUSE_THRESHOLD:
        return decode_keeping_fields(data)
    with gc_paused():
        return decode_keeping_fields(data)


class _ListEnvelope(msgspec.Struct, omit_defaults=True):
    """A ``*List`` object with its items left undecoded (``msgspec.Raw`` slices of the body).
    A list has no other top-level fields than these four."""

    apiVersion: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] | None = None
    items: list[msgspec.Raw] | None = None


_ENVELOPE = msgspec.json.Decoder(_ListEnvelope)


def decode_list(
    data: bytes | bytearray | memoryview, item_hook: ItemHook, *, first_index: int = 0
) -> dict[str, Any]:
    """Decode a LIST body, passing each item through ``item_hook`` as soon as it is decoded.
    Items keep their ``fieldsV1`` raw, as :func:`decode_json` does.

    The result has the shape :func:`decode_json` would give (``items`` is always a list).
    Raises :class:`ValueError` if ``data`` is not JSON or not a list object. The cyclic GC
    is paused throughout (see :mod:`kcontrol._gc`); ``item_hook`` must not rely on it.
    ``first_index`` numbers the items in error messages (a :class:`ListDecoder` decoded the
    ones before).
    """
    with gc_paused():
        try:
            envelope = _ENVELOPE.decode(data)
        except msgspec.DecodeError as e:  # ValidationError is a subclass
            raise ValueError(f"not a list object: {e}") from e
        items: list[dict[str, Any]] = []
        decode_item = _item_decoder()
        for index, raw in enumerate(envelope.items or (), first_index):
            item = decode_item(bytes(raw))
            if not isinstance(item, dict):
                raise ValueError(f"list item {index} is not an object")
            items.append(item_hook(item))
    result: dict[str, Any] = {}
    if envelope.apiVersion is not None:
        result["apiVersion"] = envelope.apiVersion
    if envelope.kind is not None:
        result["kind"] = envelope.kind
    result["metadata"] = envelope.metadata or {}
    result["items"] = items
    return result


_ITEMS = b'"items":['
_MAX_ENVELOPE_HEAD = 64 * 1024
MAX_FALSE_ENDS = 8
"""Candidate item ends that turn out to close a nested element, in one item, after which a
:class:`ListDecoder` leaves the rest of the body to :meth:`ListDecoder.finish`: each costs a
decode attempt of the item so far, and an item embedding a long list of objects that start
with the same key (a custom resource holding manifests) would otherwise cost its size times
their number."""


class ListDecoder:
    """:func:`decode_list` as the body arrives: :meth:`feed` it the body's pieces in order,
    then :meth:`finish` returns exactly what :func:`decode_list` returns for the whole body.

    An item is decoded (and passed to ``item_hook``) as soon as the bytes after it show
    where it ends, so a LIST is mostly decoded by the time its last byte arrives: decoding
    overlaps with the server still encoding the rest.

    Where an item ends: the API server writes a list compactly, every item starting with
    the same first key (``metadata`` in a built-in type's list, ``apiVersion`` in a custom
    resource's, whose keys are sorted), so ``},{"<that key>":`` follows every item but the
    last. The same bytes can also close an element of a list nested in an item (a
    StatefulSet's ``volumeClaimTemplates``); such a cut leaves the item's brackets unclosed,
    so it does not decode and the next candidate is tried - up to :data:`MAX_FALSE_ENDS` in one
    item, after which the rest of the body waits for :meth:`finish`. Whatever is not decoded
    that way (the last item, or a body written otherwise) is decoded by :meth:`finish` with
    the envelope.
    """

    __slots__ = (
        "_buf",
        "_delimiter",
        "_false_ends",
        "_fed",
        "_head",
        "_hook",
        "_items",
        "_scan",
        "_stopped",
    )

    def __init__(self, item_hook: ItemHook) -> None:
        self._hook = item_hook
        self._buf = bytearray()  # the body from the first item not yet decoded on
        self._head: bytes | None = None  # the envelope up to '"items":', once seen
        self._delimiter: bytes | None = None
        self._scan = 0  # where in _buf the next delimiter may start
        self._false_ends = 0  # candidate ends of the current item that were not its end
        self._items: list[dict[str, Any]] = []
        self._fed = 0
        self._stopped = False  # the body is not written as expected: all is left to finish

    @property
    def fed(self) -> int:
        """The number of bytes fed so far."""
        return self._fed

    def feed(self, data: bytes) -> None:
        """Take the next piece of the body; decodes the items it completes. Raises
        :class:`ValueError` for an item that is not an object."""
        buf = self._buf
        buf += data
        self._fed += len(data)
        if self._stopped:
            return
        if self._head is None:
            start = buf.find(_ITEMS)
            if start < 0:
                if len(buf) > _MAX_ENVELOPE_HEAD:
                    self._stopped = True
                return
            self._head = bytes(buf[: start + len(_ITEMS) - 1])
            del buf[: start + len(_ITEMS)]
        if self._delimiter is None:
            if len(buf) < 2:
                return
            if buf[:2] != b'{"':  # no item, or not compact: left to finish()
                self._stopped = True
                return
            end = buf.find(b'"', 2)
            if end < 0:
                return
            self._delimiter = b'},{"' + bytes(buf[2:end]) + b'":'
        self._decode_complete(buf, self._delimiter)

    def _decode_complete(self, buf: bytearray, delimiter: bytes) -> None:
        hook, items, decode_item = self._hook, self._items, _item_decoder()
        with gc_paused():
            while True:
                at = buf.find(delimiter, self._scan)
                if at < 0:
                    self._scan = max(0, len(buf) - len(delimiter) + 1)
                    return
                try:
                    item = decode_item(bytes(buf[: at + 1]))
                except ValueError:  # the end of a nested list's element, not of the item
                    self._scan = at + 1
                    self._false_ends += 1
                    if self._false_ends >= MAX_FALSE_ENDS:
                        self._stopped = True
                        return
                    continue
                if not isinstance(item, dict):
                    raise ValueError(f"list item {len(items)} is not an object")
                items.append(hook(item))
                del buf[: at + 2]
                self._scan = 0
                self._false_ends = 0

    def finish(self) -> dict[str, Any]:
        """The decoded list (:func:`decode_list`'s result); raises :class:`ValueError` if
        the body is not JSON or not a list object."""
        rest = bytes(self._buf) if self._head is None else self._head + b"[" + self._buf
        self._buf = bytearray()
        result = decode_list(rest, self._hook, first_index=len(self._items))
        result["items"] = self._items + result["items"] if self._items else result["items"]
        self._items = []
        return result


def _default(value: Any) -> Any:
    if isinstance(value, FieldsV1):
        return orjson.Fragment(bytes(value))
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


_DUMPS_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NAIVE_UTC


def encode_json(value: Any) -> bytes:
    """Encode a request body. Any ``Mapping`` is accepted; ``datetime`` becomes RFC 3339
    (naive values are taken as UTC), as the API's ``Time``/``MicroTime`` fields expect; a
    :class:`~kcontrol.client.FieldsV1` is written as the raw JSON it holds."""
    return orjson.dumps(value, default=_default, option=_DUMPS_OPTIONS)


class LineSplitter:
    """Cuts a byte stream into ``\\n``-terminated lines, whatever the chunk boundaries.

    :meth:`feed` returns the complete lines so far (without the newline, empty lines
    skipped); the unfinished tail is kept until a later chunk completes it. No line length
    limit: a line is as long as the object the server sent.
    """

    __slots__ = ("_tail",)

    def __init__(self) -> None:
        self._tail = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if self._tail:
                self._tail += chunk[start:end]
                line = bytes(self._tail)
                self._tail.clear()
            else:
                line = chunk[start:end]
            if line.strip():
                lines.append(line)
            start = end + 1
        if start < len(chunk):
            self._tail += chunk[start:]
        return lines

    def pending(self) -> int:
        """Bytes of an unfinished line held back."""
        return len(self._tail)

    def flush(self) -> bytes | None:
        """At end of stream: the unterminated last line, if it holds anything."""
        tail = bytes(self._tail)
        self._tail.clear()
        return tail if tail.strip() else None
