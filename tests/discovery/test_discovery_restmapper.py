"""REST mappers: the static one, and the dynamic one's cache, re-read on a miss and its rate
limit (controller-runtime's restmapper_test.go scenarios, on a fake discovery)."""

from __future__ import annotations

import asyncio

import pytest
from discovery_fakes import FakeDiscovery, failing

from kcontrol.client import (
    BUILTIN_RESOURCES,
    DEPLOYMENTS,
    NAMESPACES,
    NODES,
    PODS,
    SERVICES,
    Resource,
)
from kcontrol.clock import FakeClock
from kcontrol.discovery import (
    DiscoveryClient,
    DynamicRESTMapper,
    NoKindMatch,
    NoResourceMatch,
    RESTMapper,
    StaticRESTMapper,
)
from kcontrol.errors import ApiError, KcontrolError

WEBSITES = Resource("demo.example.com", "v1", "websites", "Website")
WEBSITES_V2 = Resource("demo.example.com", "v2", "websites", "Website")
BACKUPS = Resource("demo.example.com", "v1", "backups", "Backup", namespaced=False)


def mapper_of(server: FakeDiscovery, clock: FakeClock, interval: float = 1.0) -> DynamicRESTMapper:
    return DynamicRESTMapper(server, clock=clock, min_refresh_interval=interval)


# -- StaticRESTMapper ------------------------------------------------------------------------------


async def test_static_mapper_knows_the_builtins_by_default() -> None:
    mapper: RESTMapper = StaticRESTMapper()
    for resource in BUILTIN_RESOURCES:
        assert await mapper.resource_for(resource.api_version, resource.kind) is resource
        assert await mapper.kind_for(resource.api_version, resource.plural) is resource
    with pytest.raises(NoKindMatch) as caught:
        await mapper.resource_for("demo.example.com/v1", "Website")
    assert (caught.value.api_version, caught.value.kind) == ("demo.example.com/v1", "Website")
    assert "'Website'" in str(caught.value) and "'demo.example.com/v1'" in str(caught.value)
    with pytest.raises(NoKindMatch):
        await mapper.resource_for("apps/v2", "Deployment")  # the version matters


async def test_static_mapper_with_custom_resources() -> None:
    mapper = StaticRESTMapper([*BUILTIN_RESOURCES, WEBSITES])
    assert await mapper.resource_for("demo.example.com/v1", "Website") is WEBSITES
    assert await mapper.resource_for("v1", "Pod") is PODS
    only = StaticRESTMapper([WEBSITES])
    with pytest.raises(NoKindMatch):
        await only.resource_for("v1", "Pod")
    with pytest.raises(NoResourceMatch) as caught:
        await only.kind_for("v1", "pods")
    assert (caught.value.api_version, caught.value.plural) == ("v1", "pods")
    assert isinstance(caught.value, KcontrolError) and isinstance(caught.value, LookupError)


# -- DynamicRESTMapper: cache --------------------------------------------------------------------


async def test_first_lookup_reads_discovery_once_then_answers_from_the_cache() -> None:
    server = FakeDiscovery([PODS, NODES, DEPLOYMENTS, WEBSITES])
    mapper = mapper_of(server, FakeClock())
    assert server.requests == [], "nothing is read before the first lookup"
    assert await mapper.resource_for("apps/v1", "Deployment") == DEPLOYMENTS
    assert sorted(server.paths()) == ["/api", "/apis"]
    server.requests.clear()
    assert await mapper.resource_for("v1", "Node") == NODES
    assert await mapper.resource_for("demo.example.com/v1", "Website") == WEBSITES
    assert await mapper.kind_for("v1", "pods") == PODS
    assert server.requests == [], "hits ask nothing"


async def test_legacy_server_reads_only_what_it_needs_after_the_first_read() -> None:
    server = FakeDiscovery([PODS, DEPLOYMENTS, WEBSITES], aggregated=False)
    mapper = mapper_of(server, FakeClock())
    assert await mapper.resource_for("demo.example.com/v1", "Website") == WEBSITES
    assert await mapper.resource_for("v1", "Pod") == PODS
    assert len(server.requests) == 5  # /api, /apis and each of the 3 group versions, once


async def test_a_crd_installed_after_the_first_read_is_found_on_the_next_lookup() -> None:
    clock = FakeClock()
    server = FakeDiscovery([PODS, DEPLOYMENTS])
    mapper = mapper_of(server, clock)
    await mapper.resource_for("v1", "Pod")

    clock.step(1.0)
    server.serve(WEBSITES)  # the CRD is established
    server.requests.clear()
    assert await mapper.resource_for("demo.example.com/v1", "Website") == WEBSITES
    assert server.requests == [("/apis/demo.example.com/v1", None)], "only that group version"

    clock.step(1.0)
    server.serve(BACKUPS)  # a second kind in a group version already cached
    assert await mapper.resource_for("demo.example.com/v1", "Backup") == BACKUPS
    assert await mapper.resource_for("demo.example.com/v1", "Website") == WEBSITES


async def test_a_new_version_of_a_known_group_is_found() -> None:
    clock = FakeClock()
    server = FakeDiscovery([WEBSITES])
    mapper = mapper_of(server, clock)
    await mapper.resource_for("demo.example.com/v1", "Website")
    server.serve(WEBSITES_V2)
    assert await mapper.resource_for("demo.example.com/v2", "Website") == WEBSITES_V2
    assert await mapper.kind_for("demo.example.com/v2", "websites") == WEBSITES_V2


# -- DynamicRESTMapper: misses -------------------------------------------------------------------


