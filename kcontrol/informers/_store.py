"""The informer cache: a keyed store of objects with secondary indexes.

This is client-go's ``Store`` / ``Indexer`` pair and its ``threadSafeMap`` implementation.
There are no locks: every method is synchronous, so on one event loop each call sees and
leaves the store in a consistent state (a ``list()`` never holds two entries for one key,
and index lookups always agree with the items).

Objects are stored as given, never copied. Everything read from a store is shared with every
other reader (and with event handlers): treat it as read-only, and deep-copy before changing
it.

Memory: besides the object itself the store keeps one dict slot keyed by the object's key
string, plus one set entry (a reference to the same key string) per index the object appears
in. Old index values are recomputed from the old object on update rather than remembered, so
there is no per-object bookkeeping beyond those entries.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from kcontrol.client import Object
from kcontrol.informers._keys import KeyFunc, meta_namespace_key_func

__all__ = [
    "LABEL_INDEX_PREFIX",
    "NAMESPACE_INDEX",
    "IndexFunc",
    "IndexedStore",
    "Indexer",
    "Store",
    "label_index",
    "meta_namespace_index_func",
]

IndexFunc = Callable[[Object], list[str]]
"""Computes the index values of an object (zero, one or many)."""

NAMESPACE_INDEX = "namespace"
"""Name of the built-in index of objects by ``metadata.namespace``."""


def meta_namespace_index_func(obj: Object) -> list[str]:
    """Index values for :data:`NAMESPACE_INDEX`: the object's namespace.

    Cluster-scoped objects have none, so they take no room in the index.
    """
    namespace = obj.get("metadata", {}).get("namespace")
    return [namespace] if namespace else []


LABEL_INDEX_PREFIX = "label:"
"""Index names starting with this are label indexes (:func:`label_index`), which
:meth:`~kcontrol.informers.Lister.list` uses on its own."""


def label_index(key: str) -> tuple[str, IndexFunc]:
    """The name and function of an index of objects by the value of their label ``key``
    (``"<namespace>/<value>"``, or ``"<value>"`` for cluster-scoped objects; objects without
    the label take no room in it).

    Once an informer carries it (``informer.add_indexers(dict([label_index(key)]))``), a
    :meth:`Lister.list <kcontrol.informers.Lister.list>` in one namespace whose selector
    requires one value of ``key`` reads that value's objects instead of the whole
    namespace's, with the same result. Worth it for a label that splits a namespace into
    many small groups and is selected on often, as ``pod-template-hash`` is.
    """

    def by_label(obj: Object) -> list[str]:
        metadata = obj.get("metadata") or {}
        value = (metadata.get("labels") or {}).get(key)
        if value is None:
            return []
        namespace = metadata.get("namespace")
        return [f"{namespace}/{value}" if namespace else value]

    return LABEL_INDEX_PREFIX + key, by_label


class Store(Protocol):
    """A keyed collection of objects; see the module docstring for the sharing rules.

    ``add`` and ``update`` both store the object under its key (replacing any previous one);
    ``delete`` accepts the object or a :class:`DeletedFinalStateUnknown` and ignores unknown
    keys. ``get`` looks up the object's key. ``replace`` swaps the whole content at once.
    """

    def add(self, obj: Object) -> None: ...

    def update(self, obj: Object) -> None: ...

    def delete(self, obj: Any) -> None: ...

    def get(self, obj: Any) -> Object | None: ...

    def get_by_key(self, key: str) -> Object | None: ...

    def list(self) -> builtins.list[Object]: ...

    def list_keys(self) -> builtins.list[str]: ...

    def replace(self, items: Iterable[Object], resource_version: str = "") -> None: ...

    def __len__(self) -> int: ...


class Indexer(Store, Protocol):
    """A :class:`Store` with named secondary indexes.

    An index function maps an object to index values; ``by_index(name, value)`` returns the
    objects that produced ``value``. Indexes are kept current on every change.
    """

    def index(self, index_name: str, obj: Object) -> builtins.list[Object]:
        """Objects sharing at least one of ``obj``'s index values."""
        ...

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]: ...

    def list_index_func_values(self, index_name: str) -> builtins.list[str]: ...

    def by_index(self, index_name: str, value: str) -> builtins.list[Object]: ...

    def get_indexers(self) -> Mapping[str, IndexFunc]: ...

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes; an existing name raises :class:`ValueError`. Existing items are
        indexed at once."""
        ...


class IndexedStore:
    """The :class:`Indexer` implementation; the ``namespace`` index is always present.

    ``indexers`` are added on top of :data:`NAMESPACE_INDEX`. Unknown index names raise
    :class:`KeyError`. Index functions must be pure and cheap: they run on every change.
    """

    def __init__(
        self,
        indexers: Mapping[str, IndexFunc] | None = None,
        *,
        key_func: KeyFunc = meta_namespace_key_func,
    ) -> None:
        self._key_func = key_func
        self._items: dict[str, Object] = {}
        self._indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: meta_namespace_index_func}
        # Invariant: for every index name, value -> the (non-empty) set of keys of the items
        # whose index function returns that value. Empty sets are removed.
        self._indices: dict[str, dict[str, set[str]]] = {NAMESPACE_INDEX: {}}
        if indexers:
            self.add_indexers(indexers)

    # -- Store ---------------------------------------------------------------------------

    def add(self, obj: Object) -> None:
        self._put(self._key_func(obj), obj)

    def update(self, obj: Object) -> None:
        self._put(self._key_func(obj), obj)

    def delete(self, obj: Any) -> None:
        key = self._key_func(obj)
        old = self._items.pop(key, None)
        if old is not None:
            self._reindex(key, old, None)

    def get(self, obj: Any) -> Object | None:
        return self._items.get(self._key_func(obj))

    def get_by_key(self, key: str) -> Object | None:
        return self._items.get(key)

    def list(self) -> builtins.list[Object]:
        return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        return list(self._items)

    def replace(self, items: Iterable[Object], resource_version: str = "") -> None:
        """Replace the whole content; ``resource_version`` is accepted for parity and unused."""
        key_func = self._key_func
        self._items = {key_func(obj): obj for obj in items}
        for name in self._indices:
            self._indices[name] = self._build_index(self._indexers[name])

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    # -- Indexer -------------------------------------------------------------------------

    def index(self, index_name: str, obj: Object) -> builtins.list[Object]:
        index_func = self._indexer(index_name)
        index = self._indices[index_name]
        keys: set[str] = set()
        for value in index_func(obj):
            keys.update(index.get(value, ()))
        return [self._items[key] for key in keys]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        self._indexer(index_name)
        return list(self._indices[index_name].get(value, ()))

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        self._indexer(index_name)
        return list(self._indices[index_name])

    def by_index(self, index_name: str, value: str) -> builtins.list[Object]:
        self._indexer(index_name)
        items = self._items
        return [items[key] for key in self._indices[index_name].get(value, ())]

    def get_indexers(self) -> Mapping[str, IndexFunc]:
        return dict(self._indexers)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        conflicts = sorted(set(indexers) & set(self._indexers))
        if conflicts:
            raise ValueError(f"indexer conflict: {', '.join(conflicts)}")
        for name, index_func in indexers.items():
            self._indexers[name] = index_func
            self._indices[name] = self._build_index(index_func)

    # -- internals -----------------------------------------------------------------------

    def _indexer(self, index_name: str) -> IndexFunc:
        try:
            return self._indexers[index_name]
        except KeyError:
            raise KeyError(f"index with name {index_name!r} does not exist") from None

    def _put(self, key: str, obj: Object) -> None:
        old = self._items.get(key)
        self._items[key] = obj
        self._reindex(key, old, obj)

    def _reindex(self, key: str, old: Object | None, new: Object | None) -> None:
        for name, index_func in self._indexers.items():
            old_values = index_func(old) if old is not None else []
            new_values = index_func(new) if new is not None else []
            if old_values == new_values:  # the common case: an update that moves nothing
                continue
            index = self._indices[name]
            for value in old_values:
                if value in new_values:
                    continue
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in new_values:
                if value not in old_values:
                    index.setdefault(value, set()).add(key)

    def _build_index(self, index_func: IndexFunc) -> dict[str, set[str]]:
        index: dict[str, set[str]] = {}
        for key, obj in self._items.items():
            for value in index_func(obj):
                keys = index.get(value)
                if keys is None:
                    index[value] = {key}
                else:
                    keys.add(key)
        return index
