"""Revisions: the rollout history of a Deployment, kept in its ReplicaSets' annotations.

Each ReplicaSet records the revision in which it was the new one
(``deployment.kubernetes.io/revision``). A new ReplicaSet gets the highest revision of the old
ones plus one; a ReplicaSet that becomes new again (a rollback, or ``kubectl rollout undo``
patching the template back) gets a fresh revision and remembers its earlier ones in
``deployment.kubernetes.io/revision-history`` (comma separated, oldest first, at most
:data:`MAX_REV_HISTORY_LENGTH_IN_CHARS` characters: the oldest entries are dropped first). The
Deployment carries the revision of its new ReplicaSet, which ``kubectl rollout history``
shows.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any, Final

from kcontrol.client import Object
from kcontrol.logging import get_logger

from ..intstr import DecimalError, parse_decimal
from ._annotations import (
    REVISION_ANNOTATION,
    REVISION_HISTORY_ANNOTATION,
    copy_deployment_annotations_to_replica_set,
    mutable_annotations,
    set_replicas_annotations,
)
from ._fields import annotations_of, creation_key, name_of, spec_replicas
from ._replicas import max_surge

__all__ = [
    "MAX_REV_HISTORY_LENGTH_IN_CHARS",
    "RevisionError",
    "last_revision",
    "max_revision",
    "revision",
    "set_deployment_revision",
    "set_new_replica_set_annotations",
    "sorted_by_revision",
]

MAX_REV_HISTORY_LENGTH_IN_CHARS: Final = 2000
"""Upper bound of the revision-history annotation (about 100 revisions)."""

_log = get_logger(__name__)


class RevisionError(ValueError):
    """The revision annotation is not a 64-bit integer."""


def _parse_int64(text: str) -> int:
    """Go's ``strconv.ParseInt(text, 10, 64)``: optional sign, decimal digits."""
    try:
        return parse_decimal(text, bits=64, signed=True)
    except DecimalError as error:
        raise RevisionError(f"strconv.ParseInt: {error}") from None


def revision(obj: Mapping[str, Any]) -> int:
    """The revision annotation of ``obj``, 0 when it has none (upstream ``Revision``: a
    ReplicaSet without one is revision 0); raises :class:`RevisionError` when it does not
    parse (an empty value does not)."""
    value = annotations_of(obj).get(REVISION_ANNOTATION)
    if value is None:
        return 0
    return _parse_int64(str(value))


def max_revision(replica_sets: Iterable[Mapping[str, Any] | None]) -> int:
    """The highest revision among ``replica_sets`` (0 if none has one); ReplicaSets whose
    revision does not parse are skipped."""
    highest = 0
    for rs in replica_sets:
        if rs is None:
            continue
        try:
            value = revision(rs)
        except RevisionError as error:
            _log.debug("skipping replica set", replicaset=name_of(rs), error=str(error))
            continue
        highest = max(highest, value)
    return highest


def last_revision(replica_sets: Iterable[Mapping[str, Any] | None]) -> int:
    """The second-highest revision among ``replica_sets`` (what "roll back to the previous
    revision" means), 0 if there is none; unparseable revisions are skipped."""
    first = second = 0
    for rs in replica_sets:
        if rs is None:
            continue
        try:
            value = revision(rs)
        except RevisionError:
            continue
        if value >= first:
            first, second = value, first
        elif value > second:
            second = value
    return second


def _by_revision(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    try:
        ra, rb = revision(a), revision(b)
    except RevisionError:
        ra = rb = 0
    if ra == rb:
        ka, kb = creation_key(a), creation_key(b)
        return -1 if ka < kb else (1 if ka > kb else 0)
    return -1 if ra < rb else 1


def sorted_by_revision(replica_sets: Iterable[Object]) -> list[Object]:
    """``replica_sets`` oldest revision first (upstream ``ReplicaSetsByRevision``); when
    either revision of a pair does not parse or both are equal, by creation time then name."""
    return sorted(replica_sets, key=functools.cmp_to_key(_by_revision))


def set_deployment_revision(deployment: MutableMapping[str, Any], value: str) -> bool:
    """Set the Deployment's (the caller's copy) revision annotation; True if it changed."""
    annotations = mutable_annotations(deployment)
    if annotations.get(REVISION_ANNOTATION) == value:
        return False
    annotations[REVISION_ANNOTATION] = value
    return True


def _append_history(history: str, old_revision: str, limit: int) -> str | None:
    """``history`` with ``old_revision`` appended, oldest entries dropped to fit ``limit``
    characters; ``None`` when even ``old_revision`` alone does not fit."""
    if not history:
        return old_revision
    entries = history.split(",")
    total = len(history) + len(old_revision) + 1
    start = 0
    while total > limit and start < len(entries):
        total -= len(entries[start]) + 1
        start += 1
    if total > limit:
        return None
    return ",".join([*entries[start:], old_revision])


def set_new_replica_set_annotations(
    deployment: Mapping[str, Any],
    new_rs: MutableMapping[str, Any],
    new_revision: str,
    exists: bool,
    rev_history_limit_in_chars: int = MAX_REV_HISTORY_LENGTH_IN_CHARS,
) -> bool:
    """Annotate the new ReplicaSet (the caller's copy); True if anything changed.

    Copies the Deployment's annotations (see
    :func:`~kcontrol_controllers.deployment._annotations.copy_deployment_annotations_to_replica_set`),
    raises its revision to ``new_revision`` if it is lower (never lowers it: old ReplicaSets
    may have been deleted since), appending the revision it had to its history, and, for a
    ReplicaSet about to be created (``exists`` false), records the Deployment's size. A
    revision that does not parse leaves the revision alone and returns False, as upstream.
    """
    changed = copy_deployment_annotations_to_replica_set(deployment, new_rs)
    annotations = mutable_annotations(new_rs)
    had_revision = REVISION_ANNOTATION in annotations
    old_revision = str(annotations.get(REVISION_ANNOTATION, ""))
    try:
        old_value = _parse_int64(old_revision) if old_revision else 0
        new_value = _parse_int64(new_revision)
    except RevisionError as error:
        _log.info(
            "not updating the revision of replica set", replicaset=name_of(new_rs), error=str(error)
        )
        return False
    if old_value < new_value:
        annotations[REVISION_ANNOTATION] = new_revision
        changed = True
        if had_revision:
            history = _append_history(
                str(annotations.get(REVISION_HISTORY_ANNOTATION, "")),
                old_revision,
                rev_history_limit_in_chars,
            )
            if history is None:
                _log.info(
                    "not appending to the revision history: it would exceed the limit",
                    replicaset=name_of(new_rs),
                    limit_chars=rev_history_limit_in_chars,
                )
            else:
                annotations[REVISION_HISTORY_ANNOTATION] = history
    if not exists:
        replicas = spec_replicas(deployment)
        if set_replicas_annotations(new_rs, replicas, replicas + max_surge(deployment)):
            changed = True
    return changed