async def test_unknown_kind_raises_no_kind_match_naming_it() -> None:
    server = FakeDiscovery([PODS, DEPLOYMENTS])
    mapper = mapper_of(server, FakeClock())
    with pytest.raises(NoKindMatch) as caught:
        await mapper.resource_for("demo.example.com/v1", "Website")
    assert (caught.value.api_version, caught.value.kind) == ("demo.example.com/v1", "Website")
    assert "does not serve" in str(caught.value)
    with pytest.raises(NoKindMatch) as caught:
        await mapper.resource_for("apps/v1", "Website")  # served group version, other kind
    assert "does not serve" not in str(caught.value)
    with pytest.raises(NoResourceMatch):
        await mapper.kind_for("apps/v1", "websites")


async def test_misses_are_rate_limited_per_group_version() -> None:
    clock = FakeClock()
    server = FakeDiscovery([PODS, DEPLOYMENTS])
    mapper = mapper_of(server, clock, interval=5.0)
    with pytest.raises(NoKindMatch):
        await mapper.resource_for("demo.example.com/v1", "Website")
    assert server.paths() == ["/api", "/apis", "/apis/demo.example.com/v1"]
    server.requests.clear()

    server.serve(WEBSITES)
    for _ in range(100):  # a stream of lookups within the interval: no request at all
        with pytest.raises(NoKindMatch):
            await mapper.resource_for("demo.example.com/v1", "Website")
    with pytest.raises(NoKindMatch):
        await mapper.resource_for("apps/v1", "Website")  # apps/v1 was read by the first read
    assert server.requests == []

    clock.step(4.9)
    with pytest.raises(NoKindMatch):
        await mapper.resource_for("demo.example.com/v1", "Website")
    assert server.requests == []
    clock.step(0.1)
    assert await mapper.resource_for("demo.example.com/v1", "Website") == WEBSITES
    assert server.paths() == ["/apis/demo.example.com/v1"]


async def test_concurrent_misses_share_one_read() -> None:
    server = FakeDiscovery([PODS])
    mapper = mapper_of(server, FakeClock())
    await mapper.resource_for("v1", "Pod")
    server.requests.clear()
    server.gate = asyncio.Event()
    lookups = [
        asyncio.ensure_future(mapper.resource_for("demo.example.com/v1", "Website"))
        for _ in range(10)
    ]
    for _ in range(20):
        await asyncio.sleep(0)
    server.serve(WEBSITES)
    server.gate.set()
    assert await asyncio.gather(*lookups) == [WEBSITES] * 10
    assert server.paths() == ["/apis/demo.example.com/v1"]


async def test_concurrent_first_lookups_share_the_first_read() -> None:
    server = FakeDiscovery([PODS, DEPLOYMENTS], gate=asyncio.Event())
    mapper = mapper_of(server, FakeClock())
    lookups = [
        asyncio.ensure_future(mapper.resource_for(r.api_version, r.kind))
        for r in [PODS, DEPLOYMENTS] * 5
    ]
    for _ in range(20):
        await asyncio.sleep(0)
    assert server.gate is not None
    server.gate.set()
    assert await asyncio.gather(*lookups) == [PODS, DEPLOYMENTS] * 5
    assert server.paths() == ["/api", "/apis"]


async def test_a_failed_read_raises_and_does_not_count() -> None:
    clock = FakeClock()
    server = FakeDiscovery([PODS])
    mapper = mapper_of(server, clock)
    await mapper.resource_for("v1", "Pod")
    server.errors["/apis/demo.example.com/v1"] = failing("aggregated API down")
    with pytest.raises(ApiError, match="aggregated API down"):
        await mapper.resource_for("demo.example.com/v1", "Website")
    del server.errors["/apis/demo.example.com/v1"]
    server.serve(WEBSITES)
    # no interval has passed, yet the next lookup reads again: the failure was not an answer
    assert await mapper.resource_for("demo.example.com/v1", "Website") == WEBSITES


async def test_a_failed_first_read_is_retried_by_the_next_lookup() -> None:
    server = FakeDiscovery([PODS])
    server.errors["/apis"] = failing()
    mapper = mapper_of(server, FakeClock())
    with pytest.raises(ApiError):
        await mapper.resource_for("v1", "Pod")
    del server.errors["/apis"]
    assert await mapper.resource_for("v1", "Pod") == PODS


async def test_a_stale_group_version_is_read_on_its_own_when_missed() -> None:
    server = FakeDiscovery([PODS, WEBSITES], stale={"demo.example.com/v1"})
    mapper = mapper_of(server, FakeClock())
    assert await mapper.resource_for("demo.example.com/v1", "Website") == WEBSITES
    assert server.paths() == ["/api", "/apis", "/apis/demo.example.com/v1"]


@pytest.mark.parametrize("api_version", ["", "a/b/v1", "/v1"])
async def test_a_malformed_api_version_asks_nothing(api_version: str) -> None:
    server = FakeDiscovery([PODS])
    mapper = mapper_of(server, FakeClock())
    with pytest.raises(NoKindMatch, match="not a valid apiVersion"):
        await mapper.resource_for(api_version, "Pod")
    assert server.requests == []


async def test_takes_a_discovery_client() -> None:
    server = FakeDiscovery([PODS, SERVICES, NAMESPACES])
    mapper = DynamicRESTMapper(DiscoveryClient(server, legacy=True), clock=FakeClock())
    assert await mapper.resource_for("v1", "Namespace") == NAMESPACES
    assert all(accept is None for _, accept in server.requests)
    with pytest.raises(ValueError, match="min_refresh_interval"):
        DynamicRESTMapper(server, min_refresh_interval=-1)
