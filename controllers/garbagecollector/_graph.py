"""The dependency graph: one node per object the collector knows of, keyed by uid.

Upstream's ``graph.go``. A node is an object's identity (``apiVersion``, ``kind``,
``namespace``, ``name``, ``uid``), the owner references it carries, and the nodes that name it
as an owner (its dependents). A **virtual** node stands for an owner that some dependent names
but that no informer has shown yet: its identity is the dependent's reference to it (with the
dependent's namespace), and the collector checks it with a live GET.

Only the graph builder's one task writes the graph (:mod:`._graph_builder`); the workers read
it between their awaits, so no lock is needed (one event loop). A node's ``owners`` are the
owner references of the object as last observed, shared with the informer's cache (never
mutated). Memory: slots, interned strings, and no dependents set until there is a dependent.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

__all__ = [
    "FINALIZER_DELETE_DEPENDENTS",
    "FINALIZER_ORPHAN_DEPENDENTS",
    "Node",
    "ObjectReference",
    "OwnerRef",
    "OwnerReference",
    "UIDToNode",
    "compact_owner_references",
    "reference_matches",
]

FINALIZER_DELETE_DEPENDENTS = "foregroundDeletion"
"""The finalizer of an owner deleted in the foreground (``metav1.FinalizerDeleteDependents``)."""

FINALIZER_ORPHAN_DEPENDENTS = "orphan"
"""The finalizer of an owner whose dependents are orphaned
(``metav1.FinalizerOrphanDependents``)."""

OwnerReference = Mapping[str, Any]
"""One entry of ``metadata.ownerReferences``: a dict as the API serves it, or an
:class:`OwnerRef` as the monitors cache it."""

_FIELDS = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
_INDEX = {field: i for i, field in enumerate(_FIELDS)}


class OwnerRef(Mapping[str, Any]):
    """An owner reference as the monitors cache it: read-only, compared by value, and shared
    by every cached object that carries an equal one (the pods of one ReplicaSet carry the
    same reference) - made by :func:`compact_owner_references` only. Reads as the dict the API
    serves (``ref["uid"]``, ``ref.get("blockOwnerDeletion")``); fields the API left out are
    absent."""

    __slots__ = ("__weakref__", "_values")

    _values: tuple[Any, ...]

    def __getitem__(self, key: str) -> Any:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        # Mapping.get through __getitem__ and KeyError costs the graph's hot path thrice this.
        index = _INDEX.get(key)
        value = None if index is None else self._values[index]
        return default if value is None else value

    def __iter__(self) -> Iterator[str]:
        return (f for f, v in zip(_FIELDS, self._values, strict=True) if v is not None)

    def __len__(self) -> int:
        return sum(v is not None for v in self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OwnerRef):
            return self._values == other._values
        return Mapping.__eq__(self, other)

    def __hash__(self) -> int:
        return hash(self._values)

    def __repr__(self) -> str:
        return f"OwnerRef({dict(self)!r})"


_shared_refs: weakref.WeakValueDictionary[tuple[Any, ...], OwnerRef] = weakref.WeakValueDictionary()


def compact_owner_references(refs: Any) -> tuple[OwnerRef, ...]:
    """``metadata.ownerReferences`` as the monitors cache it: a tuple of shared
    :class:`OwnerRef` (an equal reference seen before and still cached is reused; one no
    cached object carries any more is freed)."""
    if not isinstance(refs, list | tuple):
        return ()
    compact = []
    for ref in refs:
        if ref.__class__ is not dict and not isinstance(ref, Mapping):
            continue
        get = ref.get
        values = (
            get("apiVersion"),
            get("kind"),
            get("name"),
            get("uid"),
            get("controller"),
            get("blockOwnerDeletion"),
        )
        shared = _shared_refs.get(values)
        if shared is None:
            # apiVersion and kind interned (few, and repeated across owners); a name or uid
            # is one owner's, so an interned copy would only add a table entry.
            api_version, kind = values[0], values[1]
            kept = (
                sys.intern(api_version) if api_version.__class__ is str else api_version,
                sys.intern(kind) if kind.__class__ is str else kind,
                *values[2:],
            )
            shared = OwnerRef.__new__(OwnerRef)
            shared._values = kept
            _shared_refs[kept] = shared
        compact.append(shared)
    return tuple(compact)


class ObjectReference(NamedTuple):
    """An object's coordinates: upstream's ``objectReference`` (an owner reference's
    ``apiVersion``/``kind``/``name``/``uid``, plus the namespace). ``namespace`` is ``""`` for a
    cluster-scoped object. Two references are equal when every field is."""

    api_version: str
    kind: str
    name: str
    uid: str
    namespace: str = ""

    @classmethod
    def of_owner(cls, ref: OwnerReference, namespace: str = "") -> ObjectReference:
        """The coordinates an owner reference names, placed in ``namespace``."""
        return cls(
            sys.intern(str(ref.get("apiVersion", ""))),
            sys.intern(str(ref.get("kind", ""))),
            str(ref.get("name", "")),
            str(ref.get("uid", "")),
            sys.intern(namespace),
        )

    def __str__(self) -> str:
        return (
            f"[{self.api_version}/{self.kind}, namespace: {self.namespace}, "
            f"name: {self.name}, uid: {self.uid}]"
        )


def reference_matches(ref: OwnerReference, identity: ObjectReference) -> bool:
    """Whether an owner reference names ``identity`` (upstream's
    ``ownerReferenceMatchesCoordinates``: uid, name, kind and apiVersion; not the namespace)."""
    return (
        ref.get("uid") == identity.uid
        and ref.get("name") == identity.name
        and ref.get("kind") == identity.kind
        and ref.get("apiVersion") == identity.api_version
    )


class Node:
    """An object in the graph; see the module docstring.

    ``being_deleted``: the object has a deletionTimestamp (one way: never cleared).
    ``deleting_dependents``: it is being deleted in the foreground (deletionTimestamp and the
    ``foregroundDeletion`` finalizer). ``virtual``: made for an owner reference, not seen by
    an informer; ``observed`` turns True once an informer shows the object (upstream's
    ``virtual`` and ``virtualLock`` pair, which never turns back).
    """

    __slots__ = (
        "_dependents",
        "being_deleted",
        "deleting_dependents",
        "identity",
        "observed",
        "owners",
        "virtual",
    )

    def __init__(
        self,
        identity: ObjectReference,
        owners: Sequence[OwnerReference] = (),
        *,
        virtual: bool = False,
        being_deleted: bool = False,
        deleting_dependents: bool = False,
    ) -> None:
        self.identity = identity
        self.owners: Sequence[OwnerReference] = owners
        self.virtual = virtual
        self.observed = not virtual
        self.being_deleted = being_deleted
        self.deleting_dependents = deleting_dependents
        self._dependents: set[Node] | None = None  # None until the first dependent

    def __repr__(self) -> str:
        return f"Node({self.identity}{', virtual' if self.virtual else ''})"

    def clone(self) -> Node:
        """A copy with the same owners and dependents (the set copied), to change the identity
        of without touching the node workers may hold."""
        copy = Node(
            self.identity,
            self.owners,
            virtual=self.virtual,
            being_deleted=self.being_deleted,
            deleting_dependents=self.deleting_dependents,
        )
        copy.observed = self.observed
        if self._dependents:
            copy._dependents = set(self._dependents)
        return copy

    # -- dependents ----------------------------------------------------------------------------

    def add_dependent(self, dependent: Node) -> None:
        if self._dependents is None:
            self._dependents = set()
        self._dependents.add(dependent)

    def delete_dependent(self, dependent: Node) -> None:
        if self._dependents is not None:
            self._dependents.discard(dependent)
            if not self._dependents:
                self._dependents = None

    def dependents(self) -> list[Node]:
        """A snapshot of the dependents."""
        return list(self._dependents or ())

    def dependents_length(self) -> int:
        return len(self._dependents or ())

    def blocking_dependents(self) -> list[Node]:
        """The dependents whose reference to this node has ``blockOwnerDeletion: true``: the
        ones a foreground deletion waits for."""
        return [
            dep
            for dep in self._dependents or ()
            if any(
                r.get("uid") == self.identity.uid and r.get("blockOwnerDeletion") is True
                for r in dep.owners
            )
        ]

    def owner_uids(self) -> Iterator[str]:
        return (str(r.get("uid", "")) for r in self.owners)


class UIDToNode:
    """The graph's index: uid -> node. Written only by the graph builder."""

    __slots__ = ("_nodes",)

    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}

    def read(self, uid: str) -> Node | None:
        return self._nodes.get(uid)

    def write(self, node: Node) -> None:
        self._nodes[node.identity.uid] = node

    def delete(self, uid: str) -> None:
        self._nodes.pop(uid, None)

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(list(self._nodes.values()))
