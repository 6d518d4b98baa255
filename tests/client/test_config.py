"""Configuration loading: kubeconfig (contexts, tokenFile, exec plugins), in-cluster, TLS."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from client_fakes import FakeApiServer
from kubernetes_asyncio.client import Configuration
from prometheus_client import CollectorRegistry

from kcontrol.client import (
    NAMESPACES,
    ApiClient,
    ClientConfig,
    ConfigError,
    KubeConfigurationAuth,
    StaticTokenAuth,
    TokenFileAuth,
    load_config,
)
from kcontrol.clock import FakeClock
from kcontrol.errors import ApiConnectionError
from kcontrol.testing._pki import Pki, write_pki


def kubeconfig(
    path: Path, users: dict[str, dict[str, Any]], current: str, server: str = "https://h:6443"
) -> Path:
    """A kubeconfig with one context per user, each on its own cluster ``<server>/<user>``."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": f"{server}/{name}"}} for name in users],
        "users": [{"name": name, "user": user} for name, user in users.items()],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}} for name in users],
        "current-context": current,
    }
    path.write_text(json.dumps(doc))
    return path


async def auth_header(config: ClientConfig) -> str | None:
    assert config.auth is not None
    return await config.auth.authorization()


# ---------------------------------------------------------------------- kubeconfig


async def test_kubeconfig_contexts_and_token(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", {"a": {"token": "ta"}, "b": {"token": "tb"}}, current="a")
    config = await load_config(kubeconfig=str(path))
    assert config.host == "https://h:6443/a"
    assert await auth_header(config) == "Bearer ta"

    config = await load_config(kubeconfig=str(path), context="b")
    assert config.host == "https://h:6443/b"
    assert await auth_header(config) == "Bearer tb"


async def test_kubeconfig_from_env_and_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = kubeconfig(tmp_path / "kc", {"a": {"token": "ta"}}, current="a")
    monkeypatch.setenv("KUBECONFIG", str(path))
    config = await load_config()
    assert config.host == "https://h:6443/a"
    config = await load_config(host="http://127.0.0.1:8080/", token="override")
    assert config.host == "http://127.0.0.1:8080"
    assert await auth_header(config) == "Bearer override"


async def test_kubeconfig_tls_material(tmp_path: Path) -> None:
    pki = write_pki(tmp_path, ["127.0.0.1"])
    ca_data = base64.b64encode(pki.ca_cert.read_bytes()).decode()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": "https://127.0.0.1:6443",
                    "certificate-authority-data": ca_data,
                    "tls-server-name": "kubernetes",
                },
            }
        ],
        "users": [
            {
                "name": "u",
                "user": {
                    "client-certificate": str(pki.serving_cert),
                    "client-key": str(pki.serving_key),
                },
            }
        ],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path = tmp_path / "kc"
    path.write_text(json.dumps(doc))
    config = await load_config(kubeconfig=str(path))
    assert config.ca_file is not None
    assert Path(config.ca_file).read_bytes() == pki.ca_cert.read_bytes()  # noqa: ASYNC240
    assert (config.cert_file, config.key_file) == (str(pki.serving_cert), str(pki.serving_key))
    assert config.tls_server_name == "kubernetes"
    assert await auth_header(config) is None
    ctx = config.ssl_context()
    assert isinstance(ctx, ssl.SSLContext) and ctx.verify_mode == ssl.CERT_REQUIRED
    assert config.ssl_context() is ctx


async def test_kubeconfig_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        await load_config(kubeconfig=str(tmp_path / "nope"))


