"""``metadata.managedFields[*].fieldsV1`` kept as raw JSON: :class:`FieldsV1`.

client-go never decodes server-side apply's field sets: ``metav1.FieldsV1`` holds the raw
bytes. Decoded into dicts they are the largest part of a typical object (measured:
docs/benchmarks.md), yet no controller reads them. kcontrol keeps them raw the same way:
every object the client decodes (single objects, LIST items, watch events) carries each
``fieldsV1`` as a :class:`FieldsV1`, a ``bytes`` subclass holding the exact JSON the server
sent.

The round trip is lossless: :func:`~kcontrol.client._decode.encode_json` writes a
:class:`FieldsV1` back verbatim, so an object read, changed and written back sends the field
sets it received. ``copy.deepcopy``, ``pickle`` and ``==`` work as for ``bytes``. Code that
serializes objects itself should use :func:`~kcontrol.client.encode_json`, or handle the type
(``orjson.Fragment(bytes(value))``, or :meth:`FieldsV1.to_dict`).

How the raw bytes are found without decoding them: msgspec scans the object against a
schema naming only ``metadata.managedFields[*].fieldsV1`` (as ``msgspec.Raw``: a slice of
the input, everything else skipped), each slice is cut out of the document and replaced by
a ``0`` placeholder, orjson decodes the rest, and the slices go back where the placeholders
are. If anything does not line up (a placeholder missing where a field set should be), the
document is decoded whole instead: the result is always what a plain decode gives, with
only the representation of ``fieldsV1`` changed.

Keeping them raw costs a second scan of each object: 2-4 us per object more than a plain
decode (measured on pods and metadata-only items). A reader that drops the field sets anyway
- an informer whose transform removes ``managedFields``, as every informer of a
:class:`~kcontrol.manager.Manager` does - decodes inside :func:`field_sets_dropped`, where
both functions below are a plain ``orjson.loads``: the result differs only in ``fieldsV1``
being dicts, for the moment before the transform removes them.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import orjson

__all__ = [
    "FieldsV1",
    "decode_keeping_fields",
    "decode_watch_frame_keeping_fields",
    "field_sets_dropped",
]


class FieldsV1(bytes):
    """The raw JSON of one ``managedFields`` entry's ``fieldsV1`` (client-go's
    ``metav1.FieldsV1.Raw``). Immutable; compares, hashes and copies as ``bytes``."""

    __slots__ = ()

    def to_dict(self) -> Any:
        """The decoded field set (a fresh object on every call)."""
        return orjson.loads(memoryview(self))

    def __repr__(self) -> str:
        return f"FieldsV1({bytes.__repr__(self)})"


class _Entry(msgspec.Struct):
    fieldsV1: msgspec.Raw = msgspec.Raw()


class _Metadata(msgspec.Struct):
    managedFields: list[_Entry] | None = None


class _Object(msgspec.Struct):
    metadata: _Metadata | None = None


class _Frame(msgspec.Struct):
    object: _Object | None = None


_OBJECT = msgspec.json.Decoder(_Object)
_FRAME = msgspec.json.Decoder(_Frame)
_MARK = b'"fieldsV1"'
_KEY = b'"fieldsV1":'
_PLACEHOLDER = b"0"


_KEEP: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "kcontrol_keep_field_sets", default=True
)


@contextlib.contextmanager
def field_sets_dropped() -> Iterator[None]:
    """Within the block (and the tasks it starts), objects are decoded whole: their reader
    drops ``metadata.managedFields``, so keeping the field sets raw is wasted work."""
    token = _KEEP.set(False)
    try:
        yield
    finally:
        _KEEP.reset(token)


def decode_keeping_fields(data: bytes) -> Any:
    """``orjson.loads(data)``, with each ``metadata.managedFields[*].fieldsV1`` object kept
    as a :class:`FieldsV1` (outside :func:`field_sets_dropped`). Raises
    ``orjson.JSONDecodeError`` on invalid JSON."""
    if not _KEEP.get():
        return orjson.loads(data)
    return _decode(data, _OBJECT.decode, None)


def decode_watch_frame_keeping_fields(data: bytes) -> Any:
    """As :func:`decode_keeping_fields`, for a watch frame ``{"type", "object"}``: the
    field sets of ``object`` are kept raw."""
    if not _KEEP.get():
        return orjson.loads(data)
    return _decode(data, _frame_object, "object")


def _frame_object(data: bytes) -> _Object | None:
    return _FRAME.decode(data).object


def _decode(data: bytes, shape_of: Callable[[bytes], _Object | None], wrapper: str | None) -> Any:
    if _MARK not in data:
        return orjson.loads(data)
    try:
        shape = shape_of(data)
    except msgspec.DecodeError:  # not a document of that shape: no field sets to keep
        return orjson.loads(data)
    return _splice_decode(data, shape, wrapper)


def _splice_decode(data: bytes, shape: _Object | None, wrapper: str | None) -> Any:
    raws = _field_sets(shape)
    if raws is None:
        return orjson.loads(data)
    parts: list[bytes] = []
    position = 0
    for raw in raws:
        if raw is None:
            continue
        # Where the server puts it: right after the next key (no whitespace in its output);
        # a memcmp there is cheaper than searching for the whole field set.
        start = data.find(_KEY, position) + len(_KEY)
        if start < len(_KEY) or not data.startswith(raw, start):
            start = data.find(raw, position)
            if start < 0:
                return orjson.loads(data)
        parts.append(data[position:start])
        parts.append(_PLACEHOLDER)
        position = start + len(raw)
    parts.append(data[position:])
    document = orjson.loads(b"".join(parts))
    if _restore(document, wrapper, raws):
        return document
    return orjson.loads(data)  # a field set was found elsewhere first: decode it whole


def _field_sets(shape: _Object | None) -> list[bytes | None] | None:
    """The raw field set of each managedFields entry (None where there is no JSON object),
    or None if there is nothing to keep."""
    if shape is None or shape.metadata is None or not shape.metadata.managedFields:
        return None
    raws: list[bytes | None] = []
    for entry in shape.metadata.managedFields:
        raw = bytes(entry.fieldsV1)
        raws.append(raw if raw.startswith(b"{") else None)
    return raws if any(raws) else None


def _restore(document: Any, wrapper: str | None, raws: list[bytes | None]) -> bool:
    """Put the field sets back in place of their placeholders; False if one is missing."""
    try:
        target = document[wrapper] if wrapper is not None else document
        entries = target["metadata"]["managedFields"]
    except (KeyError, TypeError):
        return False
    if type(entries) is not list or len(entries) != len(raws):
        return False
    for entry, raw in zip(entries, raws, strict=True):
        if raw is None:
            continue
        if type(entry) is not dict:
            return False
        value = entry.get("fieldsV1")
        if type(value) is not int or value != 0:
            return False
        entry["fieldsV1"] = FieldsV1(raw)
    return True
