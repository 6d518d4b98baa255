"""A scoped cache on the real apiserver (issue 39): an operator whose RBAC is a Role in two
namespaces runs with its Manager's cache narrowed to them (one reflector per namespace: a
cluster-wide list would be refused and the cache would never sync), and its Secrets cache
further to a label; it reconciles in both; a read elsewhere is a clear error, not "not
found" and not a watch the Role refuses; one object outside the cache is one direct
``client.get`` away. This module's apiserver writes an audit log of the operator user's
reads, which shows it never listed or watched outside its two namespaces."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
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
AUDIT_POLICY = f"""\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted", "Panic"]
rules:
- level: Metadata
  users: ["{USER}"]
  verbs: ["get", "list", "watch"]
- level: None
"""
"""Every read of the operator's user (the Manager's informers and its direct reads)."""


@pytest.fixture(scope="module")
def audit_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where this module's apiserver writes the audit log of :data:`USER`'s reads."""
    return tmp_path_factory.mktemp("audit") / "audit.log"


@pytest.fixture(scope="module")
def control_plane(audit_log: Path) -> Iterator[ControlPlane]:
    """This module's own etcd + kube-apiserver, writing ``audit_log``."""
    policy = audit_log.with_name("policy.yaml")
    policy.write_text(AUDIT_POLICY)
    plane = ControlPlane(
        extra_apiserver_args=[f"--audit-policy-file={policy}", f"--audit-log-path={audit_log}"]
    )
    asyncio.run(plane.start())
    try:
        yield plane
    finally:
        plane.stop()


def reads_of(log: Path, user: str) -> list[tuple[str, str, str, int]]:
    """``(verb, resource, namespace, code)`` of every audited read of ``user``."""
    reads = []
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event.get("stage") != "ResponseComplete" or event["user"]["username"] != user:
            continue
        ref = event.get("objectRef") or {}
        code = int((event.get("responseStatus") or {}).get("code", 0))
        reads.append((event["verb"], ref.get("resource", ""), ref.get("namespace", ""), code))
    return reads


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
    control_plane: ControlPlane, namespace: str, audit_log: Path
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

    # The apiserver's own record: every list and watch of the operator's user was in one of
    # its two namespaces, but the test's deliberate list elsewhere (refused).
    reads = reads_of(audit_log, USER)
    outside = [r for r in reads if r[0] in ("list", "watch") and r[2] not in (namespace, second)]
    assert outside == [("list", "configmaps", other, 403)], outside
    for where in (namespace, second):
        for resource in ("configmaps", "secrets"):
            assert ("watch", resource, where, 200) in reads, (resource, where, reads)


async def _value(seen: dict[str, Any], key: str) -> Any:
    return seen.get(key)


async def _both(seen: dict[str, Any], first: str, second: str) -> bool:
    return {f"{first}/web", f"{second}/web"} <= seen["reconciled"]
