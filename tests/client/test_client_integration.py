"""ApiClient against a real kube-apiserver (the session's control plane)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.client import (
    CONFIGMAPS,
    DEPLOYMENTS,
    NAMESPACES,
    ApiClient,
    ClientConfig,
    FieldsV1,
    ListOptions,
    PatchType,
    WatchEvent,
    load_config,
)
from kcontrol.envtest import ControlPlane
from kcontrol.errors import (
    AlreadyExists,
    Conflict,
    Invalid,
    NotFound,
    ServerTimeout,
    is_resource_expired,
)

pytestmark = pytest.mark.integration


@pytest.fixture
async def api(control_plane: ControlPlane) -> AsyncIterator[ApiClient]:
    config = ClientConfig.from_kube_configuration(await control_plane.kube_configuration())
    # Single attempts: a "too large resource version" answer (504 with Retry-After: 1, after
    # the apiserver's own 3 s wait) would otherwise be retried 10 times, as client-go does.
    async with ApiClient(config, qps=0, registry=CollectorRegistry(), max_retries=0) as client:
        yield client


def configmap(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"suite": "client"}},
        "data": data,
    }


def deployment(name: str, namespace: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {"name": "main", "image": "registry.k8s.io/pause:3.10"},
                        {"name": "side", "image": "registry.k8s.io/pause:3.10"},
                    ]
                },
            },
        },
    }


async def test_load_config_from_kubeconfig(control_plane: ControlPlane, namespace: str) -> None:
    config = await load_config(kubeconfig=str(control_plane.kubeconfig_path))
    assert config.host == control_plane.host
    async with ApiClient(config, registry=CollectorRegistry()) as client:
        ns = await client.get(NAMESPACES, namespace)
    assert ns["metadata"]["name"] == namespace


async def test_create_get_update_delete(api: ApiClient, namespace: str) -> None:
    created = await api.create(CONFIGMAPS, configmap("a", namespace, k="1"))
    assert created["metadata"]["uid"]
    with pytest.raises(AlreadyExists):
        await api.create(CONFIGMAPS, configmap("a", namespace))

    got = await api.get(CONFIGMAPS, "a", namespace=namespace)
    assert got["data"] == {"k": "1"}

    got["data"]["k"] = "2"
    updated = await api.update(CONFIGMAPS, got)
    assert updated["data"] == {"k": "2"}
    assert updated["metadata"]["resourceVersion"] != got["metadata"]["resourceVersion"]
    with pytest.raises(Conflict):
        await api.update(CONFIGMAPS, got)  # stale resourceVersion

    with pytest.raises(Conflict):
        await api.delete(CONFIGMAPS, "a", namespace=namespace, preconditions={"uid": "wrong"})
    with pytest.raises(Conflict):
        await api.delete(
            CONFIGMAPS,
            "a",
            namespace=namespace,
            preconditions={"resourceVersion": got["metadata"]["resourceVersion"]},
        )
    await api.delete(
        CONFIGMAPS,
        "a",
        namespace=namespace,
        preconditions={
            "uid": updated["metadata"]["uid"],
            "resourceVersion": updated["metadata"]["resourceVersion"],
        },
        propagation_policy="Background",
        grace_period_seconds=0,
    )
    with pytest.raises(NotFound):
        await api.get(CONFIGMAPS, "a", namespace=namespace)


async def test_invalid_object(api: ApiClient, namespace: str) -> None:
    with pytest.raises(Invalid) as info:
        await api.create(CONFIGMAPS, configmap("Not_A_Valid_Name", namespace))
    assert info.value.code == 422


async def test_list_and_list_all(api: ApiClient, namespace: str) -> None:
    for i in range(5):
        await api.create(CONFIGMAPS, configmap(f"cm{i}", namespace))
    page = await api.list(
        CONFIGMAPS, namespace=namespace, options=ListOptions(label_selector="suite=client", limit=2)
    )
    assert len(page["items"]) == 2
    assert page["metadata"]["continue"]
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in page["items"])

    items, rv = await api.list_all(
        CONFIGMAPS,
        namespace=namespace,
        options=ListOptions(label_selector="suite=client"),
        page_size=2,
    )
    assert sorted(i["metadata"]["name"] for i in items) == [f"cm{i}" for i in range(5)]
    assert int(rv) > 0
    none, _ = await api.list_all(
        CONFIGMAPS, namespace=namespace, options=ListOptions(label_selector="suite=other")
    )
    assert none == []


async def test_list_with_transform_decodes_item_by_item(api: ApiClient, namespace: str) -> None:
    for i in range(3):
        await api.create(CONFIGMAPS, configmap(f"cm{i}", namespace, key=str(i)))
    plain = await api.list(CONFIGMAPS, namespace=namespace)
    seen: list[str] = []

    def strip(item: dict[str, Any]) -> dict[str, Any]:
        seen.append(item["kind"])  # kind/apiVersion are filled in before the transform
        item["metadata"].pop("managedFields")
        return item

    page = await api.list(CONFIGMAPS, namespace=namespace, transform=strip)
    assert seen == ["ConfigMap"] * 3
    assert page["metadata"]["resourceVersion"] == plain["metadata"]["resourceVersion"]
    assert page["kind"] == plain["kind"] == "ConfigMapList"
    for item in plain["items"]:
        del item["metadata"]["managedFields"]
    assert page["items"] == plain["items"], "nothing but the transform's change differs"


async def test_field_sets_stay_raw_and_survive_a_write_back(api: ApiClient, namespace: str) -> None:
    await api.patch(
        CONFIGMAPS,
        "owned",
        configmap("owned", namespace, a="1"),
        namespace=namespace,
        patch_type=PatchType.APPLY,
        field_manager="applier",
    )
    got = await api.get(CONFIGMAPS, "owned", namespace=namespace)
    entries = got["metadata"]["managedFields"]
    assert [type(e["fieldsV1"]) for e in entries] == [FieldsV1]
    assert "f:a" in entries[0]["fieldsV1"].to_dict()["f:data"]
    listed = (await api.list(CONFIGMAPS, namespace=namespace))["items"]
    assert listed[0]["metadata"]["managedFields"] == entries, "same bytes from a LIST"
    async with api.watch(
        CONFIGMAPS, namespace=namespace, options=ListOptions(resource_version="0")
    ) as events:
        async for event in events:
            assert event.object["metadata"]["managedFields"] == entries, "and from a watch"
            break

    # PUT the object back with the raw field sets in it: the server takes them as sent.
    got["data"]["b"] = "2"
    updated = await api.update(CONFIGMAPS, got)
    after = {e["manager"]: e["fieldsV1"].to_dict() for e in updated["metadata"]["managedFields"]}
    assert after["applier"] == entries[0]["fieldsV1"].to_dict(), "the applier's set is intact"
    assert "f:b" in after[next(m for m in after if m != "applier")]["f:data"]


async def test_update_status_and_patches(api: ApiClient, namespace: str) -> None:
    created = await api.create(DEPLOYMENTS, deployment("web", namespace))
    created["status"] = {"observedGeneration": 1, "replicas": 0, "conditions": []}
    status = await api.update_status(DEPLOYMENTS, created)
    assert status["status"]["observedGeneration"] == 1

    merged = await api.patch(
        DEPLOYMENTS, "web", {"metadata": {"labels": {"merge": "yes"}}}, namespace=namespace
    )
    assert merged["metadata"]["labels"] == {"merge": "yes"}

    # strategic merge: containers merge by name, so "side" survives
    strategic = await api.patch(
        DEPLOYMENTS,
        "web",
        {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}},
        namespace=namespace,
        patch_type=PatchType.STRATEGIC,
    )
    containers = strategic["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [
        ("main", "busybox"),
        ("side", "registry.k8s.io/pause:3.10"),
    ]

    json_patched = await api.patch(
        DEPLOYMENTS,
        "web",
        [{"op": "replace", "path": "/spec/replicas", "value": 3}],
        namespace=namespace,
        patch_type=PatchType.JSON,
    )
    assert json_patched["spec"]["replicas"] == 3

    status_patched = await api.patch(
        DEPLOYMENTS,
        "web",
        {"status": {"replicas": 7}},
        namespace=namespace,
        subresource="status",
    )
    assert status_patched["status"]["replicas"] == 7


async def test_server_side_apply(api: ApiClient, namespace: str) -> None:
    desired = configmap("applied", namespace, owner="first")
    first = await api.patch(
        CONFIGMAPS,
        "applied",
        desired,
        namespace=namespace,
        patch_type=PatchType.APPLY,
        field_manager="first",
    )
    assert first["data"] == {"owner": "first"}
    managers = {m["manager"] for m in first["metadata"]["managedFields"]}
    assert managers == {"first"}

    contested = configmap("applied", namespace, owner="second")
    with pytest.raises(Conflict):
        await api.patch(
            CONFIGMAPS,
            "applied",
            contested,
            namespace=namespace,
            patch_type=PatchType.APPLY,
            field_manager="second",
        )
    forced = await api.patch(
        CONFIGMAPS,
        "applied",
        contested,
        namespace=namespace,
        patch_type=PatchType.APPLY,
        field_manager="second",
        force=True,
    )
    assert forced["data"] == {"owner": "second"}


async def test_watch_sees_changes_in_order(api: ApiClient, namespace: str) -> None:
    _, rv = await api.list_all(CONFIGMAPS, namespace=namespace)
    seen: list[tuple[str, str, str]] = []

    async def writer() -> None:
        await api.create(CONFIGMAPS, configmap("w", namespace, v="1"))
        await api.patch(CONFIGMAPS, "w", {"data": {"v": "2"}}, namespace=namespace)
        await api.delete(CONFIGMAPS, "w", namespace=namespace)

    async with asyncio.timeout(30):
        async with api.watch(
            CONFIGMAPS,
            namespace=namespace,
            options=ListOptions(resource_version=rv, timeout_seconds=60),
        ) as events:
            write = asyncio.create_task(writer())
            try:
                async for ev in events:
                    if ev.type == "BOOKMARK":
                        continue
                    seen.append((ev.type, ev.object["metadata"]["name"], ev.object["kind"]))
                    if ev.type == "DELETED":
                        break
            finally:
                await write
    assert seen == [
        ("ADDED", "w", "ConfigMap"),
        ("MODIFIED", "w", "ConfigMap"),
        ("DELETED", "w", "ConfigMap"),
    ]


async def test_watch_list_initial_events(api: ApiClient, namespace: str) -> None:
    for i in range(3):
        await api.create(CONFIGMAPS, configmap(f"init{i}", namespace))
    events: list[WatchEvent] = []
    async with asyncio.timeout(30):
        async with api.watch(
            CONFIGMAPS,
            namespace=namespace,
            options=ListOptions(
                send_initial_events=True, resource_version_match="NotOlderThan", timeout_seconds=60
            ),
        ) as stream:
            async for ev in stream:
                events.append(ev)
                annotations = ev.object["metadata"].get("annotations") or {}
                if ev.type == "BOOKMARK" and annotations.get("k8s.io/initial-events-end"):
                    break
    added = sorted(e.object["metadata"]["name"] for e in events if e.type == "ADDED")
    assert added == ["init0", "init1", "init2"]
    assert events[-1].type == "BOOKMARK"


async def test_list_too_new_resource_version(api: ApiClient, namespace: str) -> None:
    _, rv = await api.list_all(CONFIGMAPS, namespace=namespace)
    with pytest.raises(ServerTimeout) as info:
        await api.list(
            CONFIGMAPS,
            namespace=namespace,
            options=ListOptions(
                resource_version=str(int(rv) + 1_000_000), resource_version_match="NotOlderThan"
            ),
        )
    assert is_resource_expired(info.value)
    assert info.value.retry_after == 1.0