async def test_kubeconfig_unknown_context(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", {"a": {"token": "ta"}}, current="a")
    with pytest.raises(ConfigError):
        await load_config(kubeconfig=str(path), context="zzz")


async def test_kubeconfig_token_file_is_reread(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("first\n")
    path = kubeconfig(tmp_path / "kc", {"a": {"tokenFile": "token"}}, current="a")
    config = await load_config(kubeconfig=str(path))
    assert isinstance(config.auth, TokenFileAuth)
    assert config.auth.path == str(tmp_path / "token")
    assert await auth_header(config) == "Bearer first"


def exec_plugin(tmp_path: Path, expiry: str) -> dict[str, Any]:
    """An exec credential plugin that counts its runs and returns token t<run>.

    ``expiry``: "none" (no expirationTimestamp), "valid" (an hour ahead), or "first-stale"
    (the first token expires in a minute - inside the 5-minute renewal skew - later ones in
    an hour).
    """
    counter = tmp_path / "runs"
    script = tmp_path / "plugin.py"
    script.write_text(
        f"""import datetime, json, pathlib
p = pathlib.Path({str(counter)!r})
n = int(p.read_text()) + 1 if p.exists() else 1
p.write_text(str(n))
status = {{"token": f"t{{n}}"}}
mode = {expiry!r}
if mode != "none":
    minutes = 1 if mode == "first-stale" and n == 1 else 60
    when = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=minutes)
    status["expirationTimestamp"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1",
                  "kind": "ExecCredential", "status": status}}))
"""
    )
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script)],
            "interactiveMode": "Never",
        }
    }


def runs(tmp_path: Path) -> int:
    return int((tmp_path / "runs").read_text())


async def test_exec_plugin_token_renewed_when_expiring(tmp_path: Path) -> None:
    user = exec_plugin(tmp_path, "first-stale")
    config = await load_config(kubeconfig=str(kubeconfig(tmp_path / "kc", {"a": user}, "a")))
    assert runs(tmp_path) == 1
    assert isinstance(config.auth, KubeConfigurationAuth)
    # concurrent requests share one plugin run; the renewed token is then kept
    headers = await asyncio.gather(*(auth_header(config) for _ in range(5)))
    assert set(headers) == {"Bearer t2"}
    assert await auth_header(config) == "Bearer t2"
    assert runs(tmp_path) == 2


@pytest.mark.parametrize("expiry", ["valid", "none"])
async def test_exec_plugin_token_kept_while_valid(tmp_path: Path, expiry: str) -> None:
    user = exec_plugin(tmp_path, expiry)
    config = await load_config(kubeconfig=str(kubeconfig(tmp_path / "kc", {"a": user}, "a")))
    assert await auth_header(config) == "Bearer t1"
    assert await auth_header(config) == "Bearer t1"
    assert runs(tmp_path) == 1


# ---------------------------------------------------------------------- token files


