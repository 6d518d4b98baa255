"""FakeClient: the in-memory Client, its object tracker rules, watches, actions and reactors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kcontrol.client import (
    CONFIGMAPS,
    DEPLOYMENTS,
    EVENTS,
    NAMESPACES,
    PODS,
    REPLICASETS,
    Client,
    ListOptions,
    Object,
    PatchType,
    Resource,
    WatchEvent,
)
from kcontrol.clock import FakeClock
from kcontrol.errors import (
    AlreadyExists,
    ApiConnectionError,
    ApiError,
    BadRequest,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    ServerTimeout,
    TooManyRequests,
    is_resource_expired,
)
from kcontrol.testing import Action, FakeClient

WIDGETS = Resource("example.com", "v1", "widgets", "Widget")
CLUSTER_WIDGETS = Resource("example.com", "v1", "clusterwidgets", "ClusterWidget", False)


def pod(name: str, namespace: str = "default", labels: dict[str, str] | None = None) -> Object:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {"containers": []}}


def deployment(name: str = "web", replicas: int = 1, **metadata: Any) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", **metadata},
        "spec": {"replicas": replicas},
        "status": {"replicas": replicas},
    }


def configmap(name: str = "cm", **data: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": data,
    }


def rv(obj: Object) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def drain(events: AsyncIterator[WatchEvent]) -> list[tuple[str, str]]:
    return [(e.type, e.object["metadata"].get("name", "")) async for e in events]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def client(clock: FakeClock) -> FakeClient:
    return FakeClient(clock=clock)


def test_fake_client_is_a_client() -> None:
    fake: Client = FakeClient()
    assert isinstance(fake, FakeClient)


# -- seeding --------------------------------------------------------------------------------


async def test_seed_objects_get_server_fields_without_recording_actions() -> None:
    client = FakeClient([pod("a"), deployment(generation=4), configmap()])
    stored = await client.get(DEPLOYMENTS, "web", namespace="default")
    assert stored["metadata"]["uid"]
    assert stored["metadata"]["creationTimestamp"]
    assert stored["metadata"]["generation"] == 4  # given values are kept
    assert stored["status"] == {"replicas": 1}  # seeds may carry status
    versions = [rv(o) for r in (PODS, DEPLOYMENTS, CONFIGMAPS) for o in client.tracker.objects(r)]
    assert versions == [1, 2, 3]
    assert [str(a) for a in client.actions] == ["get deployments default/web"]


def test_seed_of_unknown_kind_fails_until_registered() -> None:
    widget: Object = {"apiVersion": "example.com/v1", "kind": "Widget"}
    widget["metadata"] = {"name": "w", "namespace": "default"}
    with pytest.raises(LookupError, match="Widget"):
        FakeClient([widget])
    client = FakeClient([widget], resources=[WIDGETS])
    assert [o["metadata"]["name"] for o in client.tracker.objects(WIDGETS)] == ["w"]


def test_seed_of_namespaced_object_needs_a_namespace() -> None:
    with pytest.raises(BadRequest, match="namespace is required"):
        FakeClient([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}])


# -- create ---------------------------------------------------------------------------------


async def test_create_sets_server_fields(client: FakeClient, clock: FakeClock) -> None:
    clock.step(61)
    created = await client.create(PODS, {"metadata": {"name": "a", "namespace": "ns"}})
    meta = created["metadata"]
    assert (created["apiVersion"], created["kind"]) == ("v1", "Pod")
    assert meta["creationTimestamp"] == "2026-01-01T00:01:01Z"
    assert meta["generation"] == 1
    assert meta["resourceVersion"] == client.tracker.resource_version == "1"
    assert len(meta["uid"]) == 36
    assert await client.get(PODS, "a", namespace="ns") == created


async def test_create_ignores_server_owned_fields_from_the_client(client: FakeClient) -> None:
    obj = pod("a")
    obj["metadata"] |= {"uid": "mine", "generation": 7, "deletionTimestamp": "2020-01-01T00:00:00Z"}
    created = await client.create(PODS, obj)
    assert created["metadata"]["uid"] != "mine"
    assert created["metadata"]["generation"] == 1
    assert "deletionTimestamp" not in created["metadata"]


async def test_create_with_generate_name(client: FakeClient) -> None:
    obj = {"metadata": {"generateName": "web-", "namespace": "default"}}
    first = await client.create(PODS, obj)
    second = await client.create(PODS, obj)
    names = {first["metadata"]["name"], second["metadata"]["name"]}
    assert len(names) == 2
    assert all(n.startswith("web-") and len(n) == 9 for n in names)


@pytest.mark.parametrize(
    ("obj", "namespace", "error", "message"),
    [
        pytest.param({"metadata": {"namespace": "d"}}, None, Invalid, "name or generateName",
                     id="no-name"),
        pytest.param({"metadata": {"name": "a"}}, None, BadRequest, "namespace is required",
                     id="no-namespace"),
        pytest.param({"metadata": {"name": "a", "namespace": "x"}}, "y", BadRequest,
                     "does not match", id="namespace-mismatch"),
        pytest.param({"metadata": {"name": "a", "namespace": "d", "resourceVersion": "3"}},
                     None, BadRequest, "resourceVersion should not be set", id="preset-rv"),
        pytest.param({"kind": "Deployment", "metadata": {"name": "a", "namespace": "d"}}, None,
                     BadRequest, "request is for v1/Pod", id="wrong-kind"),
        pytest.param({"metadata": {"name": "a", "namespace": "d"}, "spec": {"x": 1j}}, None,
                     BadRequest, "not valid JSON", id="not-json"),
    ],
)  # fmt: skip
async def test_create_errors(
    client: FakeClient, obj: Object, namespace: str | None, error: type[ApiError], message: str
) -> None:
    with pytest.raises(error, match=message):
        await client.create(PODS, obj, namespace=namespace)


async def test_create_existing_name_is_already_exists(client: FakeClient) -> None:
    await client.create(PODS, pod("a"))
    with pytest.raises(AlreadyExists) as caught:
        await client.create(PODS, pod("a"))
    assert caught.value.code == 409
    assert caught.value.message == 'pods "a" already exists'
    assert caught.value.details == {"name": "a", "group": "", "kind": "pods"}
    await client.create(PODS, pod("a", namespace="other"))  # names are per namespace


async def test_create_drops_status_only_with_a_status_subresource(client: FakeClient) -> None:
    created = await client.create(DEPLOYMENTS, deployment())
    assert "status" not in created
    client.register(WIDGETS)
    widget = {"metadata": {"name": "w", "namespace": "d"}, "status": {"phase": "x"}}
    assert (await client.create(WIDGETS, widget))["status"] == {"phase": "x"}


async def test_cluster_scoped_objects_have_no_namespace(client: FakeClient) -> None:
    created = await client.create(NAMESPACES, {"metadata": {"name": "ns", "namespace": "x"}})
    assert "namespace" not in created["metadata"]
    assert (await client.get(NAMESPACES, "ns", namespace="ignored"))["metadata"]["name"] == "ns"


async def test_returned_and_passed_objects_are_copies(client: FakeClient) -> None:
    obj = pod("a", labels={"app": "web"})
    created = await client.create(PODS, obj)
    obj["metadata"]["labels"]["app"] = "changed-by-caller"
    created["metadata"]["labels"]["app"] = "changed-by-caller"
    fetched = await client.get(PODS, "a", namespace="default")
    fetched["spec"]["containers"].append({"name": "x"})
    stored = await client.get(PODS, "a", namespace="default")
    assert stored["metadata"]["labels"] == {"app": "web"}
    assert stored["spec"]["containers"] == []
    assert client.actions[0].object is not None
    assert client.actions[0].object["metadata"]["labels"] == {"app": "web"}


# -- get ------------------------------------------------------------------------------------


async def test_get_missing_is_not_found(client: FakeClient) -> None:
    with pytest.raises(NotFound) as caught:
        await client.get(DEPLOYMENTS, "nope", namespace="default")
    assert caught.value.message == 'deployments.apps "nope" not found'
    assert caught.value.details == {"name": "nope", "group": "apps", "kind": "deployments"}


async def test_get_status_subresource(client: FakeClient) -> None:
    client.tracker.add(deployment())
    assert (await client.get(DEPLOYMENTS, "web", namespace="default", subresource="status"))[
        "status"
    ] == {"replicas": 1}
    with pytest.raises(NotFound):
        await client.get(DEPLOYMENTS, "web", namespace="default", subresource="scale")
    client.tracker.add(configmap())
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "cm", namespace="default", subresource="status")


# -- update ---------------------------------------------------------------------------------


async def test_update_with_stale_resource_version_is_conflict(client: FakeClient) -> None:
    current = client.tracker.add(deployment())
    fresh = await client.update(DEPLOYMENTS, current)  # unchanged: a no-op
    assert rv(fresh) == rv(current)
    changed = {**current, "spec": {"replicas": 2}}
    newer = await client.update(DEPLOYMENTS, changed)
    assert rv(newer) > rv(current)
    with pytest.raises(Conflict, match="the object has been modified"):
        await client.update(DEPLOYMENTS, {**current, "spec": {"replicas": 3}})


async def test_update_without_resource_version_is_unconditional(client: FakeClient) -> None:
    client.tracker.add(configmap(a="1"))
    client.tracker.add(configmap(a="2"))  # someone else wrote meanwhile
    updated = await client.update(CONFIGMAPS, configmap(a="3"))
    assert updated["data"] == {"a": "3"}


async def test_update_with_other_uid_is_invalid(client: FakeClient) -> None:
    # The real apiserver answers 422 (metadata.uid is immutable), not 409.
    current = client.tracker.add(configmap())
    current["metadata"]["uid"] = "someone-else"
    with pytest.raises(Invalid, match="field is immutable"):
        await client.update(CONFIGMAPS, current)


async def test_delete_with_other_uid_precondition_is_conflict(client: FakeClient) -> None:
    client.tracker.add(configmap())
    with pytest.raises(Conflict, match="Precondition failed: UID"):
        await client.delete(CONFIGMAPS, "cm", namespace="default", preconditions={"uid": "x"})


async def test_update_missing_is_not_found(client: FakeClient) -> None:
    with pytest.raises(NotFound):
        await client.update(CONFIGMAPS, configmap())
    with pytest.raises(BadRequest, match="name is required"):
        await client.update(CONFIGMAPS, {"metadata": {"namespace": "default"}})


async def test_update_keeps_server_owned_metadata(client: FakeClient) -> None:
    current = client.tracker.add(configmap())
    edited = {**current, "metadata": {"name": "cm", "namespace": "default", "uid": ""}}
    edited["metadata"]["creationTimestamp"] = "1999-01-01T00:00:00Z"
    edited["metadata"]["generation"] = 99
    updated = await client.update(CONFIGMAPS, edited)
    for field in ("uid", "creationTimestamp"):
        assert updated["metadata"][field] == current["metadata"][field]
    assert "generation" not in updated["metadata"]  # ConfigMaps have none, as on the server


@pytest.mark.parametrize(
    ("resource", "change", "generation", "status_kept"),
    [
        pytest.param(DEPLOYMENTS, {"spec": {"replicas": 5}}, 2, True, id="deploy-spec"),
        pytest.param(DEPLOYMENTS, {"labels": {"a": "b"}}, 1, True, id="deploy-labels"),
        pytest.param(DEPLOYMENTS, {"annotations": {"a": "b"}}, 2, True, id="deploy-annotations"),
        pytest.param(DEPLOYMENTS, {"status": {"replicas": 9}}, 1, True, id="deploy-status"),
        pytest.param(REPLICASETS, {"spec": {"replicas": 5}}, 2, True, id="rs-spec"),
        pytest.param(REPLICASETS, {"annotations": {"a": "b"}}, 1, True, id="rs-annotations"),
        pytest.param(WIDGETS, {"spec": {"replicas": 5}}, 2, False, id="no-subresource-spec"),
        # without a status subresource, status is part of what generation counts (as for a CR)
        pytest.param(WIDGETS, {"status": {"replicas": 9}}, 2, False, id="no-subresource-status"),
    ],
)
async def test_update_generation_and_status_rules(
    client: FakeClient,
    resource: Resource,
    change: dict[str, Any],
    generation: int,
    status_kept: bool,
) -> None:
    client.register(WIDGETS)
    seed = deployment() | {"apiVersion": resource.api_version, "kind": resource.kind}
    current = client.tracker.add(seed, resource)
    edited = current | {k: v for k, v in change.items() if k in ("spec", "status")}
    for key in ("labels", "annotations"):
        if key in change:
            edited["metadata"] = current["metadata"] | {key: change[key]}
    updated = await client.update(resource, edited)
    assert updated["metadata"]["generation"] == generation
    expected_status = current["status"] if status_kept else edited["status"]
    assert updated["status"] == expected_status


async def test_noop_update_writes_nothing(client: FakeClient) -> None:
    current = client.tracker.add(deployment())
    async with client.watch(
        DEPLOYMENTS, options=ListOptions(resource_version=current["metadata"]["resourceVersion"])
    ) as events:
        same = await client.update(DEPLOYMENTS, current)
        # a status change through the main resource is dropped, so this is a no-op too
        again = await client.update(DEPLOYMENTS, current | {"status": {"replicas": 7}})
        client.close_watches()
        assert await drain(events) == []
    assert rv(same) == rv(again) == rv(current)
    assert client.tracker.resource_version == current["metadata"]["resourceVersion"]


async def test_update_status_changes_only_status(client: FakeClient) -> None:
    current = client.tracker.add(deployment())
    edited = current | {"spec": {"replicas": 9}, "status": {"replicas": 3}}
    edited["metadata"] = current["metadata"] | {"labels": {"new": "label"}}
    updated = await client.update_status(DEPLOYMENTS, edited)
    assert updated["status"] == {"replicas": 3}
    assert updated["spec"] == {"replicas": 1}
    assert "labels" not in updated["metadata"]
    assert updated["metadata"]["generation"] == 1
    assert rv(updated) > rv(current)
    assert client.actions[-1].subresource == "status"
    with pytest.raises(Conflict):
        await client.update_status(DEPLOYMENTS, current)  # stale


async def test_update_status_needs_a_status_subresource(client: FakeClient) -> None:
    current = client.tracker.add(configmap())
    with pytest.raises(NotFound, match="could not find the requested resource"):
        await client.update_status(CONFIGMAPS, current)


# -- patch ----------------------------------------------------------------------------------


async def test_merge_patch(client: FakeClient) -> None:
    client.tracker.add(pod("a", labels={"app": "web", "tier": "fe"}))
    patched = await client.patch(
        PODS, "a", {"metadata": {"labels": {"tier": None, "new": "x"}}}, namespace="default"
    )
    assert patched["metadata"]["labels"] == {"app": "web", "new": "x"}
    assert patched["metadata"]["generation"] == 1  # metadata only
    action = client.actions[-1]
    assert (action.verb, action.name, action.patch_type) == ("patch", "a", PatchType.MERGE)
    assert action.patch == {"metadata": {"labels": {"tier": None, "new": "x"}}}


async def test_patch_with_resource_version_or_uid_is_a_precondition(client: FakeClient) -> None:
    current = client.tracker.add(pod("a"))
    client.tracker.add(pod("a", labels={"someone": "else"}))
    stale = {
        "metadata": {
            "labels": {"x": "y"},
            "resourceVersion": current["metadata"]["resourceVersion"],
        }
    }
    with pytest.raises(Conflict, match="has been modified"):
        await client.patch(PODS, "a", stale, namespace="default")
    wrong_uid = {"metadata": {"ownerReferences": [], "uid": "other"}}
    with pytest.raises(Invalid, match="field is immutable"):
        await client.patch(
            PODS, "a", wrong_uid, namespace="default", patch_type=PatchType.STRATEGIC
        )


async def test_strategic_patch_adopts_by_owner_reference(client: FakeClient) -> None:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1"}
    other = {**owner, "name": "old", "uid": "u0"}
    current = pod("a")
    current["metadata"]["ownerReferences"] = [other]
    current = client.tracker.add(current)
    patch = {
        "metadata": {
            "ownerReferences": [{**owner, "controller": True}, {"$patch": "delete", "uid": "u0"}],
            "uid": current["metadata"]["uid"],
        }
    }
    patched = await client.patch(
        PODS, "a", patch, namespace="default", patch_type=PatchType.STRATEGIC
    )
    assert patched["metadata"]["ownerReferences"] == [{**owner, "controller": True}]


async def test_json_patch(client: FakeClient) -> None:
    client.tracker.add(deployment(replicas=1))
    patch = [
        {"op": "test", "path": "/spec/replicas", "value": 1},
        {"op": "replace", "path": "/spec/replicas", "value": 4},
    ]
    patched = await client.patch(
        DEPLOYMENTS, "web", patch, namespace="default", patch_type=PatchType.JSON
    )
    assert patched["spec"]["replicas"] == 4
    assert patched["metadata"]["generation"] == 2
    with pytest.raises(Invalid):
        json_patch_type: Any = "application/json-patch+json"  # the plain string works too
        await client.patch(
            DEPLOYMENTS, "web", patch, namespace="default", patch_type=json_patch_type
        )


async def test_patch_status_subresource(client: FakeClient) -> None:
    client.tracker.add(deployment(replicas=1))
    main = await client.patch(DEPLOYMENTS, "web", {"status": {"replicas": 5}}, namespace="default")
    assert main["status"] == {"replicas": 1}
    status = await client.patch(
        DEPLOYMENTS,
        "web",
        {"status": {"readyReplicas": 1}, "spec": {"replicas": 9}},
        namespace="default",
        subresource="status",
    )
    assert status["status"] == {"replicas": 1, "readyReplicas": 1}
    assert status["spec"] == {"replicas": 1}
    assert status["metadata"]["generation"] == 1


@pytest.mark.parametrize(
    ("name", "patch", "patch_type", "error"),
    [
        pytest.param("missing", {}, PatchType.MERGE, NotFound, id="missing"),
        pytest.param("a", {"metadata": {"name": "b"}}, PatchType.MERGE, BadRequest, id="rename"),
        pytest.param("a", {"metadata": None}, PatchType.MERGE, BadRequest, id="drop-metadata"),
        pytest.param("a", {"kind": "Other"}, PatchType.MERGE, BadRequest, id="change-kind"),
    ],
)
async def test_patch_errors(
    client: FakeClient, name: str, patch: Any, patch_type: PatchType, error: type[ApiError]
) -> None:
    client.tracker.add(pod("a"))
    with pytest.raises(error):
        await client.patch(PODS, name, patch, namespace="default", patch_type=patch_type)


# -- delete ---------------------------------------------------------------------------------


async def test_delete_removes_and_returns_status(client: FakeClient) -> None:
    current = client.tracker.add(pod("a"))
    answer = await client.delete(PODS, "a", namespace="default")
    assert answer["kind"] == "Status" and answer["status"] == "Success"
    assert answer["details"]["uid"] == current["metadata"]["uid"]
    with pytest.raises(NotFound):
        await client.get(PODS, "a", namespace="default")
    with pytest.raises(NotFound):
        await client.delete(PODS, "a", namespace="default")


@pytest.mark.parametrize(
    ("preconditions", "ok"),
    [
        pytest.param({"uid": "wrong"}, False, id="uid-mismatch"),
        pytest.param({"resourceVersion": "999"}, False, id="rv-mismatch"),
        pytest.param({"uid": "UID", "resourceVersion": "RV"}, True, id="both-match"),
        pytest.param({}, True, id="none"),
    ],
)
async def test_delete_preconditions(
    client: FakeClient, preconditions: dict[str, str], ok: bool
) -> None:
    current = client.tracker.add(pod("a"))
    substitutions = {
        "UID": current["metadata"]["uid"],
        "RV": current["metadata"]["resourceVersion"],
    }
    preconditions = {k: substitutions.get(v, v) for k, v in preconditions.items()}
    if ok:
        await client.delete(PODS, "a", namespace="default", preconditions=preconditions)
        assert client.tracker.objects(PODS) == []
    else:
        with pytest.raises(Conflict, match="Precondition failed"):
            await client.delete(PODS, "a", namespace="default", preconditions=preconditions)
        assert len(client.tracker.objects(PODS)) == 1


async def test_delete_with_finalizers_marks_then_last_finalizer_removes(
    client: FakeClient, clock: FakeClock
) -> None:
    seed = configmap()
    seed["metadata"]["finalizers"] = ["a", "b"]
    client.tracker.add(seed)
    async with client.watch(
        CONFIGMAPS, options=ListOptions(resource_version=client.tracker.resource_version)
    ) as events:
        marked = await client.delete(CONFIGMAPS, "cm", namespace="default")
        assert marked["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:00Z"
        assert marked["metadata"]["deletionGracePeriodSeconds"] == 0
        again = await client.delete(CONFIGMAPS, "cm", namespace="default")
        assert again == marked  # already terminating: nothing changes

        with pytest.raises(Invalid, match="no new finalizers"):
            await client.update(
                CONFIGMAPS,
                marked | {"metadata": marked["metadata"] | {"finalizers": ["a", "b", "c"]}},
            )
        one_left = await client.update(
            CONFIGMAPS, marked | {"metadata": marked["metadata"] | {"finalizers": ["b"]}}
        )
        assert one_left["metadata"]["deletionTimestamp"]
        gone = await client.patch(
            CONFIGMAPS, "cm", {"metadata": {"finalizers": None}}, namespace="default"
        )
        assert "finalizers" not in gone["metadata"]
        with pytest.raises(NotFound):
            await client.get(CONFIGMAPS, "cm", namespace="default")
        client.close_watches()
        assert await drain(events) == [("MODIFIED", "cm"), ("MODIFIED", "cm"), ("DELETED", "cm")]


# -- list -----------------------------------------------------------------------------------


@pytest.fixture
def pods_client(client: FakeClient) -> FakeClient:
    client.tracker.add(pod("b", labels={"app": "web", "tier": "fe"}))
    client.tracker.add(pod("a", labels={"app": "web"}))
    client.tracker.add(pod("c", labels={"app": "db"}))
    client.tracker.add(pod("a", namespace="kube-system", labels={"app": "dns"}))
    client.tracker.add(pod("x", namespace="default-other"))
    return client


async def test_list_shape(pods_client: FakeClient) -> None:
    result = await pods_client.list(PODS, namespace="default")
    assert (result["apiVersion"], result["kind"]) == ("v1", "PodList")
    assert result["metadata"] == {"resourceVersion": pods_client.tracker.resource_version}
    assert [i["metadata"]["name"] for i in result["items"]] == ["a", "b", "c"]
    assert all((i["apiVersion"], i["kind"]) == ("v1", "Pod") for i in result["items"])


# etcd orders keys bytewise: "default-other/" sorts before "default/".
ALL_PODS = ["default-other/x", "default/a", "default/b", "default/c", "kube-system/a"]


@pytest.mark.parametrize(
    ("namespace", "label_selector", "field_selector", "expected"),
    [
        pytest.param(None, None, None, ALL_PODS, id="all-in-etcd-order"),
        pytest.param("kube-system", None, None, ["kube-system/a"], id="namespace"),
        pytest.param(None, "app=web", None, ["default/a", "default/b"], id="label-equals"),
        pytest.param(None, "app in (db,dns)", None, ["default/c", "kube-system/a"], id="label-in"),
        pytest.param(None, "!app", None, ["default-other/x"], id="label-absent"),
        pytest.param("default", "app=web,tier", None, ["default/b"], id="labels-and"),
        pytest.param(None, None, "metadata.name=a", ["default/a", "kube-system/a"],
                     id="field-name"),
        pytest.param(None, None, "metadata.namespace!=default",
                     ["default-other/x", "kube-system/a"], id="field-ns-not"),
        pytest.param(None, "app", "metadata.name==a,metadata.namespace=default", ["default/a"],
                     id="both"),
        pytest.param(None, None, "status.phase=", ALL_PODS, id="absent-field-is-empty"),
    ],
)  # fmt: skip
async def test_list_selection(
    pods_client: FakeClient,
    namespace: str | None,
    label_selector: str | None,
    field_selector: str | None,
    expected: list[str],
) -> None:
    result = await pods_client.list(
        PODS,
        namespace=namespace,
        options=ListOptions(label_selector=label_selector, field_selector=field_selector),
    )
    names = [f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in result["items"]]
    assert names == expected


@pytest.mark.parametrize(
    ("label_selector", "field_selector", "message"),
    [
        pytest.param("app=", "spec.unknown=x", "field label not supported", id="bad-field"),
        pytest.param("a b", None, "unable to parse labelSelector", id="bad-labels"),
        pytest.param(None, "metadata.name", "expected key=value", id="bad-term"),
    ],
)
async def test_list_bad_selectors(
    pods_client: FakeClient, label_selector: str | None, field_selector: str | None, message: str
) -> None:
    with pytest.raises(BadRequest, match=message):
        await pods_client.list(
            PODS, options=ListOptions(label_selector=label_selector, field_selector=field_selector)
        )


async def test_list_pagination(pods_client: FakeClient) -> None:
    first = await pods_client.list(PODS, options=ListOptions(limit=2))
    assert [i["metadata"]["name"] for i in first["items"]] == ["x", "a"]
    assert first["metadata"]["remainingItemCount"] == 3
    snapshot = first["metadata"]["resourceVersion"]
    pods_client.tracker.add(pod("d"))  # written between pages: seen, as the fake serves now
    second = await pods_client.list(
        PODS, options=ListOptions(limit=2, continue_=first["metadata"]["continue"])
    )
    assert [i["metadata"]["name"] for i in second["items"]] == ["b", "c"]
    assert second["metadata"]["resourceVersion"] == snapshot
    third = await pods_client.list(
        PODS, options=ListOptions(limit=2, continue_=second["metadata"]["continue"])
    )
    assert [i["metadata"]["namespace"] for i in third["items"]] == ["default", "kube-system"]
    assert "continue" not in third["metadata"]
    selected = await pods_client.list(PODS, options=ListOptions(label_selector="app=web", limit=1))
    rest = await pods_client.list(
        PODS,
        options=ListOptions(
            label_selector="app=web", limit=1, continue_=selected["metadata"]["continue"]
        ),
    )
    assert [i["metadata"]["name"] for i in rest["items"]] == ["b"]
    assert "continue" not in rest["metadata"]


async def test_list_continue_errors(pods_client: FakeClient) -> None:
    with pytest.raises(BadRequest, match="continue"):
        await pods_client.list(PODS, options=ListOptions(continue_="garbage!"))
    first = await pods_client.list(PODS, options=ListOptions(limit=1))
    pods_client.tracker.add(pod("later"))
    pods_client.compact()
    with pytest.raises(Gone) as caught:
        await pods_client.list(
            PODS, options=ListOptions(limit=1, continue_=first["metadata"]["continue"])
        )
    assert caught.value.reason == "Expired"


async def test_list_resource_version_too_large(pods_client: FakeClient) -> None:
    with pytest.raises(ServerTimeout) as caught:
        await pods_client.list(PODS, options=ListOptions(resource_version="1000"))
    assert is_resource_expired(caught.value)
    ok = await pods_client.list(PODS, options=ListOptions(resource_version="0"))
    assert len(ok["items"]) == 5


async def test_list_supports_pod_and_event_field_labels(client: FakeClient) -> None:
    running = pod("run")
    running["status"] = {"phase": "Running"}
    client.tracker.add(running)
    client.tracker.add(pod("pending"))
    result = await client.list(PODS, options=ListOptions(field_selector="status.phase=Running"))
    assert [i["metadata"]["name"] for i in result["items"]] == ["run"]
    assert (await client.list(EVENTS, options=ListOptions(field_selector="involvedObject.name=x")))[
        "items"
    ] == []


# -- watch ----------------------------------------------------------------------------------


async def test_watch_without_resource_version_starts_with_current_objects(
    pods_client: FakeClient,
) -> None:
    async with pods_client.watch(PODS, namespace="default") as events:
        await pods_client.create(PODS, pod("new"))
        await pods_client.create(PODS, pod("elsewhere", namespace="kube-system"))
        await pods_client.delete(PODS, "a", namespace="default")
        pods_client.close_watches()
        assert await drain(events) == [
            ("ADDED", "a"),
            ("ADDED", "b"),
            ("ADDED", "c"),
            ("ADDED", "new"),
            ("DELETED", "a"),
        ]


async def test_watch_replays_history_after_resource_version(client: FakeClient) -> None:
    created = await client.create(PODS, pod("a"))
    await client.patch(PODS, "a", {"metadata": {"labels": {"x": "1"}}}, namespace="default")
    await client.delete(PODS, "a", namespace="default")
    async with client.watch(
        PODS, options=ListOptions(resource_version=created["metadata"]["resourceVersion"])
    ) as events:
        client.close_watches()
        received = [e async for e in events]
    assert [(e.type, rv(e.object)) for e in received] == [("MODIFIED", 2), ("DELETED", 3)]
    assert received[0].object["metadata"]["labels"] == {"x": "1"}


async def test_watch_from_compacted_resource_version_is_gone(client: FakeClient) -> None:
    for name in "abc":
        await client.create(PODS, pod(name))
    client.compact("2")
    assert client.tracker.compacted_resource_version == 2
    with pytest.raises(Gone) as caught:
        async with client.watch(PODS, options=ListOptions(resource_version="1")):
            pass
    assert caught.value.code == 410
    assert caught.value.reason == "Expired"
    async with client.watch(PODS, options=ListOptions(resource_version="2")) as events:
        client.close_watches()
        assert await drain(events) == [("ADDED", "c")]


async def test_watch_label_selector_transitions(client: FakeClient) -> None:
    client.tracker.add(pod("a", labels={"app": "web"}))
    start = client.tracker.resource_version
    async with client.watch(
        PODS, options=ListOptions(label_selector="app=web", resource_version=start)
    ) as events:
        await client.patch(PODS, "a", {"metadata": {"labels": {"v": "2"}}}, namespace="default")
        await client.patch(PODS, "a", {"metadata": {"labels": {"app": "db"}}}, namespace="default")
        await client.patch(PODS, "a", {"metadata": {"labels": {"v": "3"}}}, namespace="default")
        await client.patch(PODS, "a", {"metadata": {"labels": {"app": "web"}}}, namespace="default")
        await client.create(PODS, pod("other", labels={"app": "db"}))
        client.close_watches()
        received = [e async for e in events]
    assert [e.type for e in received] == ["MODIFIED", "DELETED", "ADDED"]
    assert received[1].object["metadata"]["labels"]["app"] == "db"  # the state that left


async def test_watch_field_selector(pods_client: FakeClient) -> None:
    async with pods_client.watch(
        PODS, options=ListOptions(field_selector="metadata.name=a")
    ) as events:
        pods_client.close_watches()
        assert await drain(events) == [("ADDED", "a"), ("ADDED", "a")]


async def test_watch_is_live(client: FakeClient) -> None:
    async with client.watch(PODS) as events:
        iterator = aiter(events)
        pending = asyncio.ensure_future(anext(iterator))
        await asyncio.sleep(0)
        assert not pending.done()
        await client.create(PODS, pod("a"))
        event = await asyncio.wait_for(pending, 1)
        assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "a")
        event.object["metadata"]["name"] = "mutated"  # events are private copies
    assert client.tracker.objects(PODS)[0]["metadata"]["name"] == "a"


async def test_fail_watches_raises_after_queued_events(client: FakeClient) -> None:
    async with client.watch(PODS) as events:
        await client.create(PODS, pod("a"))
        assert client.fail_watches(ApiConnectionError("connection reset")) == 1
        iterator = aiter(events)
        assert (await anext(iterator)).type == "ADDED"
        with pytest.raises(ApiConnectionError):
            await anext(iterator)
        with pytest.raises(StopAsyncIteration):
            await anext(iterator)


async def test_leaving_the_block_closes_the_watch(client: FakeClient) -> None:
    async with client.watch(PODS), client.watch(DEPLOYMENTS):
        assert client.open_watches() == 2
        assert client.open_watches(PODS) == 1
    assert client.open_watches() == 0
    assert client.close_watches() == 0


async def test_watch_timeout_uses_the_clock(client: FakeClient, clock: FakeClock) -> None:
    async with client.watch(PODS, options=ListOptions(timeout_seconds=30)) as events:
        clock.step(29)
        await client.create(PODS, pod("a"))
        clock.step(1)
        await client.create(PODS, pod("after-timeout"))
        assert await drain(events) == [("ADDED", "a")]
    assert not clock.has_waiters()


async def test_bookmarks(client: FakeClient) -> None:
    await client.create(PODS, pod("a"))
    async with (
        client.watch(PODS, options=ListOptions(resource_version="1")) as with_bookmarks,
        client.watch(
            PODS, options=ListOptions(resource_version="1", allow_watch_bookmarks=False)
        ) as without,
    ):
        assert client.send_bookmarks(PODS) == 1
        client.close_watches()
        received = [e async for e in with_bookmarks]
        assert await drain(without) == []
    assert received == [
        WatchEvent(
            "BOOKMARK", {"apiVersion": "v1", "kind": "Pod", "metadata": {"resourceVersion": "1"}}
        )
    ]


async def test_send_initial_events(pods_client: FakeClient) -> None:
    async with pods_client.watch(
        PODS,
        namespace="default",
        options=ListOptions(
            send_initial_events=True, resource_version_match="NotOlderThan", resource_version=""
        ),
    ) as events:
        pods_client.close_watches()
        received = [e async for e in events]
    assert [e.type for e in received] == ["ADDED"] * 3 + ["BOOKMARK"]
    bookmark = received[-1].object["metadata"]
    assert bookmark["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert bookmark["resourceVersion"] == pods_client.tracker.resource_version
    with pytest.raises(Invalid, match="NotOlderThan"):
        async with pods_client.watch(PODS, options=ListOptions(send_initial_events=True)):
            pass


# -- actions and reactors -------------------------------------------------------------------


async def test_actions_are_recorded_in_order(client: FakeClient) -> None:
    await client.create(PODS, pod("a", labels={"x": "y"}))
    await client.get(PODS, "a", namespace="default")
    await client.list(PODS, namespace="default", options=ListOptions(label_selector="x=y", limit=5))
    async with client.watch(
        NAMESPACES, options=ListOptions(resource_version="1", timeout_seconds=10)
    ):
        pass
    await client.patch(PODS, "a", '{"metadata":{"labels":null}}', namespace="default")
    with pytest.raises(NotFound):
        await client.update_status(PODS, pod("missing"))
    await client.delete(PODS, "a", namespace="default", propagation_policy="Background")
    assert [str(a) for a in client.actions] == [
        "create pods default/a",
        "get pods default/a",
        "list pods default",
        "watch namespaces",
        "patch pods default/a",
        "update pods default/missing/status",
        "delete pods default/a",
    ]
    create, _, list_, watch, patch, _, delete = client.actions
    assert create.object == pod("a", labels={"x": "y"})
    assert (list_.label_selector, list_.options) == ("x=y", {"limit": 5})
    assert watch.resource_version == "1"
    assert watch.options == {"timeout_seconds": 10, "allow_watch_bookmarks": True}
    assert patch.patch == {"metadata": {"labels": None}}
    assert delete.options == {"propagation_policy": "Background"}


async def test_malformed_requests_are_recorded_too(client: FakeClient) -> None:
    client.tracker.add(pod("a"))
    with pytest.raises(BadRequest):
        await client.patch(PODS, "a", "{not json", namespace="default")
    with pytest.raises(BadRequest):
        await client.create(PODS, {"metadata": {"name": "a", "namespace": "d"}, "x": 1j})
    assert [(a.verb, a.patch) for a in client.actions] == [("patch", "{not json"), ("create", None)]


async def test_actions_for_filters(client: FakeClient) -> None:
    await client.create(PODS, pod("a"))
    await client.create(PODS, pod("b", namespace="other"))
    await client.create(CONFIGMAPS, configmap())
    await client.get(PODS, "a", namespace="default")
    assert [a.name for a in client.actions_for("create")] == ["a", "b", "cm"]
    assert [a.name for a in client.actions_for("create", "pods")] == ["a", "b"]
    assert [a.name for a in client.actions_for("*", PODS, namespace="other")] == ["b"]
    assert [a.verb for a in client.actions_for(resource=PODS, name="a")] == ["create", "get"]
    assert client.actions_for("delete") == []
    assert client.actions[0].matches("create", "pods")
    assert not client.actions[0].matches("create", DEPLOYMENTS)
    client.clear_actions()
    assert client.actions == []


async def test_reactor_injects_errors_then_falls_through(client: FakeClient) -> None:
    client.tracker.add(configmap(a="1"))
    failures = [Conflict("injected"), TooManyRequests("slow down", retry_after=2.0)]

    def flaky(action: Action) -> None:
        if failures:
            raise failures.pop(0)

    client.prepend_reactor("update", "configmaps", flaky)
    with pytest.raises(Conflict, match="injected"):
        await client.update(CONFIGMAPS, configmap(a="2"))
    with pytest.raises(TooManyRequests) as caught:
        await client.update(CONFIGMAPS, configmap(a="2"))
    assert caught.value.retry_after == 2.0
    updated = await client.update(CONFIGMAPS, configmap(a="2"))
    assert updated["data"] == {"a": "2"}
    assert len(client.actions_for("update")) == 3  # failed requests are recorded too
    assert (await client.get(CONFIGMAPS, "cm", namespace="default"))["data"] == {"a": "2"}


async def test_reactor_answers_instead_of_the_tracker(client: FakeClient) -> None:
    answer: Object = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fake"}}

    async def reactor(action: Action) -> Object:
        await asyncio.sleep(0)
        return answer

    client.prepend_reactor("get", PODS, reactor)
    got = await client.get(PODS, "anything", namespace="default")
    assert got == answer
    got["metadata"]["name"] = "mutated"
    assert answer["metadata"]["name"] == "fake"  # answers are copied
    created = await client.create(PODS, pod("real"))  # other verbs still reach the tracker
    assert created["metadata"]["uid"]


async def test_reactor_order_and_wildcards(client: FakeClient) -> None:
    calls: list[str] = []

    def named(label: str, result: Object | None = None) -> Any:
        def reactor(action: Action) -> Object | None:
            calls.append(label)
            return result

        return reactor

    client.add_reactor("*", "*", named("added-first"))
    client.add_reactor("get", "*", named("added-second", {"kind": "X"}))
    client.prepend_reactor("*", "pods", named("prepended"))
    client.prepend_reactor("list", "pods", named("not-called"))
    assert await client.get(PODS, "a", namespace="default") == {"kind": "X"}
    assert calls == ["prepended", "added-first", "added-second"]
    with pytest.raises(ValueError, match="unknown verb"):
        client.prepend_reactor("gte", "pods", named("typo"))


async def test_watch_reactor_scripts_the_stream(client: FakeClient) -> None:
    scripted: list[WatchEvent | BaseException] = [WatchEvent("ADDED", pod("a")), Gone("too old")]
    client.prepend_reactor("watch", PODS, lambda action: scripted)
    async with client.watch(PODS) as events:
        iterator = aiter(events)
        assert (await anext(iterator)).object["metadata"]["name"] == "a"
        with pytest.raises(Gone):
            await anext(iterator)
        with pytest.raises(StopAsyncIteration):
            await anext(iterator)

    def refuse(action: Action) -> None:
        raise Gone("refused")

    client.prepend_reactor("watch", PODS, refuse)
    with pytest.raises(Gone, match="refused"):
        async with client.watch(PODS):
            pass
    assert client.open_watches() == 0


async def test_custom_resources(client: FakeClient) -> None:
    client.register(WIDGETS, status_subresource=True)
    created = await client.create(
        WIDGETS, {"metadata": {"name": "w", "namespace": "d"}, "status": {"s": 1}}
    )
    assert (created["apiVersion"], created["kind"]) == ("example.com/v1", "Widget")
    assert "status" not in created
    assert (await client.update_status(WIDGETS, created | {"status": {"s": 2}}))["status"] == {
        "s": 2
    }
    # an unregistered resource is served on first use, without a status subresource
    cluster = await client.create(CLUSTER_WIDGETS, {"metadata": {"name": "c"}})
    assert (await client.list(CLUSTER_WIDGETS))["kind"] == "ClusterWidgetList"
    assert cluster["metadata"]["name"] == "c"
