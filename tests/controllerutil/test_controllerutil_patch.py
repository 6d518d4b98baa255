"""patch_status, apply and apply_status: the requests they send (fake client), and the status
patch's effect. Server-side apply's effect needs the real apiserver: see
test_controllerutil_integration.py."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol.client import CONFIGMAPS, DEPLOYMENTS, NAMESPACES, Object, PatchType
from kcontrol.controllerutil import apply, apply_status, patch_status
from kcontrol.testing import Action, FakeClient


def deployment(**status: Any) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1},
        "status": dict(status),
    }


async def test_patch_status_merges_into_the_status_subresource() -> None:
    client = FakeClient([deployment(replicas=1, readyReplicas=0)])
    cached = client.tracker.get(DEPLOYMENTS, "web", namespace="default")
    status = {"readyReplicas": 1, "conditions": [{"type": "Available", "status": "True"}]}

    answer = await patch_status(client, DEPLOYMENTS, cached, status)

    [action] = client.actions
    assert str(action) == "patch deployments default/web/status"
    assert action.patch_type is PatchType.MERGE
    assert action.patch == {"status": status}  # no resourceVersion, nothing but status
    assert answer["status"] == {
        "replicas": 1,
        "readyReplicas": 1,
        "conditions": [{"type": "Available", "status": "True"}],
    }
    assert answer["spec"] == {"replicas": 1}


async def test_patch_status_none_removes_a_member() -> None:
    client = FakeClient([deployment(replicas=1, readyReplicas=1)])
    answer = await patch_status(client, DEPLOYMENTS, deployment(), {"readyReplicas": None})
    assert answer["status"] == {"replicas": 1}


async def test_patch_status_needs_the_name() -> None:
    client = FakeClient()
    with pytest.raises(ValueError, match=r"metadata\.name"):
        await patch_status(client, DEPLOYMENTS, {"metadata": {"namespace": "default"}}, {})
    assert client.actions == []


def answering(recorded: list[Action]) -> Any:
    def reactor(action: Action) -> Object:
        recorded.append(action)
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": action.name}}

    return reactor


APPLIED = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "cm", "namespace": "default", "labels": {"app": "web"}},
    "data": {"key": "value"},
}


@pytest.mark.parametrize("force", [False, True])
async def test_apply_sends_the_configuration_as_an_apply_patch(force: bool) -> None:
    client = FakeClient()
    recorded: list[Action] = []
    client.prepend_reactor("patch", CONFIGMAPS, answering(recorded))

    await apply(client, CONFIGMAPS, APPLIED, field_manager="website-operator", force=force)

    [action] = recorded
    assert str(action) == "patch configmaps default/cm"
    assert action.patch_type is PatchType.APPLY
    assert action.patch == APPLIED
    assert action.options == {"field_manager": "website-operator", "force": force}


async def test_apply_status_targets_the_status_subresource() -> None:
    client = FakeClient()
    recorded: list[Action] = []
    client.prepend_reactor("patch", DEPLOYMENTS, answering(recorded))
    applied = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "status": {"observedGeneration": 2},
    }

    await apply_status(client, DEPLOYMENTS, applied, field_manager="op", force=True)

    [action] = recorded
    assert str(action) == "patch deployments default/web/status"
    assert action.patch_type is PatchType.APPLY
    assert action.patch == applied
    assert action.options == {"field_manager": "op", "force": True}


async def test_apply_of_a_cluster_scoped_object() -> None:
    client = FakeClient()
    recorded: list[Action] = []
    client.prepend_reactor("patch", NAMESPACES, answering(recorded))
    applied = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    await apply(client, NAMESPACES, applied, field_manager="op")
    assert [str(a) for a in recorded] == ["patch namespaces team"]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"apiVersion": None}, "apiVersion"),
        ({"kind": None}, "kind"),
        ({"kind": "Secret"}, "kind"),
        ({"apiVersion": "v2"}, "apiVersion"),
        ({"metadata": {"namespace": "default"}}, r"metadata\.name"),
        ({"metadata": {"name": "cm"}}, r"metadata\.namespace"),
    ],
    ids=["no-apiVersion", "no-kind", "other-kind", "other-version", "no-name", "no-namespace"],
)
async def test_apply_refuses_an_incomplete_configuration(change: Object, match: str) -> None:
    client = FakeClient()
    applied = {k: v for k, v in (APPLIED | change).items() if v is not None}
    with pytest.raises(ValueError, match=match):
        await apply(client, CONFIGMAPS, applied, field_manager="op")
    assert client.actions == []


async def test_apply_needs_a_field_manager() -> None:
    client = FakeClient()
    with pytest.raises(ValueError, match="field_manager"):
        await apply(client, CONFIGMAPS, APPLIED, field_manager="")
    assert client.actions == []
