"""The helpers against a real kube-apiserver: create_or_patch / create_or_update write nothing
when nothing changed (the resourceVersion stays), keep other writers' fields and finalizers,
and server-side apply (objects and status) with field managers and force."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from kcontrol.client import CONFIGMAPS, DEPLOYMENTS, ApiClient, ClientConfig, Object, Resource
from kcontrol.controllerutil import (
    OperationResult,
    add_finalizer,
    apply,
    apply_status,
    create_or_patch,
    create_or_update,
    patch_finalizers,
    patch_status,
    remove_finalizer,
    set_controller_reference,
    set_status_condition,
)
from kcontrol.envtest import ControlPlane
from kcontrol.errors import Conflict

pytestmark = pytest.mark.integration


@pytest.fixture
async def client(control_plane: ControlPlane) -> AsyncIterator[ApiClient]:
    config = ClientConfig.from_kube_configuration(await control_plane.kube_configuration())
    async with ApiClient(config, qps=0, timeout=30) as api:
        yield api


class Snapshot:
    """A reader answering with one fixed copy, as a lagging informer cache would."""

    def __init__(self, obj: Object) -> None:
        self.obj = copy.deepcopy(obj)

    async def get(
        self, resource: Resource, name: str, *, namespace: str | None = None
    ) -> Mapping[str, Any]:
        return self.obj


def rv(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["resourceVersion"])


def web_deployment(
    obj: Object, *, image: str = "registry.invalid/web:1", replicas: int = 2
) -> None:
    """A mutate that sets only the fields it owns, so server defaults never look like a
    change (setting the whole spec would write on every call, as upstream warns)."""
    spec = obj.setdefault("spec", {})
    spec["replicas"] = replicas
    spec.setdefault("selector", {"matchLabels": {"app": "web"}})
    template = spec.setdefault("template", {})
    template.setdefault("metadata", {}).setdefault("labels", {})["app"] = "web"
    containers = template.setdefault("spec", {}).setdefault("containers", [])
    app = next((c for c in containers if c.get("name") == "app"), None)
    if app is None:
        containers.append(app := {"name": "app"})
    app["image"] = image


# -- create_or_patch ---------------------------------------------------------------------------


async def test_create_or_patch_writes_nothing_when_unchanged(
    client: ApiClient, namespace: str
) -> None:
    key = {"metadata": {"name": "web", "namespace": namespace}}
    created, result = await create_or_patch(client, DEPLOYMENTS, key, web_deployment)
    assert result is OperationResult.CREATED

    again, result = await create_or_patch(client, DEPLOYMENTS, key, web_deployment)
    assert result is OperationResult.NONE
    live = await client.get(DEPLOYMENTS, "web", namespace=namespace)
    assert rv(again) == rv(live) == rv(created)

    scaled, result = await create_or_patch(
        client, DEPLOYMENTS, key, lambda d: web_deployment(d, replicas=3)
    )
    assert result is OperationResult.UPDATED
    assert scaled["spec"]["replicas"] == 3
    assert rv(scaled) != rv(created)


async def test_create_or_patch_keeps_another_writers_fields_and_finalizers(
    client: ApiClient, namespace: str
) -> None:
    key = {"metadata": {"name": "settings", "namespace": namespace}}

    def mine(cm: Object) -> None:
        cm.setdefault("data", {})["mine"] = "1"

    created, _ = await create_or_patch(client, CONFIGMAPS, key, mine)
    stale = Snapshot(created)
    await client.patch(
        CONFIGMAPS,
        "settings",
        {
            "metadata": {"labels": {"their": "label"}, "finalizers": ["example.com/theirs"]},
            "data": {"theirs": "2"},
        },
        namespace=namespace,
    )

    def mine_changed(cm: Object) -> None:
        cm["data"]["mine"] = "changed"

    answer, result = await create_or_patch(client, CONFIGMAPS, key, mine_changed, reader=stale)
    assert result is OperationResult.UPDATED
    assert answer["data"] == {"mine": "changed", "theirs": "2"}
    assert answer["metadata"]["labels"] == {"their": "label"}
    assert answer["metadata"]["finalizers"] == ["example.com/theirs"]

    # The same from a stale read with the optimistic lock: refused, nothing lost.
    def add_my_finalizer(cm: Object) -> None:
        add_finalizer(cm, "example.com/mine")

    with pytest.raises(Conflict):
        await create_or_patch(
            client, CONFIGMAPS, key, add_my_finalizer, reader=stale, optimistic_lock=True
        )
    live = await client.get(CONFIGMAPS, "settings", namespace=namespace)
    assert live["metadata"]["finalizers"] == ["example.com/theirs"]
    await client.patch(
        CONFIGMAPS, "settings", {"metadata": {"finalizers": None}}, namespace=namespace
    )


async def test_create_or_patch_status_on_the_subresource(client: ApiClient, namespace: str) -> None:
    key = {"metadata": {"name": "web", "namespace": namespace}}
    owner, _ = await create_or_patch(
        client, CONFIGMAPS, {"metadata": {"name": "owner", "namespace": namespace}}, lambda cm: None
    )

    def owned(d: Object) -> None:
        web_deployment(d)
        set_controller_reference(owner, d)

    await create_or_patch(client, DEPLOYMENTS, key, owned)

    def report(d: Object) -> None:
        owned(d)
        status = d.setdefault("status", {})
        status["observedGeneration"] = d["metadata"]["generation"]
        set_status_condition(
            status.setdefault("conditions", []),
            {"type": "Available", "status": "True", "reason": "Test", "message": "set"},
        )

    answer, result = await create_or_patch(client, DEPLOYMENTS, key, report)
    assert result is OperationResult.UPDATED_STATUS_ONLY
    assert answer["status"]["observedGeneration"] == 1
    assert answer["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]

    again, result = await create_or_patch(client, DEPLOYMENTS, key, report)
    assert result is OperationResult.NONE
    assert rv(again) == rv(answer)


# -- create_or_update --------------------------------------------------------------------------


async def test_create_or_update_writes_nothing_when_unchanged_and_conflicts_when_stale(
    client: ApiClient, namespace: str
) -> None:
    key = {"metadata": {"name": "settings", "namespace": namespace}}

    def mine(cm: Object) -> None:
        cm.setdefault("data", {})["mine"] = "1"

    created, result = await create_or_update(client, CONFIGMAPS, key, mine)
    assert result is OperationResult.CREATED
    same, result = await create_or_update(client, CONFIGMAPS, key, mine)
    assert result is OperationResult.NONE
    assert (
        rv(same) == rv(created) == rv(await client.get(CONFIGMAPS, "settings", namespace=namespace))
    )

    await client.patch(CONFIGMAPS, "settings", {"data": {"theirs": "2"}}, namespace=namespace)
    with pytest.raises(Conflict):
        await create_or_update(
            client,
            CONFIGMAPS,
            key,
            lambda cm: cm["data"].update(mine="3"),
            reader=Snapshot(created),
        )
    live = await client.get(CONFIGMAPS, "settings", namespace=namespace)
    assert live["data"] == {"mine": "1", "theirs": "2"}


# -- finalizers and status patches --------------------------------------------------------------


async def test_patch_finalizers_never_drops_another_writers_finalizer(
    client: ApiClient, namespace: str
) -> None:
    body = {"metadata": {"name": "cm", "namespace": namespace, "finalizers": ["example.com/a"]}}
    created = await client.create(CONFIGMAPS, body)
    mine = copy.deepcopy(created)
    theirs = copy.deepcopy(created)
    add_finalizer(theirs, "example.com/b")
    await patch_finalizers(client, CONFIGMAPS, theirs)

    remove_finalizer(mine, "example.com/a")
    with pytest.raises(Conflict):
        await patch_finalizers(client, CONFIGMAPS, mine)

    fresh = await client.get(CONFIGMAPS, "cm", namespace=namespace)
    assert fresh["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]
    remove_finalizer(fresh, "example.com/a")
    remove_finalizer(fresh, "example.com/b")
    answer = await patch_finalizers(client, CONFIGMAPS, fresh)
    assert not answer["metadata"].get("finalizers")


async def test_patch_status_writes_only_the_status(client: ApiClient, namespace: str) -> None:
    key = {"metadata": {"name": "web", "namespace": namespace}}
    created, _ = await create_or_patch(client, DEPLOYMENTS, key, web_deployment)
    answer = await patch_status(client, DEPLOYMENTS, created, {"replicas": 2, "readyReplicas": 1})
    assert (answer["status"]["replicas"], answer["status"]["readyReplicas"]) == (2, 1)
    answer = await patch_status(client, DEPLOYMENTS, created, {"readyReplicas": 2})
    assert (answer["status"]["replicas"], answer["status"]["readyReplicas"]) == (2, 2)
    assert answer["metadata"]["generation"] == created["metadata"]["generation"]


# -- server-side apply -------------------------------------------------------------------------


def applied_configmap(namespace: str, **data: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "applied", "namespace": namespace},
        "data": dict(data),
    }


async def test_apply_is_idempotent_and_shares_the_object_with_other_managers(
    client: ApiClient, namespace: str
) -> None:
    first = await apply(
        client, CONFIGMAPS, applied_configmap(namespace, a="1", b="2"), field_manager="operator"
    )
    assert first["data"] == {"a": "1", "b": "2"}

    again = await apply(
        client, CONFIGMAPS, applied_configmap(namespace, a="1", b="2"), field_manager="operator"
    )
    assert rv(again) == rv(first)

    theirs = applied_configmap(namespace, c="3")
    theirs["metadata"]["labels"] = {"their": "label"}
    await apply(client, CONFIGMAPS, theirs, field_manager="someone-else")

    # Leaving out a field this manager applied before removes it; the others' fields stay.
    answer = await apply(
        client, CONFIGMAPS, applied_configmap(namespace, a="1"), field_manager="operator"
    )
    assert answer["data"] == {"a": "1", "c": "3"}
    assert answer["metadata"]["labels"] == {"their": "label"}


async def test_apply_conflicts_on_another_managers_field_unless_forced(
    client: ApiClient, namespace: str
) -> None:
    await apply(client, CONFIGMAPS, applied_configmap(namespace, a="1"), field_manager="them")
    with pytest.raises(Conflict):
        await apply(client, CONFIGMAPS, applied_configmap(namespace, a="2"), field_manager="us")
    forced = await apply(
        client, CONFIGMAPS, applied_configmap(namespace, a="2"), field_manager="us", force=True
    )
    assert forced["data"] == {"a": "2"}
    managers = {entry["manager"] for entry in forced["metadata"]["managedFields"]}
    assert "us" in managers


async def test_apply_status(client: ApiClient, namespace: str) -> None:
    key = {"metadata": {"name": "web", "namespace": namespace}}
    created, _ = await create_or_patch(client, DEPLOYMENTS, key, web_deployment)
    applied = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace},
        "status": {
            "observedGeneration": 1,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "reason": "Test",
                    "message": "",
                    "lastTransitionTime": "2026-01-02T03:04:05Z",
                    "lastUpdateTime": "2026-01-02T03:04:05Z",
                }
            ],
        },
    }
    answer = await apply_status(client, DEPLOYMENTS, applied, field_manager="operator")
    assert answer["status"]["observedGeneration"] == 1
    assert answer["status"]["conditions"][0]["type"] == "Available"
    assert answer["spec"] == created["spec"]

    again = await apply_status(client, DEPLOYMENTS, applied, field_manager="operator")
    assert rv(again) == rv(answer)
