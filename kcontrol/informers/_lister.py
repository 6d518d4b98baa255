"""Listers: typed-by-resource read access to an informer's cache.

A port of client-go's generated listers (``GenericLister``). Every read is answered from the
cache, never from the server: it is as fresh as the informer (eventually consistent) and
costs no API call. Returned objects are the cached ones, shared with every other reader:
copy them with :func:`kcontrol.client.deep_copy` before changing them.
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Mapping
from typing import Protocol, overload

from kcontrol import labels
from kcontrol.client import Object, Resource
from kcontrol.errors import NotFound, OutsideCacheScope
from kcontrol.informers._store import LABEL_INDEX_PREFIX, NAMESPACE_INDEX, Indexer

__all__ = ["LabelSelector", "Lister"]


class LabelSelector(Protocol):
    """Anything that can match a label set, such as a ``kcontrol.labels`` selector."""

    def matches(self, labels: Mapping[str, str]) -> bool: ...


class Lister:
    """Reads ``resource`` objects from ``indexer`` (an informer's cache). ``namespace``: the
    namespace (or namespaces) the cache holds, for an informer of some namespaces only; a read
    in another raises :class:`~kcontrol.errors.OutsideCacheScope` instead of answering "not
    found"."""

    def __init__(
        self,
        indexer: Indexer,
        resource: Resource,
        namespace: str | Collection[str] | None = None,
    ) -> None:
        self._indexer = indexer
        self._resource = resource
        held = {namespace} if isinstance(namespace, str) else set(namespace or ())
        self._namespaces = frozenset(held) if resource.namespaced else frozenset()

    def _check_namespace(self, namespace: str | None) -> None:
        if self._namespaces and namespace and namespace not in self._namespaces:
            resource = self._resource
            held = ", ".join(repr(n) for n in sorted(self._namespaces))
            raise OutsideCacheScope(
                f"{resource.plural} in namespace {namespace!r} are not cached: this cache "
                f"holds namespace {held} only; read them from the API "
                "(client.get / client.list) or widen the cache's scope"
            )

    @property
    def resource(self) -> Resource:
        return self._resource

    @overload
    def get(self, name: str, /) -> Object: ...

    @overload
    def get(self, namespace: str, name: str, /) -> Object: ...

    def get(self, first: str, second: str | None = None, /) -> Object:
        """``get(namespace, name)`` for namespaced resources, ``get(name)`` for cluster-scoped.

        Raises :class:`~kcontrol.errors.NotFound` (like a GET would) when not cached.
        """
        if second is None:
            name, key = first, first
        else:
            self._check_namespace(first)
            name = second
            key = f"{first}/{second}" if first and self._resource.namespaced else second
        obj = self._indexer.get_by_key(key)
        if obj is None:
            resource = self._resource
            qualified = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
            raise NotFound(
                f'{qualified} "{name}" not found',
                details={"name": name, "group": resource.group, "kind": resource.plural},
            )
        return obj

    def list(
        self, namespace: str | None = None, selector: LabelSelector | str | None = None
    ) -> builtins.list[Object]:
        """Objects in ``namespace`` (all namespaces when None) whose labels match ``selector``
        (all when None); a string is parsed with :func:`kcontrol.labels.parse` (raising
        :class:`kcontrol.labels.SelectorError` when malformed). Uses the namespace index, so
        it costs O(objects in namespace) - or, when the cache carries a
        :func:`~kcontrol.informers.label_index` on a label the selector requires one value
        of, O(objects with that value)."""
        self._check_namespace(namespace)
        if isinstance(selector, str):
            selector = labels.parse(selector)
        items = None if selector is None else self._by_required_label(namespace, selector)
        if items is None:
            if namespace and self._resource.namespaced:
                items = self._indexer.by_index(NAMESPACE_INDEX, namespace)
            else:
                items = self._indexer.list()
        if selector is None:
            return items
        return [
            obj for obj in items if selector.matches(obj.get("metadata", {}).get("labels") or {})
        ]

    def _by_required_label(
        self, namespace: str | None, selector: LabelSelector
    ) -> builtins.list[Object] | None:
        """The objects of a label index bucket that holds every match of ``selector``, or
        None when no label index applies."""
        if not isinstance(selector, labels.Selector):
            return None
        namespaced = self._resource.namespaced
        if namespaced and not namespace:
            return None
        for index_name in self._indexer.get_indexers():
            if not index_name.startswith(LABEL_INDEX_PREFIX):
                continue
            value = selector.requires_exact_match(index_name[len(LABEL_INDEX_PREFIX) :])
            if value is not None:
                return self._indexer.by_index(
                    index_name, f"{namespace}/{value}" if namespaced else value
                )
        return None

    def by_index(self, index_name: str, value: str) -> builtins.list[Object]:
        """Objects whose ``index_name`` index function produced ``value``."""
        return self._indexer.by_index(index_name, value)
