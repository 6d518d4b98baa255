"""ApiClient.get_raw: absolute paths, the body as sent, an Accept header of the caller's."""

from __future__ import annotations

import pytest
from client_fakes import FakeApiServer

from kcontrol.client import ApiClient
from kcontrol.errors import NotFound

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


async def test_get_raw_returns_the_body_as_sent(api: FakeApiServer, client: ApiClient) -> None:
    api.respond("GET", "/version", b'{"major": "1"}  ')
    assert await client.get_raw("/version") == b'{"major": "1"}  '
    assert api.requests[-1].headers["Accept"] == "application/json"


async def test_get_raw_sends_the_accept_header_asked_for(
    api: FakeApiServer, client: ApiClient
) -> None:
    api.respond("GET", "/apis", {"kind": "APIGroupDiscoveryList"})
    await client.get_raw("/apis", accept=AGGREGATED)
    assert api.requests[-1].headers["Accept"] == AGGREGATED


async def test_get_raw_maps_errors_and_wants_absolute_paths(
    api: FakeApiServer, client: ApiClient
) -> None:
    api.respond("GET", "/apis/demo.example.com/v1", {"kind": "Status", "reason": "NotFound"}, 404)
    with pytest.raises(NotFound):
        await client.get_raw("/apis/demo.example.com/v1")
    with pytest.raises(ValueError, match="absolute path"):
        await client.get_raw("apis")
