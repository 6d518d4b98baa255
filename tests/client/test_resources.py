"""The resource constants: one place, re-exported where they always were, all listed; and the
path of one object, which every client builds its requests with.

That each constant matches the server's discovery is checked against a real apiserver in
tests/discovery/test_discovery_integration.py."""

from __future__ import annotations

import pytest

import kcontrol.client
import kcontrol.client._interface
from kcontrol.client import BUILTIN_RESOURCES, DEPLOYMENTS, NODES, PODS, Resource
from kcontrol.client._resources import object_path


def constants() -> dict[str, Resource]:
    return {
        name: value
        for name, value in vars(kcontrol.client).items()
        if name.isupper() and isinstance(value, Resource)
    }


def test_builtin_resources_lists_every_constant_once() -> None:
    assert len(set(BUILTIN_RESOURCES)) == len(BUILTIN_RESOURCES)
    assert set(BUILTIN_RESOURCES) == set(constants().values())
    assert len(constants()) >= 33


def test_each_constant_is_named_after_its_plural() -> None:
    for name, resource in constants().items():
        assert name == resource.plural.upper(), name


def test_kinds_and_api_versions_are_unique() -> None:
    seen = [(r.api_version, r.kind) for r in BUILTIN_RESOURCES]
    assert len(seen) == len(set(seen))


def test_the_old_import_paths_still_work() -> None:
    for name in ("PODS", "NAMESPACES", "CONFIGMAPS", "SECRETS", "EVENTS", "LEASES"):
        assert getattr(kcontrol.client._interface, name) is getattr(kcontrol.client, name)
    for name in ("DEPLOYMENTS", "REPLICASETS", "Resource"):
        assert getattr(kcontrol.client._interface, name) is getattr(kcontrol.client, name)


@pytest.mark.parametrize(
    ("resource", "name", "namespace", "subresource", "expected"),
    [
        pytest.param(PODS, "web", "ns", None, "/api/v1/namespaces/ns/pods/web", id="namespaced"),
        pytest.param(
            DEPLOYMENTS,
            "web",
            "ns",
            "status",
            "/apis/apps/v1/namespaces/ns/deployments/web/status",
            id="subresource",
        ),
        pytest.param(NODES, "n1", None, None, "/api/v1/nodes/n1", id="cluster-scoped"),
        pytest.param(NODES, "n1", "ns", None, "/api/v1/nodes/n1", id="namespace ignored"),
        pytest.param(PODS, "", "ns", None, "a Pod name is required", id="no name"),
        pytest.param(
            PODS, "web", None, None, "Pod is namespaced: a namespace is required", id="no namespace"
        ),
        pytest.param(
            PODS,
            "web",
            "",
            None,
            "Pod is namespaced: a namespace is required",
            id="empty namespace",
        ),
    ],
)
def test_object_path(
    resource: Resource, name: str, namespace: str | None, subresource: str | None, expected: str
) -> None:
    if not expected.startswith("/"):
        with pytest.raises(ValueError, match=expected):
            object_path(resource, name, namespace, subresource)
        return
    assert object_path(resource, name, namespace, subresource) == expected
