"""Discovery against a real kube-apiserver: every resource constant is what discovery says,
and the aggregated and legacy formats read the same."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.client import BUILTIN_RESOURCES, ApiClient, ClientConfig, StaticTokenAuth
from kcontrol.discovery import DiscoveryClient, ServerResources
from kcontrol.envtest import ControlPlane

pytestmark = pytest.mark.integration


def new_client(plane: ControlPlane) -> ApiClient:
    config = ClientConfig(
        host=plane.host, auth=StaticTokenAuth(plane.token()), ca_file=str(plane.ca_file)
    )
    return ApiClient(config, qps=0, registry=CollectorRegistry())


class Recording:
    """An ApiClient's raw GETs, recorded."""

    def __init__(self, client: ApiClient) -> None:
        self.client = client
        self.requests: list[tuple[str, str | None]] = []

    async def get_raw(self, path: str, *, accept: str | None = None) -> bytes:
        self.requests.append((path, accept))
        return await self.client.get_raw(path, accept=accept)


async def test_every_resource_constant_matches_discovery(control_plane: ControlPlane) -> None:
    async with new_client(control_plane) as client:
        found = await DiscoveryClient(client).server_groups_and_resources()
    groups = {g.name: g for g in found.groups}
    assert found.failed == {}
    wrong = []
    for constant in BUILTIN_RESOURCES:
        group = groups.get(constant.group)
        if group is None or group.preferred_version != constant.version:
            wrong.append(f"{constant}: group served as {group}")
            continue
        served = {r.plural: r for r in found.resources[constant.api_version]}
        if served.get(constant.plural) != constant:
            wrong.append(f"{constant}: discovery says {served.get(constant.plural)}")
    assert not wrong, "\n".join(wrong)


async def test_aggregated_and_legacy_discovery_agree(control_plane: ControlPlane) -> None:
    async with new_client(control_plane) as client:
        aggregated = Recording(client)
        legacy = Recording(client)
        from_aggregated = await DiscoveryClient(aggregated).server_groups_and_resources()
        from_legacy = await DiscoveryClient(legacy, legacy=True).server_groups_and_resources()

    assert sorted(path for path, _ in aggregated.requests) == ["/api", "/apis"], (
        "the apiserver serves aggregated discovery: two requests read everything"
    )
    assert len(legacy.requests) > 10
    assert from_aggregated.groups == from_legacy.groups
    assert _by_version(from_aggregated) == _by_version(from_legacy)
    assert len(from_aggregated.all_resources()) > 50


def _by_version(found: ServerResources) -> dict[str, list[str]]:
    """Order within a group version may differ between the formats."""
    return {v: sorted(map(str, resources)) for v, resources in found.resources.items()}
