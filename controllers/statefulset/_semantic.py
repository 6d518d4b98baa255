"""The semantic revision comparison (feature StatefulSetSemanticRevisionComparison, beta and on
in 1.36): is the set's latest revision still its template, though not the same JSON?

Upstream compares a new revision of the set with the existing ones by their data. A revision
written by an older kube-controller-manager can differ from the one written today for the
same template without any change the user made: 1.33 wrote ``"creationTimestamp": null``
into the template's metadata and 1.34 does not, and a field the API server started to
default after the revision was written is in the set's template (the server defaults it on
every read) but not in the revision's data (which is never defaulted). Either difference
used to roll every pod of every StatefulSet at upgrade. So when no revision equals the set,
``getStatefulSetRevisions`` asks :func:`set_matches_latest_revision` whether the newest
revision, restored onto the set and defaulted, gives the same data; if so that revision
stays the update revision and nothing rolls.

The controller calls it where upstream does::

    equal = history.find_equal_revisions(revisions, proposed)
    if equal and equal[-1] is the latest revision: update = latest
    elif equal:                                   update = equal[-1], renumbered (a rollback)
    elif revisions and set_matches_latest_revision(set_, proposed, latest, cache):
                                                  update = latest
    else:                                         create proposed

How the data are compared: the latest revision is applied to the set
(:func:`~._revisions.apply_revision`), its template defaulted as the API server would
(:func:`~._defaults.default_pod_template`), its patch taken again; then both patches are
normalized - ``null`` values and empty objects and lists dropped, which is what decoding
into Go structs and encoding again does for the ``omitempty`` fields a template holds - and
compared as JSON (``history.equal_revision``). Upstream compares the bytes of Go's encoding
of the decoded, defaulted revision; this comparison is the same one on decoded JSON.

A positive answer is remembered in a :class:`RevisionEqualityCache`, keyed by the set's UID
and generation and the revision's resourceVersion, so that each sync does not rebuild the
comparison (upstream keeps 10 000 such answers in an LRU cache). A negative one is not: the
set at that generation simply differs.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

from .. import history
from ._defaults import default_pod_template
from ._fields import meta, uid
from ._revisions import RevisionDataError, apply_revision, get_patch, revision_data

__all__ = [
    "MAX_REVISION_EQUALITY_CACHE_ENTRIES",
    "RevisionEqualityCache",
    "normalized",
    "set_matches_latest_revision",
]

MAX_REVISION_EQUALITY_CACHE_ENTRIES: Final = 10_000
"""How many positive answers the cache keeps (upstream ``maxRevisionEqualityCacheEntries``)."""

_CacheKey = tuple[str, int, str]


class RevisionEqualityCache:
    """Remembers which (set UID, set generation, revision resourceVersion) were found to
    match, dropping the least recently used beyond ``max_entries``. Not thread-safe: one per
    controller, used from its event loop."""

    def __init__(self, max_entries: int = MAX_REVISION_EQUALITY_CACHE_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be positive, not {max_entries}")
        self._max_entries = max_entries
        self._entries: OrderedDict[_CacheKey, None] = OrderedDict()  # oldest use first

    def __len__(self) -> int:
        return len(self._entries)

    def contains(self, key: _CacheKey) -> bool:
        """Whether ``key`` was added (and not dropped since); a hit counts as a use."""
        if key not in self._entries:
            return False
        self._entries.move_to_end(key)
        return True

    def add(self, key: _CacheKey) -> None:
        """Remember ``key``, dropping the least recently used key when full."""
        self._entries[key] = None
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)


def normalized(value: Any) -> Any:
    """A copy of decoded JSON ``value`` without ``null`` members nor empty-object or
    empty-list members, at any depth (list elements are kept, normalized, so lists keep
    their length). Go's encoding leaves exactly these out of ``omitempty`` fields."""
    if isinstance(value, Mapping):
        result = {}
        for key, member in value.items():
            kept = normalized(member)
            if kept is None or (isinstance(kept, dict | list) and not kept):
                continue
            result[key] = kept
        return result
    if isinstance(value, list):
        return [normalized(item) for item in value]
    return value


def _cache_key(set_: Mapping[str, Any], revision: Mapping[str, Any]) -> _CacheKey | None:
    resource_version = meta(revision).get("resourceVersion")
    set_uid = uid(set_)
    if not resource_version or not set_uid:
        return None  # not objects from the server: nothing to key an answer by
    return set_uid, int(meta(set_).get("generation") or 0), str(resource_version)


def set_matches_latest_revision(
    set_: Mapping[str, Any],
    proposed_revision: Mapping[str, Any],
    latest_revision: Mapping[str, Any],
    cache: RevisionEqualityCache | None = None,
) -> bool:
    """Whether ``latest_revision``, the newest of ``set_``'s revisions, restored onto
    ``set_`` and defaulted, holds the same data as ``proposed_revision`` (the revision made
    from ``set_`` now, :func:`~._revisions.new_revision`) once both are normalized.

    False for a revision whose data cannot be applied. With ``cache``, a match is remembered
    and answered from it next time (only for a set with a UID and a revision with a
    resourceVersion). Neither object is modified.
    """
    key = _cache_key(set_, latest_revision)
    if cache is not None and key is not None and cache.contains(key):
        return True
    try:
        restored = apply_revision(set_, latest_revision)
        proposed = {"data": normalized(revision_data(proposed_revision))}
    except RevisionDataError:
        return False
    restored_spec = restored.get("spec")
    if isinstance(restored_spec, dict) and isinstance(restored_spec.get("template"), Mapping):
        restored_spec["template"] = default_pod_template(restored_spec["template"])
    reconstructed = {"data": normalized(get_patch(restored))}
    if not history.equal_revision(proposed, reconstructed):
        return False
    if cache is not None and key is not None:
        cache.add(key)
    return True