async def test_token_file_rotation(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("one")
    clock = FakeClock()
    auth = TokenFileAuth(str(token), clock=clock)
    assert await auth.authorization() == "Bearer one"
    token.write_text("two")
    clock.step(59)
    assert await auth.authorization() == "Bearer one"
    clock.step(2)
    assert await auth.authorization() == "Bearer two"
    # a failed re-read keeps the cached token
    token.unlink()
    clock.step(61)
    assert await auth.authorization() == "Bearer two"
    token.write_text("three")
    assert await auth.authorization() == "Bearer three"


@pytest.mark.parametrize("content", [None, "", "  \n"], ids=["missing", "empty", "blank"])
async def test_token_file_first_read_fails(tmp_path: Path, content: str | None) -> None:
    token = tmp_path / "token"
    if content is not None:
        token.write_text(content)
    with pytest.raises(ConfigError):
        await TokenFileAuth(str(token)).authorization()
    assert "token" in repr(TokenFileAuth(str(token)))


# ---------------------------------------------------------------------- in-cluster


async def test_in_cluster(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa-token-1")
    (tmp_path / "ca.crt").write_text("not parsed here")
    clock = FakeClock()
    config = await ClientConfig.in_cluster(
        token_file=str(tmp_path / "token"),
        ca_file=str(tmp_path / "ca.crt"),
        environ={"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"},
        clock=clock,
    )
    assert config.host == "https://10.96.0.1:443"
    assert config.ca_file == str(tmp_path / "ca.crt")
    assert await auth_header(config) == "Bearer sa-token-1"
    (tmp_path / "token").write_text("sa-token-2")
    clock.step(61)
    assert await auth_header(config) == "Bearer sa-token-2"


async def test_in_cluster_ipv6_host(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t")
    (tmp_path / "ca.crt").write_text("x")
    config = await ClientConfig.in_cluster(
        token_file=str(tmp_path / "token"),
        ca_file=str(tmp_path / "ca.crt"),
        environ={"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"},
    )
    assert config.host == "https://[fd00::1]:443"


async def test_not_in_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError, match="not running in a cluster"):
        await load_config(in_cluster=True)


# ---------------------------------------------------------------------- Configuration


async def test_from_kube_configuration_token_and_prefix() -> None:
    cfg = Configuration(host="https://k:6443/")
    cfg.api_key = {"BearerToken": "abc"}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    cfg.ssl_ca_cert = "/ca.crt"
    cfg.verify_ssl = False
    config = ClientConfig.from_kube_configuration(cfg)
    assert config.host == "https://k:6443"
    assert config.ca_file == "/ca.crt"
    assert config.insecure_skip_tls_verify
    assert await auth_header(config) == "Bearer abc"
    assert "abc" not in repr(config)


async def test_from_kube_configuration_runs_the_refresh_hook() -> None:
    cfg = Configuration(host="https://k")
    calls = 0

    async def hook(c: Configuration) -> None:
        nonlocal calls
        calls += 1
        c.api_key["BearerToken"] = f"Bearer r{calls}"

    cfg.refresh_api_key_hook = hook
    config = ClientConfig.from_kube_configuration(cfg)
    assert await auth_header(config) == "Bearer r1"
    assert await auth_header(config) == "Bearer r2"


async def test_from_kube_configuration_basic_auth_and_anonymous() -> None:
    cfg = Configuration(host="https://k", username="admin", password="pw")
    expected = "Basic " + base64.b64encode(b"admin:pw").decode()
    assert await auth_header(ClientConfig.from_kube_configuration(cfg)) == expected
    assert (
        await auth_header(ClientConfig.from_kube_configuration(Configuration("http://k"))) is None
    )


def test_host_must_be_a_url() -> None:
    with pytest.raises(ConfigError):
        ClientConfig(host="k8s.example:6443")
    assert ClientConfig(host="http://k").ssl_context() is None


# ---------------------------------------------------------------------- TLS end to end


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return write_pki(tmp_path, ["127.0.0.1", "localhost"])


@pytest.fixture
async def tls_api(pki: Pki) -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer()
    runner = web.AppRunner(server.app, shutdown_timeout=0.5)
    await runner.setup()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki.serving_cert, pki.serving_key)
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
    await site.start()
    server.url = f"https://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield server
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(
    ("trust", "ok"),
    [("ca_file", True), ("ca_data", True), ("insecure", True), ("system", False)],
)
async def test_tls(
    tls_api: FakeApiServer, pki: Pki, registry: CollectorRegistry, trust: str, ok: bool
) -> None:
    presets: dict[str, dict[str, Any]] = {
        "ca_file": {"ca_file": str(pki.ca_cert)},
        "ca_data": {"ca_data": pki.ca_cert.read_text()},
        "insecure": {"insecure_skip_tls_verify": True},
        "system": {},
    }
    options = presets[trust]
    config = ClientConfig(host=tls_api.url, auth=StaticTokenAuth("t"), **options)
    async with ApiClient(config, qps=0, registry=registry) as c:
        if ok:
            echo = await c.get(NAMESPACES, "default")
            assert echo["path"] == "/api/v1/namespaces/default"
            assert tls_api.requests[-1].headers["Authorization"] == "Bearer t"
        else:
            with pytest.raises(ApiConnectionError):
                await c.get(NAMESPACES, "default")
            assert tls_api.requests == []
