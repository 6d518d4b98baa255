"""Shard selectors: a LIST or WATCH that carries only a share of a collection, by a hash of
each object's namespace or UID (Kubernetes v1.36, the alpha ``ShardedListAndWatch`` feature
gate, KEP-5866).

The API server takes a CEL expression in ``ListOptions.shard_selector``
(``shardSelector``)::

    shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')

``shardRange(key, start, end)`` holds an object whose key - ``object.metadata.namespace`` or
``object.metadata.uid`` - hashes (64-bit FNV-1a of its UTF-8 bytes) into ``[start, end)``;
ranges are OR-ed with ``||`` and must all use the same key. Bounds are ``0x`` and 16 lower-case
hex digits (the server compares them as strings, so the width matters); the end of the last
range is ``'0x10000000000000000'`` (2^64).

:func:`shard_selector` builds "shard ``index`` of ``count``" (equal ranges of the hash),
:meth:`ShardSelector.matches` applies a selector on the client side - what the server does,
for a server that does not serve shard selectors - and :meth:`ShardSelector.parse` reads one
back (what the server accepts: the two keys, ``shardRange`` and ``||``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "HASH_SPACE",
    "SHARD_BY_NAMESPACE",
    "SHARD_BY_UID",
    "ShardRange",
    "ShardSelector",
    "shard_hash",
    "shard_of",
    "shard_selector",
    "shards_selector",
]

SHARD_BY_NAMESPACE: Final = "object.metadata.namespace"
"""Shard by namespace: an object and everything in its namespace fall in the same shard."""

SHARD_BY_UID: Final = "object.metadata.uid"
"""Shard by UID: an even spread, but owners and the objects they own fall apart."""

HASH_SPACE: Final = 1 << 64
"""The end of the last range: hashes are 64-bit."""

_KEYS = (SHARD_BY_NAMESPACE, SHARD_BY_UID)
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = HASH_SPACE - 1
_RANGE = re.compile(
    r"\s*shardRange\(\s*(?P<key>[a-z.]+)\s*,\s*'(?P<start>0x[0-9a-f]+)'\s*,"
    r"\s*'(?P<end>0x[0-9a-f]+)'\s*\)\s*"
)


def shard_hash(value: str) -> int:
    """64-bit FNV-1a of ``value``'s UTF-8 bytes: where an object falls among the shards
    (the server's ``sharding.HashField``)."""
    h = _FNV_OFFSET
    for byte in value.encode():
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    return h


@dataclass(frozen=True, slots=True)
class ShardRange:
    """Hashes in ``[start, end)`` of ``key``."""

    key: str
    start: int
    end: int

    def __post_init__(self) -> None:
        if self.key not in _KEYS:
            raise ValueError(f"a shard key is one of {', '.join(_KEYS)}, not {self.key!r}")
        if not 0 <= self.start < self.end <= HASH_SPACE:
            raise ValueError(f"not a shard range: [{self.start:#x}, {self.end:#x})")

    def __str__(self) -> str:
        return f"shardRange({self.key}, '0x{self.start:016x}', '0x{self.end:016x}')"


@dataclass(frozen=True, slots=True)
class ShardSelector:
    """Ranges of one key's hash, OR-ed; ``str()`` is the expression the server takes."""

    ranges: tuple[ShardRange, ...]

    def __post_init__(self) -> None:
        if not self.ranges:
            raise ValueError("a shard selector has at least one range")
        if len({r.key for r in self.ranges}) > 1:
            raise ValueError("all the ranges of a shard selector use the same key")

    @property
    def key(self) -> str:
        return self.ranges[0].key

    def __str__(self) -> str:
        return " || ".join(str(r) for r in self.ranges)

    def __or__(self, other: ShardSelector) -> ShardSelector:
        return ShardSelector(self.ranges + other.ranges)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether the server would send ``obj`` under this selector."""
        metadata = obj.get("metadata") or {}
        field = "namespace" if self.key == SHARD_BY_NAMESPACE else "uid"
        value = metadata.get(field) or ""
        h = shard_hash(value if isinstance(value, str) else str(value))
        return any(r.start <= h < r.end for r in self.ranges)

    @classmethod
    def parse(cls, text: str) -> ShardSelector:
        """The selector ``text`` writes; :class:`ValueError` for what the server would refuse
        (other functions or keys, mixed keys, an empty range, a bound past 2^64)."""
        ranges = []
        for part in text.split("||"):
            match = _RANGE.fullmatch(part)
            if match is None:
                raise ValueError(f"not a shardRange(key, 'start', 'end') term: {part.strip()!r}")
            ranges.append(ShardRange(match["key"], int(match["start"], 16), int(match["end"], 16)))
        return cls(tuple(ranges))


def _start(index: int, count: int) -> int:
    return index * HASH_SPACE // count


def shard_selector(index: int, count: int, *, key: str = SHARD_BY_NAMESPACE) -> ShardSelector:
    """Shard ``index`` of ``count`` equal ranges of ``key``'s hash (``0 <= index < count``);
    the ``count`` shards together select every object exactly once."""
    return shards_selector((index,), count, key=key)


def shards_selector(
    indexes: Iterable[int], count: int, *, key: str = SHARD_BY_NAMESPACE
) -> ShardSelector:
    """The shards ``indexes`` of ``count`` together (each ``0 <= index < count``, at least
    one), neighbours merged into one range: shards 0, 1 and 3 of 4 are two ranges."""
    wanted = sorted(set(indexes))
    if not wanted:
        raise ValueError("no shard to select")
    for index in wanted:
        if not 0 <= index < count:
            raise ValueError(f"shard {index} of {count} does not exist")
    runs: list[list[int]] = []
    for index in wanted:
        if runs and runs[-1][1] == index:
            runs[-1][1] = index + 1
        else:
            runs.append([index, index + 1])
    return ShardSelector(
        tuple(ShardRange(key, _start(first, count), _start(end, count)) for first, end in runs)
    )


def shard_of(value: str, count: int) -> int:
    """The index of the shard of ``count`` (as :func:`shard_selector` cuts them) that holds
    the objects whose key (namespace or UID) is ``value``."""
    if count < 1:
        raise ValueError(f"there must be at least one shard, not {count}")
    return shard_of_hash(shard_hash(value), count)


def shard_of_hash(h: int, count: int) -> int:
    """The index of the shard of ``count`` whose range holds the hash ``h``."""
    index = h * count // HASH_SPACE
    # The ranges start at floor(k * 2^64 / count): a hash just below a true boundary may
    # already belong to the next range.
    while index + 1 < count and h >= _start(index + 1, count):
        index += 1
    return index
