"""Field ownership, ``metadata.managedFields``, as the API server keeps it (apimachinery's
``managedfields`` over structured-merge-diff's ``merge.Updater``).

Each managedFields entry records the fields one *manager* owns, under an identity of the
manager's name, the operation (``Apply`` for server-side apply, ``Update`` for every other
write), the apiVersion (for ``Update`` only) and the subresource. Two operations change it:

- :meth:`FieldManager.update`, for create, update and non-apply patches: every field the
  write added or changed becomes the writer's (taken from whoever owned it, without
  conflict), every field it removed is nobody's any more;
- :meth:`FieldManager.apply`, for server-side apply: the applied configuration is merged
  into the object; the fields it sets become the applier's, *replacing* what the applier
  owned before, and a field the applier set last time and omits now is removed from the
  object unless another manager owns it too; a field another manager owns whose value the
  apply changes is a :class:`~kcontrol.errors.Conflict` (naming managers and fields as the
  server does) unless ``force``, which moves the field to the applier.

The identity fields (``apiVersion``, ``kind``, ``metadata.name``, ``namespace``, ``uid``,
``resourceVersion``, ``generation``, ``creationTimestamp``, ``managedFields``) are never
owned. On a resource with a status subresource, writes to the main resource own nothing
under ``status`` and status writes own nothing outside it. An entry's ``time`` is set when
its manager's write changes the object.

Not modelled: conversion between apiVersions (every entry is taken as of the object's
version), the cap of ten ``Update`` entries (``ancient-changes``), and the
``last-applied-configuration`` annotation of client-side ``kubectl apply``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from kcontrol.client import Object
from kcontrol.errors import Conflict
from kcontrol.testing.fake._ssa._fieldpath import (
    FieldSet,
    Path,
    decode_fields_v1,
    describe,
    encode_fields_v1,
    iterate,
)
from kcontrol.testing.fake._ssa._shape import Shape
from kcontrol.testing.fake._ssa._typed import (
    compare,
    ensure_named_fields,
    field_set,
    merge,
    remove_fields,
)

__all__ = [
    "APPLY",
    "UPDATE",
    "FieldManager",
    "Managed",
    "ManagerId",
    "Ownership",
    "decode_managed_fields",
    "encode_managed_fields",
    "is_reset",
]

APPLY: Final = "Apply"
UPDATE: Final = "Update"

_NEVER_OWNED: Final[FieldSet] = frozenset(
    {
        ("f:apiVersion",),
        ("f:kind",),
        ("f:metadata",),
        *(
            ("f:metadata", f"f:{name}")
            for name in (
                "name",
                "namespace",
                "creationTimestamp",
                "selfLink",
                "uid",
                "clusterName",
                "generation",
                "managedFields",
                "resourceVersion",
            )
        ),
    }
)
"""Fields no manager owns (the server's ``stripMetaManager``)."""


@dataclass(frozen=True, slots=True)
class ManagerId:
    """Who owns a set of fields: one managedFields entry per identity."""

    manager: str
    operation: str
    api_version: str  # "" for Apply: an applier keeps one entry whatever version it applies
    subresource: str = ""

    def describe(self) -> str:
        """As conflict messages name it: ``"kcontrol" using v1``."""
        text = orjson.dumps(self.manager).decode()
        if self.subresource:
            text += f" with subresource {orjson.dumps(self.subresource).decode()}"
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text


@dataclass(frozen=True, slots=True)
class Ownership:
    """One entry's fields, the apiVersion they are in, and when they last changed."""

    fields: FieldSet
    api_version: str
    time: str | None = None


Managed = dict[ManagerId, Ownership]


def is_reset(entries: Any) -> bool:
    """Whether a request's ``managedFields`` asks to clear them: ``[]`` or ``[{}]``."""
    return isinstance(entries, list) and entries in ([], [{}])


def decode_managed_fields(entries: Any) -> Managed:
    """The ownership recorded in ``metadata.managedFields`` (absent: none). ValueError for
    an entry the server would refuse (operation not Apply/Update, no apiVersion, a
    fieldsType other than FieldsV1, a malformed field set)."""
    managed: Managed = {}
    if entries is None:
        return managed
    if not isinstance(entries, list):
        raise ValueError("metadata.managedFields must be a list")
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise ValueError(f"managed fields entry {index} is not an object")
        operation = entry.get("operation")
        if operation not in (APPLY, UPDATE):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = entry.get("apiVersion")
        if not api_version or not isinstance(api_version, str):
            raise ValueError("apiVersion must not be empty")
        if entry.get("fieldsType") != "FieldsV1":
            raise ValueError(f"invalid fieldsType in managed fields entry {index}")
        identity = ManagerId(
            manager=str(entry.get("manager") or ""),
            operation=operation,
            api_version="" if operation == APPLY else api_version,
            subresource=str(entry.get("subresource") or ""),
        )
        raw = entry.get("fieldsV1")
        fields = decode_fields_v1(raw) if raw is not None else frozenset()
        time = entry.get("time")
        managed[identity] = Ownership(fields, api_version, time if isinstance(time, str) else None)
    return managed


def encode_managed_fields(managed: Managed) -> list[dict[str, Any]]:
    """The ``metadata.managedFields`` entries, in the server's order (Apply before Update,
    then by time, manager, apiVersion and subresource)."""
    entries: list[dict[str, Any]] = []
    for identity, ownership in managed.items():
        entry: dict[str, Any] = {
            "manager": identity.manager,
            "operation": identity.operation,
            "apiVersion": ownership.api_version,
        }
        if ownership.time is not None:
            entry["time"] = ownership.time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = encode_fields_v1(ownership.fields)
        if identity.subresource:
            entry["subresource"] = identity.subresource
        entries.append(entry)
    entries.sort(
        key=lambda e: (
            e["operation"],
            e.get("time") or "",
            e["manager"],
            e["apiVersion"],
            e.get("subresource", ""),
        )
    )
    return entries


class FieldManager:
    """The ownership rules for writes to one resource (see the module docstring).

    ``shape`` is the resource's schema, ``api_version`` the objects' apiVersion, ``owns`` a
    predicate saying which paths writes through this endpoint may own (main resource or
    status subresource), ``now`` the timestamp for entries whose manager changed the object.
    Objects passed in are not modified.
    """

    def __init__(
        self,
        shape: Shape,
        api_version: str,
        *,
        owns: Callable[[Path], bool],
        now: str,
    ) -> None:
        self._shape = shape
        self._api_version = api_version
        self._owns = owns
        self._now = now

    def update(self, live: Object, new: Object, managed: Managed, manager: ManagerId) -> Managed:
        """The ownership after a non-apply write turned ``live`` into ``new``."""
        changes = compare(_bare(live), _bare(new), self._shape).restrict(self._owns)
        changed = changes.added | changes.modified
        result = _without(managed, changed | changes.removed)
        taken = frozenset(changed) - _NEVER_OWNED
        if taken:
            previous = result.get(manager)
            fields = taken | (previous.fields if previous else frozenset())
            result[manager] = Ownership(fields, self._api_version, self._now)
        return result

    def apply(
        self,
        live: Object,
        config: Object,
        managed: Managed,
        manager: ManagerId,
        *,
        force: bool,
    ) -> tuple[Object, Managed]:
        """The object and ownership after ``manager`` applied ``config`` to ``live``;
        Conflict if it would change fields other managers own and ``force`` is false."""
        bare = _bare(live)
        merged = merge(bare, config, self._shape)
        applied = frozenset(p for p in field_set(config, self._shape) if self._owns(p))
        last = managed.get(manager)
        managers = dict(managed)
        managers[manager] = Ownership(applied, self._api_version, last.time if last else None)
        if last is not None and last.fields:
            merged = self._prune(merged, managers, last.fields)
        changes = compare(bare, merged, self._shape).restrict(self._owns)
        changed = changes.added | changes.modified
        conflicts = {
            identity: ownership.fields & changed
            for identity, ownership in managers.items()
            if identity != manager and ownership.fields & changed
        }
        if conflicts and not force:
            raise apply_conflict(conflicts)
        mine = managers.pop(manager)
        result = _without(managers, changed | changes.removed)
        fields = mine.fields - _NEVER_OWNED
        if fields:
            time = self._now if merged != bare else mine.time
            result[manager] = Ownership(fields, self._api_version, time)
        return merged, result

    def _prune(self, merged: Object, managers: Managed, last: FieldSet) -> Object:
        """``merged`` without the fields the applier set last time and nobody owns now."""
        owned: set[Path] = set()
        for ownership in managers.values():
            owned |= ownership.fields
        gone = ensure_named_fields(last, self._shape) - ensure_named_fields(owned, self._shape)
        if not gone:
            return merged
        pruned: Object = remove_fields(merged, gone, self._shape)
        return pruned


def _bare(obj: Object) -> Object:
    """``obj`` without its managedFields (a shallow copy where they were present)."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and "managedFields" in metadata:
        return {**obj, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}
    return obj


def _without(managed: Managed, paths: Iterable[Path]) -> Managed:
    """Every entry without ``paths``; entries left empty are dropped."""
    drop = frozenset(paths)
    result: Managed = {}
    for identity, ownership in managed.items():
        fields = ownership.fields - drop
        if fields:
            result[identity] = Ownership(fields, ownership.api_version, ownership.time)
    return result


def apply_conflict(conflicts: Mapping[ManagerId, FieldSet]) -> Conflict:
    """The server's 409 for an apply that would take fields from other managers: the
    message lists them by manager (``conflict with "kcontrol" using v1: .data.key``), and
    ``details.causes`` holds one ``FieldManagerConflict`` per field."""
    by_manager: dict[str, list[str]] = {}
    causes: list[dict[str, str]] = []
    for identity, paths in conflicts.items():
        name = identity.describe()
        for path in iterate(paths):
            by_manager.setdefault(name, []).append(describe(path))
            causes.append(
                {
                    "reason": "FieldManagerConflict",
                    "message": f"conflict with {name}",
                    "field": describe(path),
                }
            )
    if len(causes) == 1:
        message = f"Apply failed with 1 conflict: {causes[0]['message']}: {causes[0]['field']}"
    else:
        lines = []
        for name in sorted(by_manager):
            lines.append(f"conflicts with {name}:")
            lines.extend(f"- {field}" for field in by_manager[name])
        message = f"Apply failed with {len(causes)} conflicts: " + "\n".join(lines)
    return Conflict(message, details={"causes": causes})
