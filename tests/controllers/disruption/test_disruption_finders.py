"""The finders: upstream's TestBasicFinderFunctions, TestDeploymentFinderFunction,
TestScaleResource and TestScaleFinderNoResource, on the fake client (the scale GET answered
by a reactor, discovery by a stub)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from disruption_fixtures import (
    NS,
    Fixture,
    controller_ref,
    new_deployment,
    new_pdb,
    new_pod,
    new_rc,
    new_rs,
    new_sts,
)

from kcontrol.client import Resource
from kcontrol.discovery import StaticRESTMapper
from kcontrol.errors import NotFound
from kcontrol.testing import Action, FakeClient
from kcontrol_controllers.disruption import DiscoveryScaleSupport, ScaleFinder
from kcontrol_controllers.disruption._finders import (
    ControllerScale,
    group_of,
    has_scale_subresource,
)

CUSTOM = Resource("custom.k8s.io", "v1", "customresources", "customresource")
CUSTOM_UID = "uid-custom"


def ref(api_version: str, kind: str, name: str = "foobar", uid: str = "") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}


@pytest.mark.parametrize(
    ("finder", "api_version", "kind", "workload", "scale"),
    [
        pytest.param("replica_set", "apps/v1", "ReplicaSet", new_rs(10), 10, id="rs-apps"),
        pytest.param(
            "replica_set", "extensions/v1beta1", "ReplicaSet", new_rs(10), 10, id="rs-extensions"
        ),
        pytest.param(
            "replica_set", "invalid/v1", "ReplicaSet", new_rs(10), None, id="rs-invalid-group"
        ),
        pytest.param(
            "replication_controller",
            "/v1",
            "ReplicationController",
            new_rc(12),
            12,
            id="rc-empty-group",
        ),
        pytest.param(
            "replication_controller", "v1", "ReplicationController", new_rc(12), 12, id="rc-core"
        ),
        pytest.param(
            "replication_controller",
            "apps/v1",
            "ReplicationController",
            new_rc(12),
            None,
            id="rc-invalid-group",
        ),
        pytest.param("stateful_set", "apps/v1", "StatefulSet", new_sts(14), 14, id="sts-apps"),
        pytest.param(
            "stateful_set", "apps/v1", "ReplicaSet", new_sts(14), None, id="sts-invalid-kind"
        ),
    ],
)
async def test_basic_finder_functions(
    finder: str, api_version: str, kind: str, workload: dict[str, Any], scale: int | None
) -> None:
    """TestBasicFinderFunctions: each finder knows its kind in its groups only."""
    f = Fixture()
    f.cache(workload)
    uid = workload["metadata"]["uid"]
    found = await getattr(f.controller.finders, finder)(ref(api_version, kind, uid=uid), NS)
    assert found == (None if scale is None else ControllerScale(uid, scale))


async def test_finder_ignores_an_object_of_another_uid() -> None:
    """A cached object of the reference's name but another UID is not its controller."""
    f = Fixture()
    f.cache(new_rs(10))
    assert (
        await f.controller.finders.replica_set(ref("apps/v1", "ReplicaSet", uid="old"), NS) is None
    )


@pytest.mark.parametrize(
    ("rs_api_version", "rs_kind", "dep_api_version", "dep_kind", "scale"),
    [
        pytest.param("apps/v1", "ReplicaSet", "extensions/v1", "Deployment", 10, id="happy-path"),
        pytest.param(
            "invalid/v1", "ReplicaSet", "apps/v1", "Deployment", None, id="invalid-rs-apiVersion"
        ),
        pytest.param("apps/v1", "InvalidKind", "apps/v1", "Deployment", None, id="invalid-rs-kind"),
        pytest.param(
            "extensions/v1",
            "ReplicaSet",
            "deployment/v1",
            "Deployment",
            None,
            id="invalid-deployment-apiVersion",
        ),
        pytest.param(
            "apps/v1",
            "ReplicaSet",
            "extensions/v1",
            "InvalidKind",
            None,
            id="invalid-deployment-kind",
        ),
    ],
)
async def test_deployment_finder(
    rs_api_version: str, rs_kind: str, dep_api_version: str, dep_kind: str, scale: int | None
) -> None:
    """TestDeploymentFinderFunction: a ReplicaSet's Deployment scale, only through the
    right groups and kinds at both steps."""
    f = Fixture()
    deployment = f.cache(new_deployment(10))
    rs = new_rs(5)
    owner = controller_ref(deployment)
    owner.update(apiVersion=dep_api_version, kind=dep_kind)
    rs["metadata"]["ownerReferences"] = [owner]
    f.cache(rs)
    found = await f.controller.finders.deployment(
        ref(rs_api_version, rs_kind, uid=rs["metadata"]["uid"]), NS
    )
    expected = None if scale is None else ControllerScale(deployment["metadata"]["uid"], scale)
    assert found == expected


async def test_replica_set_of_a_deployment_is_left_to_the_deployment_finder() -> None:
    f = Fixture()
    deployment = f.cache(new_deployment(10))
    rs = f.cache(new_rs(5, owner=deployment))
    rs_ref = controller_ref(rs)
    assert await f.controller.finders.replica_set(rs_ref, NS) is None
    assert await f.controller.finders.find(rs_ref, NS) == ControllerScale(
        deployment["metadata"]["uid"], 10
    )


def test_group_of() -> None:
    assert [group_of(v) for v in ("v1", "/v1", "", "apps/v1")] == ["", "", "", "apps"]
    with pytest.raises(ValueError, match="unexpected GroupVersion"):
        group_of("a/b/c")


