"""A StatefulSet's revisions: what a ControllerRevision of it holds, and how a set is restored
from one.

A revision's ``data`` is the patch that puts the set's pod template back (:func:`get_patch`):
``{"spec": {"template": <template>, "$patch": "replace"}}`` with the template exactly as the
server sent it - the key order aside: its keys are sorted at every level, as Go's
``json.Marshal`` of a map sorts them; the revision is created with Go's bytes
(:func:`kcontrol_controllers.history.body_to_create`: ``<`` as ``\\u003c``...), so they
match those kube-controller-manager and ``kubectl rollout undo`` compute for the same
template.
:func:`new_revision` wraps it in a ControllerRevision through
:func:`kcontrol_controllers.history.new_controller_revision` (named by hash, labelled with the
template's labels, owned by the set) and copies the set's annotations onto it.
:func:`apply_revision` is the reverse: a copy of the set with the revision's patch applied.

Revision numbers, equality and ordering belong to :mod:`kcontrol_controllers.history`
(``next_revision``, ``equal_revision``, ``sort_controller_revisions``); the comparison that
forgives serialization and defaulting differences is :mod:`._semantic`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import orjson

from kcontrol.client import Object, deep_copy

from .. import history
from ..hashing import canonical_json
from ._fields import meta, spec
from ._names import API_VERSION, KIND

__all__ = ["RevisionDataError", "apply_revision", "get_patch", "new_revision", "revision_data"]

_PATCH_DIRECTIVE: Final = "$patch"


class RevisionDataError(ValueError):
    """A revision's ``data`` is not a patch this controller can apply: not a JSON object, or
    a strategic-merge directive other than ``$patch: replace|delete|merge``."""


def get_patch(set_: Mapping[str, Any]) -> Object:
    """The data of a revision of ``set_``: a patch that replaces a set's ``spec.template``
    with a deep copy of this one, its keys sorted at every level (see the module docstring:
    the client sends keys in dict order)."""
    template = {**(spec(set_).get("template") or {}), _PATCH_DIRECTIVE: "replace"}
    patch: Object = orjson.loads(canonical_json({"spec": {"template": template}}))
    return patch


def new_revision(set_: Mapping[str, Any], revision: int, collision_count: int | None) -> Object:
    """A new ControllerRevision of ``set_`` (not yet created) holding :func:`get_patch`,
    numbered ``revision``, named by the hash of its data and ``collision_count`` (the set's
    ``status.collisionCount``), labelled with the template's labels and the hash, with the
    set's annotations."""
    template_meta = (spec(set_).get("template") or {}).get("metadata") or {}
    cr = history.new_controller_revision(
        set_,
        (API_VERSION, KIND),
        template_meta.get("labels"),
        get_patch(set_),
        revision,
        collision_count,
    )
    set_annotations = meta(set_).get("annotations") or {}
    if set_annotations:
        cr_meta = cr["metadata"]
        cr_meta["annotations"] = {**(cr_meta.get("annotations") or {}), **set_annotations}
    return cr


def revision_data(revision: Mapping[str, Any]) -> Any:
    """A revision's ``data`` as decoded JSON; a JSON text (as a fake client might keep it)
    is decoded, a missing ``data`` is ``None``."""
    data = revision.get("data")
    if isinstance(data, str | bytes):
        try:
            return json.loads(data)
        except ValueError as error:
            raise RevisionDataError(f"revision data is not JSON: {error}") from None
    return data


def apply_revision(set_: Mapping[str, Any], revision: Mapping[str, Any]) -> Object:
    """A deep copy of ``set_`` with ``revision``'s patch applied: its pod template is the one
    the revision recorded. ``set_`` is not modified.

    A StatefulSet revision only ever holds ``spec.template`` with ``$patch: replace``; other
    fields are merged as a JSON merge patch (objects merged, ``null`` deletes, lists
    replaced), which is what a strategic merge does for them except for lists with merge keys.
    Raises :class:`RevisionDataError` for data that is not an object or holds another
    directive.
    """
    data = revision_data(revision)
    if data is None:
        return deep_copy(dict(set_))
    if not isinstance(data, Mapping):
        raise RevisionDataError(f"revision data is not a JSON object: {type(data).__name__}")
    merged = _merge(set_, data)
    if merged is _DELETED:
        raise RevisionDataError("revision data deletes the whole object")
    assert isinstance(merged, dict)
    return merged


_DELETED: Final = object()


def _merge(original: Any, patch: Mapping[str, Any]) -> Any:
    """``patch`` applied to a copy of ``original``; :data:`_DELETED` for ``$patch: delete``."""
    directive = patch.get(_PATCH_DIRECTIVE, "merge")
    if directive == "replace":
        return {k: deep_copy(v) for k, v in patch.items() if k != _PATCH_DIRECTIVE}
    if directive == "delete":
        return _DELETED
    if directive != "merge":
        raise RevisionDataError(f"unsupported patch directive {_PATCH_DIRECTIVE}: {directive!r}")
    # Copy only what the patch leaves alone: what it names is merged or replaced below (a
    # revision names spec.template, the largest part of a StatefulSet).
    result: dict[str, Any] = (
        {k: deep_copy(v) for k, v in original.items() if k not in patch}
        if isinstance(original, Mapping)
        else {}
    )
    for key, value in patch.items():
        if key == _PATCH_DIRECTIVE:
            continue
        if key.startswith("$"):
            raise RevisionDataError(f"unsupported strategic merge directive {key!r}")
        if value is None:
            result.pop(key, None)
        elif isinstance(value, Mapping):
            merged = _merge(original.get(key) if isinstance(original, Mapping) else None, value)
            if merged is _DELETED:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = deep_copy(value)
    return result
