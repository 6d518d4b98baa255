"""Hashing primitives the workload controllers name their objects with.

Upstream names a Deployment's ReplicaSets and the ControllerRevisions of StatefulSets and
DaemonSets by a 32-bit FNV hash, written out with apimachinery's ``rand.SafeEncodeString``.
The two users hash differently (the ``pod-template-hash`` is FNV-1a, a ControllerRevision's
hash FNV-1, as Go's ``hash/fnv`` ``New32a`` and ``New32``), so both variants live here, with
the encoding and the canonical JSON both feed them:

- :func:`fnv32` (FNV-1: multiply, then xor) and :func:`fnv32a` (FNV-1a: xor, then multiply),
  with offset basis 2166136261 and prime 16777619; ``seed`` continues an earlier hash, so
  hashing ``a`` then ``b`` equals hashing ``a + b``;
- :func:`safe_encode_string`: each character ``c`` replaced by ``SAFE_ALPHANUMS[ord(c) % 27]``
  (no vowels, no 0/1/3: the result never spells a word nor looks like another character);
- :func:`canonical_json`: object keys sorted by code point, no whitespace, UTF-8 without ASCII
  escaping - what Go's ``json.Marshal`` of a map produces for the same value, except that Go
  escapes ``<``, ``>`` and ``&`` (as ``\\u003c``...) and U+2028/U+2029, and spells some floats
  differently (Go ``100``, ``100000000000000000000``, ``0.000001`` where this gives
  ``100.0``, ``1e+20``, ``1e-6``; integers and most floats are spelled alike);
- :func:`go_json`: :func:`canonical_json` with Go's escapes, byte for byte what Go's
  ``json.Marshal`` writes for the same decoded value but for those floats - for the data of
  ControllerRevisions, which kube-controller-manager compares as bytes.

Every function is pure; the values they give name objects, so they must never change.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

__all__ = ["SAFE_ALPHANUMS", "canonical_json", "fnv32", "fnv32a", "go_json", "safe_encode_string"]

SAFE_ALPHANUMS: Final = "bcdfghjklmnpqrstvwxz2456789"
"""apimachinery ``rand``'s alphabet for safe encodings."""

_FNV32_OFFSET: Final = 2166136261  # the offset basis: the hash of no bytes

_FNV32_PRIME: Final = 16777619
_MASK32: Final = 0xFFFFFFFF


def canonical_json(value: Any) -> bytes:
    """``value`` as canonical JSON bytes (sorted keys, no whitespace, UTF-8)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


_GO_ESCAPES: Final = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)
"""What Go's encoder writes in strings where :func:`canonical_json` writes the character
itself. None of these bytes can occur outside a string in JSON, and the UTF-8 of U+2028 and
U+2029 cannot be part of another character's, so replacing them in the whole text is exact.
(Control characters are already alike: ``\\b \\f \\n \\r \\t`` and ``\\u00xx`` in both.)"""


def go_json(value: Any) -> bytes:
    """``value`` as Go's ``json.Marshal`` writes it after decoding it into an ``interface{}``
    (how upstream's StatefulSet and DaemonSet controllers build a revision's data): keys
    sorted, no whitespace, UTF-8, ``<``, ``>``, ``&``, U+2028 and U+2029 escaped as
    ``\\u003c``, ``\\u003e``, ``\\u0026``, ``\\u2028``, ``\\u2029``. Integers up to 2**53 are
    written alike; some floats are not (see the module docstring)."""
    data = canonical_json(value)
    for raw, escaped in _GO_ESCAPES:
        if raw in data:
            data = data.replace(raw, escaped)
    return data


def fnv32(data: bytes, seed: int = _FNV32_OFFSET) -> int:
    """The 32-bit FNV-1 hash of ``data`` (Go's ``fnv.New32``); ``seed`` continues an earlier
    hash."""
    h = seed
    for byte in data:
        h = ((h * _FNV32_PRIME) & _MASK32) ^ byte
    return h


def fnv32a(data: bytes, seed: int = _FNV32_OFFSET) -> int:
    """The 32-bit FNV-1a hash of ``data`` (Go's ``fnv.New32a``); ``seed`` continues an
    earlier hash."""
    h = seed
    for byte in data:
        h = ((h ^ byte) * _FNV32_PRIME) & _MASK32
    return h


def safe_encode_string(text: str) -> str:
    """apimachinery's ``rand.SafeEncodeString``: each character mapped into
    :data:`SAFE_ALPHANUMS` by its code point modulo 27."""
    return "".join(SAFE_ALPHANUMS[ord(char) % len(SAFE_ALPHANUMS)] for char in text)
