"""ControllerRevisions as values: building one, telling two apart, ordering a history.

Ports of ``NewControllerRevision``, ``EqualRevision``, ``FindEqualRevisions`` and
``SortControllerRevisions`` of upstream's ``pkg/controller/history``, and of the
``nextRevision`` its two users (the StatefulSet and DaemonSet controllers) each define. All
functions are pure: they never mutate their arguments, and what they return shares nothing
mutable with them (building a revision copies the labels and data it is given).

Revisions are plain dicts as the API server sends them: ``metadata``, ``data`` (any JSON
value; the StatefulSet and DaemonSet controllers store a patch object) and ``revision`` (an
integer, the position in the parent's history).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import orjson

from kcontrol.client import Object, deep_copy
from kcontrol.metatime import parse_time

from ..hashing import go_json
from ..podutil import new_controller_ref
from ._hashing import (
    CONTROLLER_REVISION_HASH_LABEL,
    controller_revision_name,
    hash_controller_revision,
)

__all__ = [
    "body_to_create",
    "equal_revision",
    "find_equal_revisions",
    "new_controller_revision",
    "next_revision",
    "same_data",
    "sort_controller_revisions",
]

_R = TypeVar("_R", bound=Mapping[str, Any])

_DECIMAL: Final = re.compile(r"[+-]?[0-9]+")
_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
_NO_TIME: Final = datetime.min.replace(tzinfo=UTC)  # Go's zero time sorts first


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def new_controller_revision(  # noqa: PLR0917 - upstream's signature, which callers share
    parent: Mapping[str, Any],
    parent_kind: tuple[str, str],
    template_labels: Mapping[str, str] | None,
    data: Any,
    revision: int,
    collision_count: int | None,
) -> Object:
    """A new ControllerRevision of ``parent`` (whose ``(apiVersion, kind)`` is
    ``parent_kind``), not yet created.

    It is named ``<parent name>-<hash>`` (:func:`hash_controller_revision` of ``data`` with
    ``collision_count`` as the probe) in the parent's namespace; its labels are a copy of
    ``template_labels`` plus :data:`CONTROLLER_REVISION_HASH_LABEL` set to the hash; its only
    owner reference makes ``parent`` its controller (with ``blockOwnerDeletion``); ``data``
    is a deep copy of ``data`` and ``revision`` is ``revision``.
    """
    api_version, kind = parent_kind
    meta = _meta(parent)
    cr: Object = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "namespace": meta.get("namespace"),
            "labels": dict(template_labels or {}),
            "ownerReferences": [new_controller_ref(parent, api_version, kind)],
        },
        "data": deep_copy(data),
        "revision": revision,
    }
    hash_ = hash_controller_revision(cr, collision_count)
    cr["metadata"]["name"] = controller_revision_name(str(meta.get("name") or ""), hash_)
    cr["metadata"]["labels"][CONTROLLER_REVISION_HASH_LABEL] = hash_
    return cr


def body_to_create(revision: Mapping[str, Any]) -> Object:
    """The request body that creates ``revision``: a shallow copy whose ``data`` (when
    present) is sent as the raw bytes Go's ``json.Marshal`` would write
    (:func:`~kcontrol_controllers.hashing.go_json`). The API server keeps a revision's data
    as the bytes it received, and kube-controller-manager's DaemonSet controller finds a
    set's current revision by comparing those bytes with its own encoding: with the client's
    encoding (``<`` rather than ``\\u003c``) it would not find it after a hand-back, record
    a new revision and replace every pod."""
    body = dict(revision)
    if body.get("data") is not None:
        body["data"] = orjson.Fragment(go_json(body["data"]))
    return body


def _hash_label_value(revision: Mapping[str, Any]) -> int | None:
    """The hash label read as upstream reads it (``strconv.ParseInt(label, 10, 32)``): an
    int32 in decimal, or ``None`` when absent or anything else - which a safe-encoded hash
    with a letter in it always is."""
    text = (_meta(revision).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL)
    if not isinstance(text, str) or not _DECIMAL.fullmatch(text):
        return None
    value = int(text)
    return value if _INT32_MIN <= value <= _INT32_MAX else None


def same_data(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether revisions ``a`` and ``b`` hold the same ``data``, compared as parsed JSON
    (no labels looked at); a missing ``data`` equals only another missing one."""
    return _json_equal(a.get("data"), b.get("data"))


def _json_equal(a: Any, b: Any) -> bool:
    """Whether two decoded JSON values are the same JSON: objects compare by their members
    in any order, arrays element by element, numbers by value (``1`` and ``1.0`` are one
    JSON number); ``true`` is not ``1`` (Python's ``True == 1`` is not JSON equality)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def equal_revision(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Whether ``a`` and ``b`` hold the same data (both ``None`` counts as equal, one
    ``None`` does not).

    First, as upstream, the hash labels: when both read as decimal int32s
    (``strconv.ParseInt(label, 10, 32)``, a leftover of the label once holding the raw
    number; a safe-encoded hash with a letter in it never does) and differ, the revisions
    differ. Then the
    ``data`` of both is compared as parsed JSON, not as bytes: upstream compares the raw
    bytes, which kube-controller-manager wrote with Go's layout (``\\u003c`` for ``<``,
    its float spelling) and this port cannot reproduce byte for byte. A controller taking
    over from kube-controller-manager must find the revision it wrote equal to the one it
    computes from the same spec; if it did not, it would record a new revision and roll
    every pod onto it although nothing changed.
    """
    if a is b:  # the newest revision found equal to itself: the common case of a sync
        return True
    if a is None or b is None:
        return False
    hash_a, hash_b = _hash_label_value(a), _hash_label_value(b)
    if hash_a is not None and hash_b is not None and hash_a != hash_b:
        return False
    return same_data(a, b)


def find_equal_revisions(revisions: Iterable[_R], needle: Mapping[str, Any]) -> list[_R]:
    """The revisions :func:`equal_revision` to ``needle``, in their order (the same objects,
    not copies)."""
    return [revision for revision in revisions if equal_revision(revision, needle)]


def _sort_key(revision: Mapping[str, Any]) -> tuple[int, datetime, str]:
    meta = _meta(revision)
    created = parse_time(meta.get("creationTimestamp")) or _NO_TIME
    return (int(revision.get("revision") or 0), created, str(meta.get("name") or ""))


def sort_controller_revisions(revisions: Iterable[_R]) -> list[_R]:
    """``revisions`` ordered oldest first: by ``revision``, ties by ``creationTimestamp``
    (a missing one first), then by name; a stable sort, as upstream's. Returns a new list of
    the same objects; the input is left as it is."""
    return sorted(revisions, key=_sort_key)


def next_revision(revisions: Sequence[Mapping[str, Any]]) -> int:
    """The ``revision`` number for a new revision of a parent whose history is
    ``revisions``: one more than the highest, or 1 for an empty history.

    Upstream's StatefulSet controller takes the last element of a history it sorted first;
    taking the maximum gives the same number for a sorted history and the right one for an
    unsorted one (as the DaemonSet controller's ``maxRevision + 1``).
    """
    return max((int(r.get("revision") or 0) for r in revisions), default=0) + 1
