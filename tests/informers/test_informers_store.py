"""Keys, Store and Indexer (client-go store_test.go / index_test.go / thread_safe_store_test.go)."""

from __future__ import annotations

from typing import Any

import pytest
from informers_fakes import node, pod

from kcontrol.client import Object
from kcontrol.informers import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    IndexedStore,
    meta_namespace_index_func,
    meta_namespace_key_func,
    split_meta_namespace_key,
)

# -- keys ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        pytest.param(pod("web", namespace="prod"), "prod/web", id="namespaced"),
        pytest.param(node("node-1"), "node-1", id="cluster-scoped"),
        pytest.param({"metadata": {"name": "x", "namespace": ""}}, "x", id="empty-namespace"),
        pytest.param(DeletedFinalStateUnknown("ns/gone", pod("gone")), "ns/gone", id="tombstone"),
    ],
)
def test_meta_namespace_key_func(obj: Any, key: str) -> None:
    assert meta_namespace_key_func(obj) == key


@pytest.mark.parametrize("obj", [{}, {"metadata": {}}, None, "text"], ids=repr)
def test_meta_namespace_key_func_rejects_objects_without_a_name(obj: Any) -> None:
    with pytest.raises(ValueError, match=r"metadata\.name"):
        meta_namespace_key_func(obj)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        pytest.param("ns/name", ("ns", "name"), id="namespaced"),
        pytest.param("name", ("", "name"), id="cluster-scoped"),
        pytest.param("/name", ("", "name"), id="leading-slash"),
    ],
)
def test_split_meta_namespace_key(key: str, expected: tuple[str, str]) -> None:
    assert split_meta_namespace_key(key) == expected


@pytest.mark.parametrize("key", ["a/b/c", "", "ns/"])
def test_split_meta_namespace_key_rejects_bad_keys(key: str) -> None:
    with pytest.raises(ValueError, match="unexpected key format"):
        split_meta_namespace_key(key)


# -- store ------------------------------------------------------------------------------------


def test_store_add_get_update_delete() -> None:
    store = IndexedStore()
    a1, b = pod("a", 1), pod("b", 1, namespace="other")
    store.add(a1)
    store.add(b)
    assert len(store) == 2
    assert store.get(pod("a")) is a1
    assert store.get_by_key("other/b") is b
    assert "default/a" in store

    a2 = pod("a", 2)
    store.update(a2)
    assert store.get_by_key("default/a") is a2
    assert sorted(store.list_keys()) == ["default/a", "other/b"]
    assert {id(o) for o in store.list()} == {id(a2), id(b)}

    store.delete(pod("a"))
    assert store.get_by_key("default/a") is None
    store.delete(pod("never-there"))  # ignored
    assert store.list_keys() == ["other/b"]


def test_store_delete_by_tombstone() -> None:
    store = IndexedStore()
    store.add(pod("a"))
    store.delete(DeletedFinalStateUnknown("default/a", pod("a")))
    assert len(store) == 0
    assert store.by_index(NAMESPACE_INDEX, "default") == []


def test_store_replace_swaps_content_and_rebuilds_indexes() -> None:
    store = IndexedStore({"color": _label_index("color")})
    store.add(pod("old", labels={"color": "red"}))
    fresh = [pod("x", labels={"color": "blue"}), pod("y", namespace="ns2")]
    store.replace(fresh, "42")
    assert sorted(store.list_keys()) == ["default/x", "ns2/y"]
    assert store.by_index("color", "red") == []
    assert _keys(store.by_index("color", "blue")) == ["default/x"]
    assert _keys(store.by_index(NAMESPACE_INDEX, "ns2")) == ["ns2/y"]


def test_store_never_copies_objects() -> None:
    store = IndexedStore()
    obj = pod("a")
    store.add(obj)
    assert store.get_by_key("default/a") is obj
    assert store.list()[0] is obj
    assert store.by_index(NAMESPACE_INDEX, "default")[0] is obj


# -- indexer ---------------------------------------------------------------------------------


def _label_index(label: str) -> Any:
    def index(obj: Object) -> list[str]:
        value = (obj["metadata"].get("labels") or {}).get(label)
        return [value] if value else []

    return index


def _owners(obj: Object) -> list[str]:
    return list(obj.get("owners", []))


def _keys(objs: list[Object]) -> list[str]:
    return sorted(meta_namespace_key_func(o) for o in objs)


def test_namespace_index_is_built_in() -> None:
    store = IndexedStore()
    store.add(pod("a", namespace="ns1"))
    store.add(pod("b", namespace="ns1"))
    store.add(pod("c", namespace="ns2"))
    store.add(node("n1"))
    assert NAMESPACE_INDEX in store.get_indexers()
    assert _keys(store.by_index(NAMESPACE_INDEX, "ns1")) == ["ns1/a", "ns1/b"]
    assert sorted(store.list_index_func_values(NAMESPACE_INDEX)) == ["ns1", "ns2"]
    assert meta_namespace_index_func(node("n1")) == [], "cluster-scoped objects take no room"


def test_multi_valued_index_and_index_lookups() -> None:
    store = IndexedStore({"owner": _owners})
    store.add(pod("a", owners=["rs1", "rs2"]))
    store.add(pod("b", owners=["rs2"]))
    store.add(pod("c", owners=[]))
    assert _keys(store.by_index("owner", "rs2")) == ["default/a", "default/b"]
    assert sorted(store.index_keys("owner", "rs1")) == ["default/a"]
    assert _keys(store.index("owner", pod("probe", owners=["rs1"]))) == ["default/a"]
    assert _keys(store.index("owner", pod("probe", owners=["rs1", "rs2"]))) == [
        "default/a",
        "default/b",
    ]
    assert sorted(store.list_index_func_values("owner")) == ["rs1", "rs2"]


def test_update_moves_index_entries_and_drops_empty_values() -> None:
    store = IndexedStore({"color": _label_index("color")})
    store.add(pod("a", 1, labels={"color": "red"}))
    store.update(pod("a", 2, labels={"color": "blue"}))
    assert store.by_index("color", "red") == []
    assert "red" not in store.list_index_func_values("color"), "no empty index sets linger"
    assert _keys(store.by_index("color", "blue")) == ["default/a"]
    store.delete(pod("a"))
    assert store.list_index_func_values("color") == []


def test_add_indexers_rejects_an_existing_name() -> None:
    store = IndexedStore({"color": _label_index("color")})
    with pytest.raises(ValueError, match="indexer conflict: color"):
        store.add_indexers({"color": _label_index("other"), "fresh": _owners})
    with pytest.raises(ValueError, match="indexer conflict: namespace"):
        store.add_indexers({NAMESPACE_INDEX: meta_namespace_index_func})
    assert "fresh" not in store.get_indexers(), "a conflicting call adds nothing"


def test_add_indexers_indexes_existing_items_at_once() -> None:
    store = IndexedStore()
    store.add(pod("a", labels={"tier": "web"}))
    store.add(pod("b", labels={"tier": "db"}))
    store.add_indexers({"tier": _label_index("tier")})
    assert _keys(store.by_index("tier", "web")) == ["default/a"]
    store.add(pod("c", labels={"tier": "web"}))
    assert _keys(store.by_index("tier", "web")) == ["default/a", "default/c"]


def test_unknown_index_name_raises_key_error() -> None:
    store = IndexedStore()
    with pytest.raises(KeyError, match="does not exist"):
        store.by_index("missing", "x")
    with pytest.raises(KeyError):
        store.index_keys("missing", "x")
    with pytest.raises(KeyError):
        store.index("missing", pod("a"))
