"""Reading the discovery documents: aggregated and legacy shapes as the apiserver sends them."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol.client import Resource
from kcontrol.discovery._documents import (
    APIGroup,
    ServerResources,
    is_aggregated,
    parse_aggregated,
    parse_api_group_list,
    parse_api_versions,
    parse_resource_list,
    split_api_version,
)

# Trimmed from a kube-apiserver's /apis with the aggregated Accept.
AGGREGATED_APIS: dict[str, Any] = {
    "kind": "APIGroupDiscoveryList",
    "apiVersion": "apidiscovery.k8s.io/v2",
    "metadata": {},
    "items": [
        {
            "metadata": {"name": "apps", "creationTimestamp": None},
            "versions": [
                {
                    "version": "v1",
                    "resources": [
                        {
                            "resource": "deployments",
                            "responseKind": {"group": "", "version": "", "kind": "Deployment"},
                            "scope": "Namespaced",
                            "singularResource": "deployment",
                            "verbs": ["create", "delete", "get", "list", "watch"],
                            "shortNames": ["deploy"],
                            "subresources": [
                                {
                                    "subresource": "scale",
                                    "responseKind": {
                                        "group": "autoscaling",
                                        "version": "v1",
                                        "kind": "Scale",
                                    },
                                    "verbs": ["get", "patch", "update"],
                                },
                            ],
                        },
                    ],
                    "freshness": "Current",
                },
            ],
        },
        {
            "metadata": {"name": "autoscaling"},
            "versions": [
                {
                    "version": "v2",
                    "resources": [
                        {
                            "resource": "horizontalpodautoscalers",
                            "responseKind": {"kind": "HorizontalPodAutoscaler"},
                            "scope": "Namespaced",
                        }
                    ],
                },
                {
                    "version": "v1",
                    "resources": [
                        {
                            "resource": "horizontalpodautoscalers",
                            "responseKind": {"kind": "HorizontalPodAutoscaler"},
                            "scope": "Namespaced",
                        }
                    ],
                },
            ],
        },
        {
            "metadata": {"name": "storage.k8s.io"},
            "versions": [
                {
                    "version": "v1",
                    "resources": [
                        {
                            "resource": "storageclasses",
                            "responseKind": {"kind": "StorageClass"},
                            "scope": "Cluster",
                        },
                        # a parent listed only for its subresources: no kind, left out
                        {"resource": "parents", "scope": "Cluster", "responseKind": None},
                    ],
                }
            ],
        },
        {
            "metadata": {"name": "metrics.k8s.io"},
            "versions": [{"version": "v1beta1", "resources": [], "freshness": "Stale"}],
        },
    ],
}

AGGREGATED_API: dict[str, Any] = {
    "kind": "APIGroupDiscoveryList",
    "apiVersion": "apidiscovery.k8s.io/v2",
    "metadata": {},
    "items": [
        {
            "metadata": {"creationTimestamp": None},
            "versions": [
                {
                    "version": "v1",
                    "resources": [
                        {
                            "resource": "pods",
                            "responseKind": {"kind": "Pod"},
                            "scope": "Namespaced",
                        },
                        {"resource": "nodes", "responseKind": {"kind": "Node"}, "scope": "Cluster"},
                    ],
                }
            ],
        }
    ],
}


def test_aggregated_document_gives_groups_resources_and_stale_versions() -> None:
    groups, resources, stale = parse_aggregated(AGGREGATED_APIS)
    assert groups == [
        APIGroup("apps", ("v1",)),
        APIGroup("autoscaling", ("v2", "v1")),
        APIGroup("storage.k8s.io", ("v1",)),
    ]
    assert resources == {
        "apps/v1": (Resource("apps", "v1", "deployments", "Deployment"),),
        "autoscaling/v2": (
            Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler"),
        ),
        "autoscaling/v1": (
            Resource("autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler"),
        ),
        "storage.k8s.io/v1": (
            Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", namespaced=False),
        ),
    }
    assert list(stale) == ["metrics.k8s.io/v1beta1"]


def test_aggregated_core_group_has_no_name() -> None:
    groups, resources, stale = parse_aggregated(AGGREGATED_API)
    assert groups == [APIGroup("", ("v1",))]
    assert resources == {
        "v1": (
            Resource("", "v1", "pods", "Pod"),
            Resource("", "v1", "nodes", "Node", namespaced=False),
        )
    }
    assert stale == {}


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(AGGREGATED_APIS, True, id="aggregated"),
        pytest.param({"kind": "APIGroupList", "groups": []}, False, id="legacy-apis"),
        pytest.param({"kind": "APIVersions", "versions": ["v1"]}, False, id="legacy-api"),
        pytest.param(
            {**AGGREGATED_APIS, "apiVersion": "apidiscovery.k8s.io/v2beta1"}, False, id="v2beta1"
        ),
    ],
)
def test_is_aggregated(document: dict[str, Any], expected: bool) -> None:
    assert is_aggregated(document) is expected


def test_legacy_api_versions_is_the_core_group() -> None:
    assert parse_api_versions({"kind": "APIVersions", "versions": ["v1"]}) == [
        APIGroup("", ("v1",))
    ]
    assert parse_api_versions({"kind": "APIVersions", "versions": []}) == []


def test_legacy_group_list_puts_the_preferred_version_first() -> None:
    document = {
        "kind": "APIGroupList",
        "groups": [
            {
                "name": "autoscaling",
                "versions": [
                    {"groupVersion": "autoscaling/v1", "version": "v1"},
                    {"groupVersion": "autoscaling/v2", "version": "v2"},
                ],
                "preferredVersion": {"groupVersion": "autoscaling/v2", "version": "v2"},
            },
            {
                "name": "apps",
                "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"},
            },
            {"name": "empty.example.com", "versions": []},
        ],
    }
    assert parse_api_group_list(document) == [
        APIGroup("autoscaling", ("v2", "v1")),
        APIGroup("apps", ("v1",)),
    ]


def test_legacy_resource_list_leaves_out_subresources() -> None:
    document = {
        "kind": "APIResourceList",
        "groupVersion": "apps/v1",
        "resources": [
            {"name": "deployments", "namespaced": True, "kind": "Deployment", "verbs": []},
            {
                "name": "deployments/scale",
                "namespaced": True,
                "kind": "Scale",
                "group": "autoscaling",
            },
            {"name": "deployments/status", "namespaced": True, "kind": "Deployment"},
            {"name": "controllerrevisions", "namespaced": True, "kind": "ControllerRevision"},
        ],
    }
    assert parse_resource_list("apps/v1", document) == (
        Resource("apps", "v1", "deployments", "Deployment"),
        Resource("apps", "v1", "controllerrevisions", "ControllerRevision"),
    )
    core = {"resources": [{"name": "nodes", "namespaced": False, "kind": "Node"}]}
    assert parse_resource_list("v1", core) == (Resource("", "v1", "nodes", "Node", False),)


@pytest.mark.parametrize(
    ("api_version", "expected"),
    [
        pytest.param("v1", ("", "v1"), id="core"),
        pytest.param("apps/v1", ("apps", "v1"), id="group"),
        pytest.param("demo.example.com/v1alpha1", ("demo.example.com", "v1alpha1"), id="crd"),
    ],
)
def test_split_api_version(api_version: str, expected: tuple[str, str]) -> None:
    assert split_api_version(api_version) == expected


@pytest.mark.parametrize("api_version", ["", "/v1", "apps/", "a/b/v1"])
def test_split_api_version_refuses_malformed(api_version: str) -> None:
    with pytest.raises(ValueError, match="not an apiVersion"):
        split_api_version(api_version)


def test_api_group_versions_and_server_resources_order() -> None:
    with pytest.raises(ValueError, match="no versions"):
        APIGroup("apps", ())
    autoscaling = APIGroup("autoscaling", ("v2", "v1"))
    assert autoscaling.preferred_version == "v2"
    assert autoscaling.api_versions == ("autoscaling/v2", "autoscaling/v1")
    assert APIGroup("", ("v1",)).api_versions == ("v1",)
    v1 = Resource("autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
    v2 = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
    pods = Resource("", "v1", "pods", "Pod")
    found = ServerResources(
        groups=(APIGroup("", ("v1",)), autoscaling),
        resources={"autoscaling/v1": (v1,), "v1": (pods,), "autoscaling/v2": (v2,)},
    )
    assert found.all_resources() == [pods, v2, v1]


def test_preferred_resources_keep_one_version_of_each_resource() -> None:
    # client-go's ServerPreferredResources: the preferred version's resources, and from the
    # other versions only those the preferred one does not serve; none when every version
    # failed to read.
    def widgets(version: str) -> Resource:
        return Resource("example.com", version, "widgets", "Widget")

    gadgets = Resource("example.com", "v1alpha1", "gadgets", "Gadget")
    pods = Resource("", "v1", "pods", "Pod")
    found = ServerResources(
        groups=(
            APIGroup("", ("v1",)),
            APIGroup("example.com", ("v2", "v1", "v1alpha1")),
            APIGroup("broken.example.com", ("v1",)),
        ),
        resources={
            "v1": (pods,),
            "example.com/v1alpha1": (widgets("v1alpha1"), gadgets),
            "example.com/v1": (widgets("v1"),),
            "example.com/v2": (widgets("v2"),),
        },
        failed={"broken.example.com/v1": "stale"},
        verbs={widgets("v2"): frozenset({"delete", "list", "watch"}), gadgets: frozenset()},
    )
    assert found.preferred_resources() == [pods, widgets("v2"), gadgets]
    assert found.supporting("delete", "list", "watch", preferred=True) == [widgets("v2")]
    assert found.supporting("delete", "list", "watch") == [widgets("v2")]
    assert len(found.all_resources()) == 5
