"""SharedInformerFactory sharing and running; Lister reads; the package's public surface."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from informers_fakes import ScriptedReader, node, page, pod, running, until

import kcontrol.informers
from kcontrol.client import CONFIGMAPS, DEPLOYMENTS, NAMESPACES, PODS, SECRETS, Object, Resource
from kcontrol.clock import FakeClock
from kcontrol.errors import NotFound, OutsideCacheScope
from kcontrol.informers import CacheScope, IndexedStore, Lister, SharedInformerFactory
from kcontrol.labels import SelectorError


def by_resource(pages: Mapping[str, Object]) -> Any:
    def answer(params: dict[str, Any]) -> Object:
        resource: Resource = params["resource"]
        return pages[resource.plural]

    return answer


# -- factory -----------------------------------------------------------------------------------


def test_factory_shares_one_informer_per_collection() -> None:
    factory = SharedInformerFactory(ScriptedReader(), namespace="team")
    pods = factory.for_resource(PODS)
    assert factory.for_resource(PODS) is pods
    assert factory.for_resource(PODS, namespace="team") is pods
    assert pods.namespace == "team", "the factory's namespace is the default"

    with pytest.raises(OutsideCacheScope, match="holds namespace 'team' only"):
        factory.for_resource(PODS, namespace="other")  # never wider than the factory's
    assert factory.for_resource(PODS, label_selector="app=web") is not pods
    assert factory.for_resource(PODS, field_selector="spec.nodeName=n1") is not pods
    assert factory.for_resource(PODS, label_selector="") is pods, "empty selector = none"
    assert factory.for_resource(DEPLOYMENTS) is not pods

    namespaces = factory.for_resource(NAMESPACES, namespace="ignored")
    assert namespaces.namespace is None, "cluster-scoped resources ignore namespaces"
    assert factory.for_resource(NAMESPACES) is namespaces
    assert len(factory.informers()) == 5


def test_a_scope_narrows_the_informer_of_its_resource_only() -> None:
    factory = SharedInformerFactory(
        ScriptedReader(),
        scopes={
            CONFIGMAPS: CacheScope(
                namespaces=("ops",),
                label_selector="app=registry",
                field_selector="metadata.name!=x",
            )
        },
    )
    maps = factory.for_resource(CONFIGMAPS)
    assert maps.namespace == "ops"
    assert maps._list_options.label_selector == "app=registry"
    assert maps._list_options.field_selector == "metadata.name!=x"
    assert factory.for_resource(CONFIGMAPS, namespace="ops") is maps
    narrower = factory.for_resource(CONFIGMAPS, label_selector="tier=a")
    assert narrower._list_options.label_selector == "app=registry,tier=a", "both apply"
    with pytest.raises(OutsideCacheScope, match="configmaps of namespace 'app'"):
        factory.for_resource(CONFIGMAPS, namespace="app")
    secrets = factory.for_resource(SECRETS, namespace="app")
    assert secrets.namespace == "app", "other resources are not narrowed"
    assert factory.for_resource(SECRETS).namespace is None


def test_a_scope_cannot_leave_the_factory_namespace() -> None:
    with pytest.raises(ValueError, match=r"\['ops'\]\) is outside the factory's namespaces"):
        SharedInformerFactory(
            ScriptedReader(), namespace="team", scopes={CONFIGMAPS: CacheScope(namespaces=("ops",))}
        )


def test_a_factory_of_several_namespaces() -> None:
    factory = SharedInformerFactory(ScriptedReader(), namespaces=("a", "b"))
    pods = factory.for_resource(PODS)
    assert (pods.namespace, pods.namespaces) == (None, ("a", "b"))
    assert factory.for_resource(PODS, namespace="a").namespaces == ("a",), "a narrower one"
    with pytest.raises(OutsideCacheScope, match="holds namespace 'a', 'b' only"):
        factory.for_resource(PODS, namespace="c")
    narrowed = SharedInformerFactory(
        ScriptedReader(), namespaces=("a", "b"), scopes={SECRETS: CacheScope(namespaces=("b",))}
    )
    assert narrowed.for_resource(SECRETS).namespaces == ("b",)
    assert narrowed.for_resource(NAMESPACES).namespaces == (), "cluster-scoped"


def test_a_lister_of_one_namespace_refuses_reads_elsewhere() -> None:
    store = IndexedStore()
    store.add(pod("a", namespace="team"))
    lister = Lister(store, PODS, "team")
    assert lister.get("team", "a")["metadata"]["name"] == "a"
    assert [p["metadata"]["name"] for p in lister.list()] == ["a"]
    assert [p["metadata"]["name"] for p in lister.list("team")] == ["a"]
    with pytest.raises(NotFound):
        lister.get("team", "b")
    with pytest.raises(OutsideCacheScope, match="namespace 'other' are not cached"):
        lister.get("other", "a")
    with pytest.raises(OutsideCacheScope):
        lister.list("other")
    assert Lister(store, PODS).list("other") == [], "a lister of every namespace just has none"


async def test_factory_runs_informers_created_before_and_after_start() -> None:
    clock = FakeClock()
    reader = ScriptedReader(
        clock=clock,
        list_func=by_resource({"pods": page([pod("a")], 10), "deployments": page([pod("d")], 11)}),
    )
    factory = SharedInformerFactory(reader, clock=clock)
    pods = factory.for_resource(PODS)
    async with running(factory.run()):
        assert await factory.wait_for_cache_sync() == {PODS: True}
        deployments = factory.for_resource(DEPLOYMENTS)
        assert await factory.wait_for_cache_sync() == {PODS: True, DEPLOYMENTS: True}
        assert deployments.has_started()
        with pytest.raises(RuntimeError, match="already started"):
            await factory.run()
    assert pods.is_stopped() and deployments.is_stopped()
    assert sorted({call["resource"].plural for call in reader.list_calls}) == [
        "deployments",
        "pods",
    ]
    assert [c["namespace"] for c in reader.list_calls] == [None, None]


async def test_factory_passes_selectors_namespace_and_transform() -> None:
    clock = FakeClock()
    reader = ScriptedReader(clock=clock, list_func=lambda params: page([pod("a")], 10))

    def mark(obj: Object) -> Object:
        obj["metadata"]["transformed"] = obj["kind"]
        return obj

    factory = SharedInformerFactory(reader, namespace="team", transform=mark, clock=clock)
    informer = factory.for_resource(PODS, label_selector="app=web", field_selector="x=y")
    async with running(factory.run()):
        await factory.wait_for_cache_sync()
    [call] = reader.list_calls
    assert (call["namespace"], call["label_selector"], call["field_selector"]) == (
        "team",
        "app=web",
        "x=y",
    )
    cached = informer.indexer.get_by_key("default/a")
    assert cached is not None and cached["metadata"]["transformed"] == "Pod"


async def test_factory_lister_reads_the_shared_cache() -> None:
    clock = FakeClock()
    reader = ScriptedReader(clock=clock, list_func=lambda params: page([pod("a")], 10))
    factory = SharedInformerFactory(reader, clock=clock)
    lister = factory.lister(PODS)
    async with running(factory.run()):
        await until(factory.for_resource(PODS).has_synced)
        assert lister.get("default", "a")["metadata"]["name"] == "a"
    assert len(factory.informers()) == 1


# -- lister ------------------------------------------------------------------------------------


class LabelsEqual:
    """A minimal selector: every given label must have the given value."""

    def __init__(self, **wanted: str) -> None:
        self.wanted = wanted

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.wanted.items())


def pod_store() -> IndexedStore:
    store = IndexedStore({"node": lambda obj: [obj["node"]]})
    for name, ns, labels, on in [
        ("web-1", "prod", {"app": "web"}, "n1"),
        ("web-2", "prod", {"app": "web"}, "n2"),
        ("db-1", "prod", {"app": "db"}, "n1"),
        ("web-1", "dev", {"app": "web"}, "n1"),
        ("bare", "dev", None, "n2"),
    ]:
        store.add(pod(name, namespace=ns, labels=labels, node=on))
    return store


def names(objs: list[Object]) -> list[str]:
    return sorted(f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in objs)


def test_lister_get_namespaced_by_namespace_and_name_or_key() -> None:
    lister = Lister(pod_store(), PODS)
    assert lister.get("dev", "web-1")["metadata"]["namespace"] == "dev"
    assert lister.get("prod/web-1")["metadata"]["namespace"] == "prod"
    with pytest.raises(NotFound, match='pods "nope" not found') as caught:
        lister.get("prod", "nope")
    assert caught.value.code == 404
    assert caught.value.details["name"] == "nope"


def test_lister_get_cluster_scoped() -> None:
    store = IndexedStore()
    store.add(node("ns-1"))
    lister = Lister(store, NAMESPACES)
    assert lister.get("ns-1")["metadata"]["name"] == "ns-1"
    assert lister.get("", "ns-1")["metadata"]["name"] == "ns-1"
    with pytest.raises(NotFound, match='namespaces "x" not found'):
        lister.get("x")
    with pytest.raises(NotFound, match=r'deployments\.apps "x" not found'):
        Lister(store, DEPLOYMENTS).get("ns", "x")


def test_lister_list_by_namespace_and_selector() -> None:
    lister = Lister(pod_store(), PODS)
    assert len(lister.list()) == 5
    assert names(lister.list("prod")) == ["prod/db-1", "prod/web-1", "prod/web-2"]
    assert names(lister.list("missing")) == []
    assert names(lister.list(selector=LabelsEqual(app="web"))) == [
        "dev/web-1",
        "prod/web-1",
        "prod/web-2",
    ]
    assert names(lister.list("dev", LabelsEqual(app="web"))) == ["dev/web-1"]
    assert names(lister.list("dev", LabelsEqual())) == ["dev/bare", "dev/web-1"], (
        "an empty selector matches objects without labels"
    )


def test_lister_by_index() -> None:
    lister = Lister(pod_store(), PODS)
    assert names(lister.by_index("node", "n2")) == ["dev/bare", "prod/web-2"]
    assert names(lister.by_index("namespace", "dev")) == ["dev/bare", "dev/web-1"]


# -- public surface ------------------------------------------------------------------------------


def test_public_surface_is_deliberate() -> None:
    assert sorted(kcontrol.informers.__all__) == sorted(
        [
            "LABEL_INDEX_PREFIX",
            "MINIMUM_RESYNC_PERIOD",
            "NAMESPACE_INDEX",
            "BackoffManager",
            "CacheReader",
            "CacheScope",
            "DeletedFinalStateUnknown",
            "ExponentialBackoff",
            "InactivityTimeoutError",
            "IndexFunc",
            "IndexedStore",
            "Indexer",
            "KeyFunc",
            "LabelSelector",
            "Lister",
            "Reflector",
            "ReflectorOptions",
            "ReflectorStore",
            "ResourceEventHandler",
            "ResourceEventHandlerFuncs",
            "ResourceEventHandlerRegistration",
            "SharedIndexInformer",
            "SharedInformerFactory",
            "Store",
            "TransformFunc",
            "WatchErrorHandler",
            "chain_transforms",
            "decoding_list_items_with",
            "deleted_object",
            "dropping_managed_fields",
            "intern_strings",
            "label_index",
            "strip_managed_fields",
            "meta_namespace_index_func",
            "meta_namespace_key_func",
            "set_gc_freeze_after_sync",
            "split_meta_namespace_key",
            "wait_for_cache_sync",
        ]
    )
    for name in kcontrol.informers.__all__:
        assert getattr(kcontrol.informers, name) is not None
    public = {n for n in vars(kcontrol.informers) if not n.startswith("_")}
    assert public <= set(kcontrol.informers.__all__), "no accidental exports"


def test_lister_parses_string_selectors() -> None:
    store = IndexedStore()
    for name, labels in [("a", {"app": "web", "tier": "fe"}), ("b", {"app": "db"}), ("c", {})]:
        store.add({"metadata": {"namespace": "ns", "name": name, "labels": labels}})
    lister = Lister(store, PODS)
    names = sorted(o["metadata"]["name"] for o in lister.list("ns", "app in (web,db),!tier"))
    assert names == ["b"]
    assert len(lister.list("ns", "")) == 3
    with pytest.raises(SelectorError):
        lister.list("ns", "app in (")