class StubSupport:
    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[Resource] = []

    async def implements_scale(self, resource: Resource) -> bool:
        self.asked.append(resource)
        return self.answer


def scale_reactor(replicas: int, uid: str = CUSTOM_UID) -> Any:
    def react(action: Action) -> dict[str, Any]:
        assert action.subresource == "scale"
        return {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {"name": action.name, "namespace": action.namespace, "uid": uid},
            "spec": {"replicas": replicas},
        }

    return react


async def test_scale_resource() -> None:
    """TestScaleResource: four pods of a custom resource of scale 10 under maxUnavailable 5:
    expected 10, desired 5, 0 allowed (4 healthy)."""
    client = FakeClient()
    client.register(CUSTOM)
    client.prepend_reactor("get", CUSTOM, scale_reactor(10))
    finder = ScaleFinder(client, StaticRESTMapper([CUSTOM]), StubSupport(True))
    f = Fixture(scale_finder=finder)
    key = f.add_pdb(new_pdb(max_unavailable=5))
    for i in range(4):
        pod = new_pod(f"pod-{i}")
        pod["metadata"]["ownerReferences"] = [
            ref("custom.k8s.io/v1", "customresource", "cr", CUSTOM_UID)
        ]
        f.cache(pod)
    await f.sync(key)
    f.verify(0, 4, 5, 10)
    gets = client.actions_for("get", CUSTOM)
    assert [(a.name, a.subresource) for a in gets] == [("cr", "scale")]  # once per controller


@pytest.mark.parametrize(
    ("implements", "error"),
    [
        pytest.param(True, None, id="resource-implements-scale"),
        pytest.param(
            False,
            "customresources.custom.k8s.io does not implement the scale subresource",
            id="no-scale",
        ),
    ],
)
async def test_scale_finder_no_resource(implements: bool, error: str | None) -> None:
    """TestScaleFinderNoResource: after a 404, no object when discovery lists a scale
    subresource, an error when it does not."""
    client = FakeClient()
    client.register(CUSTOM)

    def missing(action: Action) -> None:
        raise NotFound('customresources.custom.k8s.io "cr" not found')

    client.prepend_reactor("get", CUSTOM, missing)
    support = StubSupport(implements)
    finder = ScaleFinder(client, StaticRESTMapper([CUSTOM]), support)
    custom_ref = ref("custom.k8s.io/v1", "customresource", "cr", CUSTOM_UID)
    if error is None:
        assert await finder(custom_ref, NS) is None
    else:
        with pytest.raises(LookupError, match=error):
            await finder(custom_ref, NS)
    assert support.asked == [CUSTOM]


async def test_scale_of_another_uid_is_not_the_controller() -> None:
    client = FakeClient()
    client.register(CUSTOM)
    client.prepend_reactor("get", CUSTOM, scale_reactor(3, uid="someone-else"))
    finder = ScaleFinder(client, StaticRESTMapper([CUSTOM]), StubSupport(True))
    assert await finder(ref("custom.k8s.io/v1", "customresource", "cr", CUSTOM_UID), NS) is None


@pytest.mark.parametrize(
    ("entries", "implements"),
    [
        pytest.param(
            [
                {"name": "customresources/status", "kind": "customresource"},
                {
                    "name": "customresources/scale",
                    "kind": "Scale",
                    "group": "autoscaling",
                    "version": "v1",
                },
                {"name": "customresources", "kind": "customresource"},
            ],
            True,
            id="resource-implements-scale",
        ),
        pytest.param(
            [
                {"name": "customresources", "kind": "customresource"},
                {"name": "customresources/scale", "kind": "customresource"},
            ],
            False,
            id="unsupported-scale-format",
        ),
        pytest.param([{"name": "customresources", "kind": "customresource"}], False, id="no-scale"),
        pytest.param(
            [
                {
                    "name": "customresources/scale",
                    "kind": "Scale",
                    "group": "custom.k8s.io",
                    "version": "v1",
                }
            ],
            False,
            id="scale-of-another-group",
        ),
        pytest.param(
            [
                {
                    "name": "customresources/scale",
                    "kind": "Thing",
                    "group": "autoscaling",
                    "version": "v1",
                }
            ],
            False,
            id="autoscaling-entry-of-another-kind",
        ),
        pytest.param(
            [{"name": "others/scale", "kind": "Scale", "group": "autoscaling", "version": "v1"}],
            False,
            id="scale-of-another-resource",
        ),
    ],
)
def test_has_scale_subresource(entries: list[dict[str, str]], implements: bool) -> None:
    """TestScaleFinderNoResource's discovery documents, read as upstream's
    ``implementsScale`` reads them."""
    document = {"kind": "APIResourceList", "groupVersion": "custom.k8s.io/v1", "resources": entries}
    assert has_scale_subresource(document, "customresources") is implements


class StubRaw:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.paths: list[str] = []

    async def get_raw(self, path: str, *, accept: str | None = None) -> bytes:
        self.paths.append(path)
        return json.dumps(self.document).encode()


@pytest.mark.parametrize(
    ("resource", "path"),
    [
        pytest.param(CUSTOM, "/apis/custom.k8s.io/v1", id="named-group"),
        pytest.param(Resource("", "v1", "customresources", "X"), "/api/v1", id="core-group"),
    ],
)
async def test_discovery_scale_support_reads_the_group_version(
    resource: Resource, path: str
) -> None:
    raw = StubRaw(
        {
            "resources": [
                {
                    "name": "customresources/scale",
                    "kind": "Scale",
                    "group": "autoscaling",
                    "version": "v1",
                }
            ]
        }
    )
    assert await DiscoveryScaleSupport(raw).implements_scale(resource) is True
    assert raw.paths == [path]
