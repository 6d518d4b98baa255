"""DiscoveryClient: aggregated discovery when the server serves it, legacy otherwise."""

from __future__ import annotations

import pytest
from discovery_fakes import AGGREGATED, FakeDiscovery, failing

from kcontrol.client import DEPLOYMENTS, NODES, PODS, Resource
from kcontrol.discovery import APIGroup, DiscoveryClient
from kcontrol.errors import ApiConnectionError, Forbidden, NotFound

HPA_V2 = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
HPA_V1 = Resource("autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
SERVED = [PODS, NODES, DEPLOYMENTS, HPA_V2, HPA_V1]
EXPECTED_RESOURCES = {
    "v1": (PODS, NODES),
    "apps/v1": (DEPLOYMENTS,),
    "autoscaling/v2": (HPA_V2,),
    "autoscaling/v1": (HPA_V1,),
}
EXPECTED_GROUPS = (
    APIGroup("", ("v1",)),
    APIGroup("apps", ("v1",)),
    APIGroup("autoscaling", ("v2", "v1")),
)


async def test_aggregated_discovery_reads_everything_in_two_requests() -> None:
    server = FakeDiscovery(list(SERVED))
    found = await DiscoveryClient(server).server_groups_and_resources()
    assert found.groups == EXPECTED_GROUPS
    assert found.resources == EXPECTED_RESOURCES
    assert found.failed == {}
    assert sorted(server.paths()) == ["/api", "/apis"]
    for _, accept in server.requests:
        assert accept is not None
        assert accept.split(",") == [AGGREGATED, "application/json"]


async def test_legacy_server_falls_back_to_each_group_version_document() -> None:
    server = FakeDiscovery(list(SERVED), aggregated=False)
    found = await DiscoveryClient(server).server_groups_and_resources()
    assert found.groups == EXPECTED_GROUPS
    assert found.resources == EXPECTED_RESOURCES
    assert sorted(server.paths()) == [
        "/api",
        "/api/v1",
        "/apis",
        "/apis/apps/v1",
        "/apis/autoscaling/v1",
        "/apis/autoscaling/v2",
    ]
    per_version = [accept for path, accept in server.requests if path.count("/") > 1]
    assert per_version == [None] * 4, "a group version's document is always the legacy one"


async def test_legacy_mode_never_asks_for_aggregated_discovery() -> None:
    server = FakeDiscovery(list(SERVED))  # would serve it if asked
    found = await DiscoveryClient(server, legacy=True).server_groups_and_resources()
    assert found.resources == EXPECTED_RESOURCES
    assert all(accept is None for _, accept in server.requests)
    assert len(server.requests) == 6


async def test_a_failed_group_version_is_reported_not_raised() -> None:
    server = FakeDiscovery(list(SERVED), aggregated=False)
    server.errors["/apis/autoscaling/v1"] = failing("metrics server down")
    found = await DiscoveryClient(server).server_groups_and_resources()
    assert "autoscaling/v1" not in found.resources
    assert "metrics server down" in found.failed["autoscaling/v1"]
    assert found.resources["autoscaling/v2"] == (HPA_V2,)


async def test_a_stale_aggregated_version_is_reported_and_left_out_of_its_group() -> None:
    server = FakeDiscovery(list(SERVED), stale={"autoscaling/v2"})
    found = await DiscoveryClient(server).server_groups_and_resources()
    assert found.groups[2] == APIGroup("autoscaling", ("v1",))
    assert "autoscaling/v2" not in found.resources
    assert list(found.failed) == ["autoscaling/v2"]


async def test_a_failed_root_raises() -> None:
    server = FakeDiscovery(list(SERVED))
    server.errors["/apis"] = Forbidden("no")
    with pytest.raises(Forbidden):
        await DiscoveryClient(server).server_groups_and_resources()


async def test_a_server_without_the_core_group_is_tolerated() -> None:
    server = FakeDiscovery([DEPLOYMENTS])
    server.errors["/api"] = NotFound("nope")
    assert await DiscoveryClient(server).server_groups() == (APIGroup("apps", ("v1",)),)


@pytest.mark.parametrize("aggregated", [True, False])
async def test_server_groups(aggregated: bool) -> None:
    server = FakeDiscovery(list(SERVED), aggregated=aggregated)
    assert await DiscoveryClient(server).server_groups() == EXPECTED_GROUPS
    assert sorted(server.paths()) == ["/api", "/apis"]


async def test_server_resources_for_one_group_version() -> None:
    server = FakeDiscovery(list(SERVED))
    client = DiscoveryClient(server)
    assert await client.server_resources_for("v1") == (PODS, NODES)
    assert await client.server_resources_for("autoscaling/v1") == (HPA_V1,)
    assert server.requests == [("/api/v1", None), ("/apis/autoscaling/v1", None)]
    with pytest.raises(NotFound):
        await client.server_resources_for("demo.example.com/v1")
    with pytest.raises(ValueError, match="not an apiVersion"):
        await client.server_resources_for("a/b/c")


async def test_a_document_that_is_not_json_is_a_connection_error() -> None:
    class Garbage:
        async def get_raw(self, path: str, *, accept: str | None = None) -> bytes:
            return b"<html>proxy error</html>" if path == "/apis/apps/v1" else b"[]"

    client = DiscoveryClient(Garbage())
    with pytest.raises(ApiConnectionError, match="not JSON"):
        await client.server_resources_for("apps/v1")
    with pytest.raises(ApiConnectionError, match="not an object"):
        await client.server_resources_for("v1")


@pytest.mark.parametrize("aggregated", [True, False], ids=["aggregated", "legacy"])
async def test_supporting_filters_by_every_verb_given(aggregated: bool) -> None:
    deletable = ["create", "delete", "get", "list", "watch"]
    server = FakeDiscovery(list(SERVED), aggregated=aggregated)
    server.verbs = {PODS: deletable, DEPLOYMENTS: deletable, NODES: ["delete", "get", "list"]}
    found = await DiscoveryClient(server).server_groups_and_resources()
    assert found.verbs[NODES] == frozenset({"delete", "get", "list"})
    assert found.supporting("delete", "list", "watch") == [PODS, DEPLOYMENTS]
    assert found.supporting("get") == SERVED
