"""Predicates: which events of a watched kind wake a reconcile (controller-runtime's
``pkg/predicate``).

A :class:`Predicate` answers, per informer event, whether the event should enqueue anything
at all. Filtering happens in the informer's handler, before the work queue: a filtered event
costs one comparison, not a reconcile. Predicates only filter notifications; a reconcile is
still level-based and must not depend on which events passed.

The stock predicates compare what controllers usually care about:

- :func:`generation_changed`: the spec changed (``metadata.generation`` moved); status-only
  and metadata-only updates are dropped. Objects without a generation (ConfigMaps) always
  pass, as upstream's ``GenerationChangedPredicate`` lets them.
- :func:`labels_changed`, :func:`annotations_changed`: those maps differ.
- :func:`resource_version_changed`: drops resync notifications (same resourceVersion).

Combine them with :func:`and_`, :func:`or_` and :func:`not_`; build one from a function of the
object with :func:`new_predicate_funcs`, or per event kind with :class:`Funcs`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kcontrol.client import Object

__all__ = [
    "Funcs",
    "Predicate",
    "and_",
    "annotations_changed",
    "generation_changed",
    "labels_changed",
    "new_predicate_funcs",
    "not_",
    "or_",
    "resource_version_changed",
]


class Predicate(Protocol):
    """Decides whether an informer event enqueues a reconcile.

    ``delete`` receives the object's last known state (a tombstone's ``obj`` is unwrapped
    before it is called). Every method must be cheap and must not block or mutate the object.
    """

    def create(self, obj: Object) -> bool: ...

    def update(self, old: Object, new: Object) -> bool: ...

    def delete(self, obj: Object) -> bool: ...


@dataclass(frozen=True, slots=True)
class Funcs:
    """A predicate from one optional function per event kind; a missing one lets every event
    of that kind through (controller-runtime's ``predicate.Funcs``)."""

    create_func: Callable[[Object], bool] | None = None
    update_func: Callable[[Object, Object], bool] | None = None
    delete_func: Callable[[Object], bool] | None = None

    def create(self, obj: Object) -> bool:
        return self.create_func is None or self.create_func(obj)

    def update(self, old: Object, new: Object) -> bool:
        return self.update_func is None or self.update_func(old, new)

    def delete(self, obj: Object) -> bool:
        return self.delete_func is None or self.delete_func(obj)


def new_predicate_funcs(keep: Callable[[Object], bool]) -> Funcs:
    """A predicate that passes the events whose object ``keep`` accepts; for an update, the new
    object is tested (controller-runtime's ``NewPredicateFuncs``)."""
    return Funcs(
        create_func=keep,
        update_func=lambda old, new: keep(new),
        delete_func=keep,
    )


def _metadata(obj: Object) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _generation_moved(old: Object, new: Object) -> bool:
    # A kind without a generation reads as 0, as GetGeneration() does in Go.
    old_generation = _metadata(old).get("generation") or 0
    new_generation = _metadata(new).get("generation") or 0
    return bool(old_generation != new_generation)


def generation_changed() -> Funcs:
    """Updates pass only when ``metadata.generation`` changed (a spec change); creates and
    deletes pass. Status writes - including the reconcile's own - wake nothing. As
    controller-runtime's ``GenerationChangedPredicate``, an update of a kind without a
    generation (a ConfigMap, a Secret: 0 before and after) never passes; watch those with
    :func:`resource_version_changed` or no predicate."""
    return Funcs(update_func=_generation_moved)


def _map_changed(field: str) -> Callable[[Object, Object], bool]:
    def changed(old: Object, new: Object) -> bool:
        return bool((_metadata(old).get(field) or {}) != (_metadata(new).get(field) or {}))

    return changed


def labels_changed() -> Funcs:
    """Updates pass only when ``metadata.labels`` changed."""
    return Funcs(update_func=_map_changed("labels"))


def annotations_changed() -> Funcs:
    """Updates pass only when ``metadata.annotations`` changed."""
    return Funcs(update_func=_map_changed("annotations"))


def _resource_version_moved(old: Object, new: Object) -> bool:
    return bool(_metadata(old).get("resourceVersion") != _metadata(new).get("resourceVersion"))


def resource_version_changed() -> Funcs:
    """Updates pass only when ``metadata.resourceVersion`` changed: periodic resyncs, which
    re-deliver an unchanged object, are dropped."""
    return Funcs(update_func=_resource_version_moved)


@dataclass(frozen=True, slots=True)
class _All:
    predicates: tuple[Predicate, ...]

    def create(self, obj: Object) -> bool:
        return all(p.create(obj) for p in self.predicates)

    def update(self, old: Object, new: Object) -> bool:
        return all(p.update(old, new) for p in self.predicates)

    def delete(self, obj: Object) -> bool:
        return all(p.delete(obj) for p in self.predicates)


@dataclass(frozen=True, slots=True)
class _Any:
    predicates: tuple[Predicate, ...]

    def create(self, obj: Object) -> bool:
        return any(p.create(obj) for p in self.predicates)

    def update(self, old: Object, new: Object) -> bool:
        return any(p.update(old, new) for p in self.predicates)

    def delete(self, obj: Object) -> bool:
        return any(p.delete(obj) for p in self.predicates)


@dataclass(frozen=True, slots=True)
class _Not:
    predicate: Predicate

    def create(self, obj: Object) -> bool:
        return not self.predicate.create(obj)

    def update(self, old: Object, new: Object) -> bool:
        return not self.predicate.update(old, new)

    def delete(self, obj: Object) -> bool:
        return not self.predicate.delete(obj)


def and_(*predicates: Predicate) -> Predicate:
    """Passes an event when every predicate passes it (none: everything passes)."""
    return _All(predicates)


def or_(*predicates: Predicate) -> Predicate:
    """Passes an event when at least one predicate passes it (none: nothing passes)."""
    return _Any(predicates)


def not_(predicate: Predicate) -> Predicate:
    """Passes exactly the events ``predicate`` drops."""
    return _Not(predicate)
