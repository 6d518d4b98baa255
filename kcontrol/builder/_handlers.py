"""Event handlers that turn informer events into requests (controller-runtime's
``pkg/handler``).

Each handler maps the object of an event to the :class:`Request` s to reconcile, after the
predicates let the event through:

- :func:`enqueue_for_object`: the object itself (``for_``);
- :func:`enqueue_for_owner`: the owner named by the object's ownerReferences, of one kind
  (``owns``): by default only the controlling owner, as upstream's ``OnlyControllerOwner``;
- any :data:`MapFunc` (``watches``): a function of the object, for relations that are not
  ownership (a ConfigMap to the objects that mount it, a Node to its pods...).

An update enqueues the requests of the old and of the new object, so an object that changes
owner (or stops matching a mapping) wakes both sides. Delete handlers receive the last known
state; tombstones (:class:`~kcontrol.informers.DeletedFinalStateUnknown`) are unwrapped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kcontrol.builder._predicates import Predicate
from kcontrol.builder._request import Request
from kcontrol.client import Object, Resource
from kcontrol.informers import DeletedFinalStateUnknown

__all__ = ["EnqueueHandler", "MapFunc", "enqueue_for_object", "enqueue_for_owner"]

MapFunc = Callable[[Object], Iterable[Request]]
"""Maps an object to the requests it should wake. Must be cheap, must not block or mutate."""


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def enqueue_for_object(obj: Object) -> list[Request]:
    """The request for ``obj`` itself."""
    meta = _metadata(obj)
    return [Request(meta.get("namespace") or "", meta["name"])]


def _group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]  # "apps/v1" -> "apps", "v1" -> ""


def enqueue_for_owner(owner: Resource, *, only_controller: bool = True) -> MapFunc:
    """Requests for the owners of kind ``owner`` in an object's ownerReferences.

    References match by API group and kind, whatever their version, as upstream compares
    them. ``only_controller`` (the default) keeps only the reference with ``controller:
    true``. Owner references never cross namespaces: a namespaced owner is looked for in the
    object's namespace, a cluster-scoped owner (``owner.namespaced`` false) has none.
    """
    group, kind = owner.group, owner.kind

    def owners(obj: Object) -> list[Request]:
        meta = _metadata(obj)
        namespace = (meta.get("namespace") or "") if owner.namespaced else ""
        found: list[Request] = []
        for ref in meta.get("ownerReferences") or ():
            if only_controller and ref.get("controller") is not True:
                continue
            if ref.get("kind") != kind or _group_of(str(ref.get("apiVersion", ""))) != group:
                continue
            name = ref.get("name")
            if name:
                found.append(Request(namespace, name))
        return found

    return owners


class EnqueueHandler:
    """A :class:`~kcontrol.informers.ResourceEventHandler` that adds the keys ``map_func``
    gives for each event the ``predicates`` all pass to ``add`` (a queue's ``add``).

    Runs in the informer's delivery task: it only filters, maps and adds to the queue, and a
    mapping that raises is logged by the informer without stopping its other handlers.
    """

    def __init__(
        self,
        map_func: MapFunc,
        add: Callable[[str], object],
        predicates: Sequence[Predicate] = (),
    ) -> None:
        self._map = map_func
        self._add = add
        self._predicates = tuple(predicates)

    def on_add(self, obj: Object, is_in_initial_list: bool) -> None:
        if all(p.create(obj) for p in self._predicates):
            self._enqueue(self._map(obj))

    def on_update(self, old: Object, new: Object) -> None:
        if all(p.update(old, new) for p in self._predicates):
            self._enqueue({*self._map(old), *self._map(new)})

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        if all(p.delete(obj) for p in self._predicates):
            self._enqueue(self._map(obj))

    def _enqueue(self, requests: Iterable[Request]) -> None:
        for request in requests:
            self._add(request.key)
