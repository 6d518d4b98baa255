"""label_index: an index by one label's value, which Lister.list uses on its own."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from kcontrol import labels
from kcontrol.client import NODES, PODS, Object
from kcontrol.informers import IndexedStore, Lister, label_index

KEY = "pod-template-hash"


def _obj(name: str, namespace: str | None, **labels_: str) -> Object:
    metadata: dict[str, Any] = {"name": name, "labels": dict(labels_)}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"metadata": metadata}


def test_index_values() -> None:
    _, index_func = label_index(KEY)
    assert index_func(_obj("a", "ns", **{KEY: "h1"})) == ["ns/h1"]
    assert index_func(_obj("n", None, **{KEY: "h1"})) == ["h1"]
    assert index_func(_obj("b", "ns", app="x")) == []
    assert index_func({"metadata": {"name": "c", "namespace": "ns"}}) == []
    assert label_index(KEY)[0] == "label:pod-template-hash"


class _CountingStore(IndexedStore):
    """Records which index buckets were read."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[tuple[str, str]] = []

    def by_index(self, index_name: str, value: str) -> list[Object]:
        self.reads.append((index_name, value))
        return super().by_index(index_name, value)


def _stores() -> tuple[_CountingStore, IndexedStore]:
    indexed, plain = _CountingStore(), IndexedStore()
    indexed.add_indexers(dict([label_index(KEY)]))
    for i, (namespace, value, app) in enumerate(
        itertools.product(("a", "b"), ("h1", "h2", None), ("web", "db", None))
    ):
        extra = {k: v for k, v in ((KEY, value), ("app", app)) if v is not None}
        for store in (indexed, plain):
            store.add(_obj(f"p{i}", namespace, **extra))
    return indexed, plain


SELECTORS = [
    "pod-template-hash=h1",
    "pod-template-hash==h2",
    "pod-template-hash in (h1)",
    "pod-template-hash in (h1,h2)",
    "pod-template-hash!=h1",
    "pod-template-hash=h1,app=web",
    "app=web,pod-template-hash=h2",
    "pod-template-hash=h1,pod-template-hash!=h1",
    "pod-template-hash=missing",
    "app=db",
    "!pod-template-hash",
    "",
]


@pytest.mark.parametrize("text", SELECTORS)
@pytest.mark.parametrize("namespace", ["a", "b", None])
def test_same_answers_as_without_the_index(text: str, namespace: str | None) -> None:
    indexed, plain = _stores()
    selector = labels.parse(text)
    got = Lister(indexed, PODS).list(namespace, selector)
    want = Lister(plain, PODS).list(namespace, selector)
    assert sorted(o["metadata"]["name"] for o in got) == sorted(o["metadata"]["name"] for o in want)


def test_a_selector_requiring_one_value_reads_only_its_bucket() -> None:
    indexed, _ = _stores()
    found = Lister(indexed, PODS).list("a", labels.parse("pod-template-hash=h1,app=web"))
    assert [o["metadata"]["labels"] for o in found] == [{KEY: "h1", "app": "web"}]
    assert indexed.reads == [("label:pod-template-hash", "a/h1")]

    indexed.reads.clear()
    Lister(indexed, PODS).list("a", labels.parse("pod-template-hash in (h1,h2)"))
    assert indexed.reads == [("namespace", "a")]  # two values: the namespace it is
    indexed.reads.clear()
    Lister(indexed, PODS).list(None, labels.parse("pod-template-hash=h1"))
    assert indexed.reads == []  # all namespaces: the whole cache


def test_cluster_scoped_objects_are_indexed_by_value_alone() -> None:
    store = _CountingStore()
    store.add_indexers(dict([label_index("zone")]))
    for name, zone in (("n1", "z1"), ("n2", "z2"), ("n3", "z1")):
        store.add(_obj(name, None, zone=zone))
    found = Lister(store, NODES).list(None, labels.parse("zone=z1"))
    assert sorted(o["metadata"]["name"] for o in found) == ["n1", "n3"]
    assert store.reads == [("label:zone", "z1")]
