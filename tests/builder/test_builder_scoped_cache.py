"""A scoped cache on the real apiserver (issue 39): an operator whose RBAC is a Role in two
namespaces runs with its Manager's cache narrowed to them (one reflector per namespace: a
cluster-wide list would be refused and the cache would never sync), and its Secrets cache
further to a label; it reconciles in both; a read elsewhere is a clear error, not "not
found" and not a watch the Role refuses; one object outside the cache is one direct
``client.get`` away."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from builder_helpers import eventually, new_manager

from kcontrol.builder import Request, controller_managed_by
from kcontrol.client import CONFIGMAPS, NAMESPACES, SECRETS, Resource
from kcontrol.envtest import ControlPlane
from kcontrol.errors import Forbidden, NotFound, OutsideCacheScope
from kcontrol.informers import CacheScope
from kcontrol.testing import running

pytestmark = pytest.mark.integration

ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLEBINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
USER = "bob"


def role(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "operator", "namespace": namespace},
        "rules": [
            {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["*"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
        ],
    }


def binding(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "operator", "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "operator"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}],
    }


async def test_an_operator_with_a_role_in_two_namespaces_runs_on_a_scoped_cache(
    control_plane: ControlPlane, namespace: str
) -> None:
    other = f"other-{uuid.uuid4().hex[:6]}"
    second = f"second-{uuid.uuid4().hex[:6]}"
    admin = control_plane.admin_client()
    manager = new_manager(
        control_plane,
        user=USER,  # whose RBAC is the Roles below
        namespaces=(namespace, second),
        cache_scopes={SECRETS: CacheScope(label_selector="app=registry")},
    )
    seen: dict[str, Any] = {"reconciled": set()}

    @controller_managed_by(manager).for_(CONFIGMAPS).complete
    async def reconcile(request: Request) -> None:
        seen["reconciled"].add(f"{request.namespace}/{request.name}")
        if request.namespace != namespace:
            return
        seen["registry"] = (await manager.cache.get(SECRETS, "registry", namespace=namespace))[
            "metadata"
        ]["name"]
        try:
            await manager.cache.get(SECRETS, "unlabelled", namespace=namespace)
        except NotFound:
            seen["unlabelled"] = "not cached"
        try:
            await manager.cache.get(CONFIGMAPS, "elsewhere", namespace=other)
        except OutsideCacheScope as error:
            seen["elsewhere"] = str(error)
        direct = await manager.client.get(SECRETS, "unlabelled", namespace=namespace)
        seen["direct"] = direct["metadata"]["name"]

    async with admin:
        for extra in (other, second):
            await admin.create(NAMESPACES, {"metadata": {"name": extra}})
        try:
            for granted in (namespace, second):
                await admin.create(ROLES, role(granted), namespace=granted)
                await admin.create(ROLEBINDINGS, binding(granted), namespace=granted)
            for name, labels in (("registry", {"app": "registry"}), ("unlabelled", {})):
                secret = {"metadata": {"name": name, "labels": labels}, "stringData": {"k": "v"}}
                await admin.create(SECRETS, secret, namespace=namespace)
            await admin.create(CONFIGMAPS, {"metadata": {"name": "elsewhere"}}, namespace=other)
            async with running(manager):
                for where in (namespace, second):
                    await admin.create(
                        CONFIGMAPS, {"metadata": {"name": "web"}, "data": {}}, namespace=where
                    )
                await eventually(
                    lambda: _value(seen, "direct"), message=f"no full reconcile: {seen}"
                )
                await eventually(
                    lambda: _both(seen, namespace, second), message=f"not both: {seen}"
                )
                with pytest.raises(Forbidden):  # the Role is all the operator has
                    await manager.client.list(CONFIGMAPS, namespace=other)
                informers = {
                    (i.resource.plural, i.namespaces, i._list_options.label_selector)
                    for i in manager.informers.informers()
                }
        finally:
            for extra in (other, second):
                await admin.delete(NAMESPACES, extra)

    assert seen["reconciled"] >= {f"{namespace}/web", f"{second}/web"}
    assert seen["registry"] == "registry"
    assert seen["unlabelled"] == "not cached", "outside the Secrets' label scope"
    assert f"namespace {other!r} are not cached" in seen["elsewhere"]
    assert f"'{namespace}'" in seen["elsewhere"] and f"'{second}'" in seen["elsewhere"], (
        "it says which it holds"
    )
    assert seen["direct"] == "unlabelled", "one direct read outside the cache"
    assert informers == {
        ("configmaps", (namespace, second), None),
        ("secrets", (namespace, second), "app=registry"),
    }, "no informer wider than the scope was started"


async def _value(seen: dict[str, Any], key: str) -> Any:
    return seen.get(key)


async def _both(seen: dict[str, Any], first: str, second: str) -> bool:
    return {f"{first}/web", f"{second}/web"} <= seen["reconciled"]
