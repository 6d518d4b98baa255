"""The proxy the environment names, as Go's http.ProxyFromEnvironment reads it (the cases of
golang.org/x/net/http/httpproxy's proxy_test.go that apply to one URL at a time)."""

from __future__ import annotations

import pytest

from kcontrol.client import ApiClient, ClientConfig, ConfigError
from kcontrol.client._proxy_env import proxy_from_environment

P = {"HTTPS_PROXY": "http://p"}


@pytest.mark.parametrize(
    ("env", "url", "want"),
    [
        ({}, "https://api.example:6443", None),
        ({"HTTPS_PROXY": "http://p:3128"}, "https://api.example:6443", "http://p:3128"),
        ({"https_proxy": "p:3128"}, "https://api.example", "http://p:3128"),
        (
            {"HTTPS_PROXY": "http://upper", "https_proxy": "http://lower"},
            "https://api.example",
            "http://upper",
        ),
        ({"HTTP_PROXY": "http://p"}, "https://api.example", None),  # not for https
        ({"HTTP_PROXY": "http://p"}, "http://api.example", "http://p"),
        (P, "http://api.example", None),
        (P, "https://localhost:6443", None),
        (P, "https://127.0.0.1:6443", None),
        (P, "https://[::1]:6443", None),
        ({**P, "NO_PROXY": "*"}, "https://api.example", None),
        ({**P, "NO_PROXY": "example"}, "https://api.example", None),
        ({**P, "NO_PROXY": "api.example"}, "https://api.example", None),
        ({**P, "no_proxy": ".example"}, "https://api.example", None),
        ({**P, "NO_PROXY": ".example"}, "https://example", "http://p"),
        ({**P, "NO_PROXY": "*.example"}, "https://example", "http://p"),
        ({**P, "NO_PROXY": "xample"}, "https://example", "http://p"),
        ({**P, "NO_PROXY": "a.b, Example:443"}, "https://example", None),
        ({**P, "NO_PROXY": "example:6443"}, "https://example", "http://p"),
        ({**P, "NO_PROXY": "10.0.0.0/8"}, "https://10.1.2.3", None),
        ({**P, "NO_PROXY": "10.0.0.0/8"}, "https://11.1.2.3", "http://p"),
        ({**P, "NO_PROXY": "10.1.2.3"}, "https://10.1.2.3:6443", None),
        ({**P, "NO_PROXY": "10.1.2.3:80"}, "https://10.1.2.3", "http://p"),
        ({**P, "NO_PROXY": "[fd00::1]:443"}, "https://[fd00::1]", None),
        ({**P, "NO_PROXY": "fd00::/8"}, "https://[fd00::1]", None),
        ({**P, "NO_PROXY": "10.1.2.3"}, "https://example", "http://p"),
    ],
)
def test_proxy_from_environment(env: dict[str, str], url: str, want: str | None) -> None:
    found = proxy_from_environment(url, env)
    assert (found[0] if found else None) == want


async def test_a_client_without_proxy_url_uses_the_environments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://proxy:1080")
    with pytest.raises(ConfigError, match=r"the proxy from HTTPS_PROXY.*socks5"):
        async with ApiClient(ClientConfig(host="https://api.example:6443")) as client:
            await client.get_raw("/version")
    config = ClientConfig(host="https://api.example:6443", proxy="http://set:3128")
    async with ApiClient(config) as client:  # a proxy-url wins over the environment
        assert client._transport.pool()._proxy == ("set", 3128)


async def test_the_environments_proxy_and_no_proxy_reach_the_connection_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.local:3128")
    async with ApiClient(ClientConfig(host="https://api.example:6443")) as client:
        assert client._transport.pool()._proxy == ("proxy.local", 3128)
    monkeypatch.setenv("NO_PROXY", "api.example")
    async with ApiClient(ClientConfig(host="https://api.example:6443")) as client:
        assert client._transport.pool()._proxy is None
