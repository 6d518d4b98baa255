"""Configuration loading: kubeconfig (clientcmd's merging, paths, data, contexts, users, tokenFile,
exec plugins, malformed files), in-cluster, a kubernetes_asyncio Configuration, TLS."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import ssl
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from client_fakes import FakeApiServer
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes_asyncio.client import Configuration
from prometheus_client import CollectorRegistry

from kcontrol.client import (
    NAMESPACES,
    ApiClient,
    ClientConfig,
    ConfigError,
    StaticTokenAuth,
    TokenFileAuth,
    load_config,
)
from kcontrol.client._exec import ExecCredential, ExecCredentialAuth
from kcontrol.clock import FakeClock
from kcontrol.envtest._pki import Pki, write_pki
from kcontrol.errors import ApiConnectionError


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


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


@dataclass
class ClientPki:
    ca: Path
    cert: Path
    key: Path


def write_client_pki(directory: Path) -> ClientPki:
    """A CA and a client certificate (clientAuth) it signed, for mutual TLS."""
    now = datetime.now(UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "client-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kcontrol-test-user")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pki = ClientPki(directory / "client-ca.crt", directory / "client.crt", directory / "client.key")
    pki.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    pki.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pki.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return pki


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


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
    # certificate-authority-data is handed to ssl as cadata, never written to a file
    assert config.ca_file is None
    assert config.ca_data == pki.ca_cert.read_text()
    assert (config.cert_file, config.key_file) == (str(pki.serving_cert), str(pki.serving_key))
    assert config.tls_server_name == "kubernetes"
    assert config.auth is None  # a client certificate: no Authorization header
    ctx = config.ssl_context()
    assert isinstance(ctx, ssl.SSLContext) and ctx.verify_mode == ssl.CERT_REQUIRED
    assert config.ssl_context() is ctx


async def test_kubeconfig_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        await load_config(kubeconfig=str(tmp_path / "nope"))


async def test_kubeconfig_unknown_context(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", {"a": {"token": "ta"}}, current="a")
    with pytest.raises(ConfigError, match=f'kubeconfig {path} has no context "zzz"'):
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
    assert isinstance(config.auth, ExecCredentialAuth)
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


PLUGIN_PRELUDE = """import datetime, json, pathlib, sys
_runs = pathlib.Path(__file__).with_name("runs")
_runs.write_text(str(int(_runs.read_text()) + 1 if _runs.exists() else 1))


def answer(status):
    print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1",
                      "kind": "ExecCredential", "status": status}))


"""


def plugin_script(tmp_path: Path, body: str) -> Path:
    """A Python exec plugin: counts its runs in ``runs`` beside it, then runs ``body``, which
    may call ``answer(status)`` to print a v1 ExecCredential."""
    script = tmp_path / "plugin.py"
    script.write_text(PLUGIN_PRELUDE + body)
    return script


def exec_user(script: Path) -> dict[str, Any]:
    """A kubeconfig user whose v1 exec plugin is the Python script ``script``."""
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script)],
            "interactiveMode": "Never",
        }
    }


@pytest.mark.both_loops
async def test_exec_plugin_v1beta1_env_and_cluster_info(tmp_path: Path) -> None:
    pki = write_pki(tmp_path, ["127.0.0.1"])
    seen = tmp_path / "seen.json"
    script = tmp_path / "plugin.py"
    script.write_text(
        f"""import json, os, sys
with open({str(seen)!r}, "w") as f:
    json.dump({{"info": json.loads(os.environ["KUBERNETES_EXEC_INFO"]),
               "var": os.environ.get("PLUGIN_VAR"), "argv": sys.argv[1:],
               "stdin": sys.stdin.read()}}, f)
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1beta1",
                  "kind": "ExecCredential", "status": {{"token": "beta"}}}}))
"""
    )
    doc = {
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": "https://10.0.0.1:6443",
                    "certificate-authority": "ca.crt",  # relative: tmp_path/ca.crt
                    "tls-server-name": "kubernetes",
                    "extensions": [
                        {"name": "client.authentication.k8s.io/exec", "extension": {"k": "v"}}
                    ],
                },
            }
        ],
        "users": [
            {
                "name": "u",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": sys.executable,
                        "args": [str(script), "--flag"],
                        "env": [{"name": "PLUGIN_VAR", "value": "from-kubeconfig"}],
                        "provideClusterInfo": True,
                    }
                },
            }
        ],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    config = await load_config(kubeconfig=str(write(tmp_path / "kc", doc)))
    assert await auth_header(config) == "Bearer beta"
    plugin_saw = json.loads(seen.read_text())
    assert plugin_saw["var"] == "from-kubeconfig"
    assert plugin_saw["argv"] == ["--flag"]
    assert plugin_saw["stdin"] == ""  # no terminal: stdin is /dev/null
    info = plugin_saw["info"]
    assert info["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    assert info["kind"] == "ExecCredential"
    assert info["spec"]["interactive"] is False
    cluster = info["spec"]["cluster"]
    assert cluster["server"] == "https://10.0.0.1:6443"
    assert cluster["tls-server-name"] == "kubernetes"
    assert base64.b64decode(cluster["certificate-authority-data"]) == pki.ca_cert.read_bytes()
    assert cluster["config"] == {"k": "v"}


async def test_exec_plugin_without_cluster_info(tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    script = plugin_script(
        tmp_path,
        f"""import os
open({str(seen)!r}, "w").write(os.environ["KUBERNETES_EXEC_INFO"])
answer({{"token": "t"}})
""",
    )
    path = kubeconfig(tmp_path / "kc", {"a": exec_user(script)}, "a")
    config = await load_config(kubeconfig=str(path))
    assert await auth_header(config) == "Bearer t"
    assert json.loads(seen.read_text())["spec"] == {"interactive": False}


async def test_exec_plugin_client_certificate(tmp_path: Path) -> None:
    client = write_client_pki(tmp_path)
    status = {
        "clientCertificateData": client.cert.read_text(),
        "clientKeyData": client.key.read_text(),
    }
    script = plugin_script(tmp_path, f"answer({status!r})\n")
    path = kubeconfig(tmp_path / "kc", {"a": exec_user(script)}, "a")
    config = await load_config(kubeconfig=str(path))
    assert config.cert_data == client.cert.read_text()
    assert config.key_data == client.key.read_text()
    assert config.cert_file is None and config.key_file is None
    assert "PRIVATE KEY" not in repr(config)
    assert await auth_header(config) is None  # a certificate only: no Authorization header
    assert isinstance(config.ssl_context(), ssl.SSLContext)


EXEC_FAILURES = {
    "not-found": (
        {"command": "/nonexistent/kubelogin", "installHint": "install it:\n  brew install x"},
        "",
        "/nonexistent/kubelogin .* was not found: install it: brew install x",
    ),
    "exit-code": (
        {},
        "sys.stderr.write('token endpoint down\\n'); sys.exit(3)",
        "exit code 3: token endpoint down",
    ),
    "not-json": ({}, "print('hello')", "printed no ExecCredential JSON"),
    "wrong-version": (
        {},
        "print(json.dumps({'kind': 'ExecCredential', "
        "'apiVersion': 'client.authentication.k8s.io/v1beta1', 'status': {'token': 't'}}))",
        "apiVersion client.authentication.k8s.io/v1beta1, not client.authentication.k8s.io/v1",
    ),
    "no-status": (
        {},
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', "
        "'kind': 'ExecCredential'}))",
        "without a status",
    ),
    "nothing": ({}, "answer({})", "neither a token nor a certificate"),
    "key-only": ({}, "answer({'clientKeyData': 'k'})", "a client certificate or a key, not both"),
    "bad-expiry": (
        {},
        "answer({'token': 't', 'expirationTimestamp': 'tomorrow'})",
        "expirationTimestamp that is not RFC 3339",
    ),
}


@pytest.mark.parametrize(
    ("overrides", "body", "expected"), EXEC_FAILURES.values(), ids=EXEC_FAILURES.keys()
)
async def test_exec_plugin_failures(
    tmp_path: Path, overrides: dict[str, str], body: str, expected: str
) -> None:
    user = exec_user(plugin_script(tmp_path, body))
    user["exec"].update(overrides)
    path = kubeconfig(tmp_path / "kc", {"a": user}, "a")
    with pytest.raises(ConfigError, match=expected) as caught:
        await load_config(kubeconfig=str(path))
    assert "\n" not in str(caught.value)
    assert 'user "a"' in str(caught.value) and str(path) in str(caught.value)


@pytest.mark.parametrize(
    ("exec_overrides", "expected"),
    [
        ({"apiVersion": "client.authentication.k8s.io/v1alpha1"}, "v1alpha1 is not supported"),
        ({"apiVersion": None}, "exec has no apiVersion"),
        ({"command": None}, "exec has no command"),
        ({"interactiveMode": "Always"}, "needs an interactive terminal"),
        ({"interactiveMode": "Sometimes"}, "interactiveMode 'Sometimes' is not one of"),
    ],
    ids=["v1alpha1", "no-api-version", "no-command", "interactive", "bad-interactive-mode"],
)
async def test_exec_plugin_configuration_refused(
    tmp_path: Path, exec_overrides: dict[str, Any], expected: str
) -> None:
    user = exec_user(plugin_script(tmp_path, "answer({'token': 't'})"))
    for key, value in exec_overrides.items():
        if value is None:
            del user["exec"][key]
        else:
            user["exec"][key] = value
    path = kubeconfig(tmp_path / "kc", {"a": user}, "a")
    with pytest.raises(ConfigError, match=expected):
        await load_config(kubeconfig=str(path))
    assert not (tmp_path / "runs").exists()  # refused before running anything


class ScriptedPlugin:
    """Stands in for an ExecPlugin: each run returns (or raises) the next scripted answer."""

    def __init__(self, *answers: ExecCredential | ConfigError) -> None:
        self.answers = list(answers)
        self.runs = 0

    async def run(self) -> ExecCredential:
        self.runs += 1
        answer = self.answers.pop(0)
        if isinstance(answer, ConfigError):
            raise answer
        return answer


async def test_exec_credential_auth_renews_within_the_skew() -> None:
    clock = FakeClock(wall_start=datetime(2026, 1, 1, tzinfo=UTC))
    expiry = clock.wall() + timedelta(minutes=10)
    plugin = ScriptedPlugin(
        ExecCredential(token="one", expiration=expiry),
        ExecCredential(token="two", expiration=expiry + timedelta(hours=1)),
    )
    auth = ExecCredentialAuth(plugin, clock=clock)
    assert await auth.authorization() == "Bearer one"
    clock.step(4 * 60)  # 6 minutes left: outside the 5-minute skew
    assert await auth.authorization() == "Bearer one"
    assert plugin.runs == 1
    clock.step(2 * 60)  # 4 minutes left: renewed
    assert await auth.authorization() == "Bearer two"
    assert plugin.runs == 2


async def test_exec_credential_auth_runs_again_after_its_token_is_refused() -> None:
    clock = FakeClock(wall_start=datetime(2026, 1, 1, tzinfo=UTC))
    expiry = clock.wall() + timedelta(hours=1)
    plugin = ScriptedPlugin(
        ExecCredential(token="one", expiration=expiry),
        ExecCredential(token="two", expiration=expiry),
    )
    auth = ExecCredentialAuth(plugin, clock=clock)
    assert await auth.authorization() == "Bearer one"
    auth.unauthorized("Bearer zero")  # an older token's refusal: the current one stays
    assert await auth.authorization() == "Bearer one"
    assert plugin.runs == 1
    auth.unauthorized("Bearer one")  # revoked before its expiration
    assert await auth.authorization() == "Bearer two"
    assert plugin.runs == 2


async def test_exec_credential_auth_keeps_a_valid_token_when_renewal_fails() -> None:
    clock = FakeClock(wall_start=datetime(2026, 1, 1, tzinfo=UTC))
    expiry = clock.wall() + timedelta(minutes=4)  # inside the skew from the start
    plugin = ScriptedPlugin(
        ExecCredential(token="one", expiration=expiry),
        ConfigError("plugin down"),
        ConfigError("plugin still down"),
        ConfigError("plugin down for good"),
    )
    auth = ExecCredentialAuth(plugin, clock=clock)
    # the first run's token is used although it is due for renewal
    assert (await auth.credential()).token == "one"
    assert await auth.authorization() == "Bearer one"  # renewal failed: kept
    assert plugin.runs == 2
    assert await auth.authorization() == "Bearer one"  # no new run before the retry interval
    assert plugin.runs == 2
    clock.step(11)
    assert await auth.authorization() == "Bearer one"
    assert plugin.runs == 3
    clock.step(4 * 60)  # expired: the failure propagates
    with pytest.raises(ConfigError, match="plugin down for good"):
        await auth.authorization()


# ---------------------------------------------------------------------- merging ($KUBECONFIG)


async def test_kubeconfig_list_first_file_to_set_a_key_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write(
        tmp_path / "first",
        {
            "clusters": [{"name": "shared", "cluster": {"server": "https://first"}}],
            "users": [{"name": "shared", "user": {"token": "first-token"}}],
            "contexts": [
                {"name": "only-first", "context": {"cluster": "shared", "user": "shared"}}
            ],
            # no current-context: the second file's is used
        },
    )
    second = write(
        tmp_path / "second",
        {
            "clusters": [
                {"name": "shared", "cluster": {"server": "https://second"}},
                {"name": "own", "cluster": {"server": "https://own"}},
            ],
            "users": [{"name": "shared", "user": {"token": "second-token"}}],
            "contexts": [
                {"name": "ctx", "context": {"cluster": "shared", "user": "shared"}},
                {"name": "other", "context": {"cluster": "own", "user": "shared"}},
            ],
            "current-context": "ctx",
        },
    )
    third = write(tmp_path / "third", {"current-context": "other"})
    listed = [str(first), str(tmp_path / "missing"), "", str(second), str(third)]
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(listed))

    config = await load_config()
    assert config.host == "https://first"  # cluster "shared" from the first file
    assert await auth_header(config) == "Bearer first-token"
    other = await load_config(context="other")  # defined by the second file only
    assert other.host == "https://own"
    only_first = await load_config(context="only-first")
    assert only_first.host == "https://first"

    # the first file to set current-context wins; a later one never changes it
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(third), str(second)]))
    assert (await load_config()).host == "https://own"


async def test_kubeconfig_list_all_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listed = os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")])
    monkeypatch.setenv("KUBECONFIG", listed)
    with pytest.raises(ConfigError, match=f"kubeconfig {listed} does not exist"):
        await load_config()


async def test_explicit_kubeconfig_ignores_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = kubeconfig(tmp_path / "env", {"e": {"token": "te"}}, current="e")
    explicit = kubeconfig(tmp_path / "explicit", {"x": {"token": "tx"}}, current="x")
    monkeypatch.setenv("KUBECONFIG", str(env))
    config = await load_config(kubeconfig=str(explicit))
    assert config.host == "https://h:6443/x"
    with pytest.raises(ConfigError, match='has no context "e"'):
        await load_config(kubeconfig=str(explicit), context="e")


# ---------------------------------------------------------------------- paths and data


async def test_relative_paths_resolve_against_the_defining_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clusters = write(
        tmp_path / "clusters" / "kc",
        {
            "clusters": [
                {
                    "name": "c",
                    "cluster": {"server": "https://c", "certificate-authority": "pki/ca.crt"},
                }
            ],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
        },
    )
    (tmp_path / "users" / "tokens").mkdir(parents=True)
    (tmp_path / "users" / "tokens" / "t").write_text("from-file\n")
    users = write(
        tmp_path / "users" / "kc",
        {
            "users": [
                {
                    "name": "u",
                    "user": {
                        "client-certificate": "certs/client.crt",
                        "client-key": "/abs/client.key",
                        "tokenFile": "tokens/t",
                    },
                }
            ]
        },
    )
    monkeypatch.chdir(tmp_path / "users")  # not the working directory: the file's
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(clusters), str(users)]))
    config = await load_config()
    assert config.ca_file == str(tmp_path / "clusters" / "pki" / "ca.crt")
    assert config.cert_file == str(tmp_path / "users" / "certs" / "client.crt")
    assert config.key_file == "/abs/client.key"
    assert isinstance(config.auth, TokenFileAuth)
    assert config.auth.path == str(tmp_path / "users" / "tokens" / "t")
    assert await auth_header(config) == "Bearer from-file"


async def test_exec_command_with_a_separator_is_relative_to_the_file(tmp_path: Path) -> None:
    plugin = tmp_path / "bin" / "plugin"
    plugin.parent.mkdir()
    plugin.write_text(
        '#!/bin/sh\necho \'{"apiVersion": "client.authentication.k8s.io/v1", '
        '"kind": "ExecCredential", "status": {"token": "rel"}}\'\n'
    )
    plugin.chmod(0o755)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "bin/plugin"}}
    config = await load_config(kubeconfig=str(kubeconfig(tmp_path / "kc", {"a": user}, "a")))
    assert await auth_header(config) == "Bearer rel"


@pytest.fixture
async def mtls_api(pki: Pki, tmp_path: Path) -> AsyncIterator[tuple[FakeApiServer, ClientPki]]:
    """A fake API server over TLS that requires a client certificate of its own client CA."""
    client = write_client_pki(tmp_path)
    server = FakeApiServer()
    runner = web.AppRunner(server.app, shutdown_timeout=0.5)
    await runner.setup()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki.serving_cert, pki.serving_key)
    ctx.load_verify_locations(client.ca)
    ctx.verify_mode = ssl.CERT_REQUIRED
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
    await site.start()
    server.url = f"https://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield server, client
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("key_store", ["memory", "temporary-file"])
async def test_data_fields_authenticate_over_mutual_tls(
    mtls_api: tuple[FakeApiServer, ClientPki],
    pki: Pki,
    registry: CollectorRegistry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    key_store: str,
) -> None:
    server, client = mtls_api
    if key_store == "temporary-file":  # where there is no memfd_create
        monkeypatch.setattr("kcontrol.client._config._memory_fd", lambda: None)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    loaded: list[tuple[str, int]] = []
    original = ssl.SSLContext.load_cert_chain

    def spy(
        self: ssl.SSLContext, certfile: str, keyfile: str | None = None, password: Any = None
    ) -> None:
        loaded.append((keyfile or "", os.stat(keyfile).st_mode & 0o777 if keyfile else 0))
        original(self, certfile, keyfile, password)

    monkeypatch.setattr(ssl.SSLContext, "load_cert_chain", spy)

    doc = {
        "clusters": [
            {
                "name": "c",
                "cluster": {"server": server.url, "certificate-authority-data": b64(pki.ca_cert)},
            }
        ],
        "users": [
            {
                "name": "u",
                "user": {
                    "client-certificate-data": b64(client.cert),
                    "client-key-data": b64(client.key),
                },
            }
        ],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    config = await load_config(kubeconfig=str(write(tmp_path / "kc", doc)))
    assert config.ca_data == pki.ca_cert.read_text()
    assert config.cert_data == client.cert.read_text()
    assert config.key_data == client.key.read_text()
    assert (config.ca_file, config.cert_file, config.key_file) == (None, None, None)
    assert "PRIVATE KEY" not in repr(config)

    async with ApiClient(config, qps=0, registry=registry) as c:
        await c.get(NAMESPACES, "default")  # refused by the server without the certificate
    assert len(server.requests) == 1
    [(key_path, mode)] = loaded
    if key_store == "memory":
        assert key_path.startswith("/proc/self/fd/")
    else:
        assert key_path.startswith(str(scratch)) and mode == 0o600
    assert list(scratch.iterdir()) == []  # nothing left behind


async def test_server_refuses_a_client_without_certificate(
    mtls_api: tuple[FakeApiServer, ClientPki], pki: Pki, registry: CollectorRegistry
) -> None:
    server, _ = mtls_api  # the check above is meaningful: no certificate, no answer
    config = ClientConfig(host=server.url, ca_file=str(pki.ca_cert))
    async with ApiClient(config, qps=0, registry=registry, max_retries=0) as c:
        with pytest.raises(ApiConnectionError):
            await c.get(NAMESPACES, "default")
    assert server.requests == []


async def test_invalid_base64_data(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", {"a": {"client-certificate-data": "not base64!"}}, "a")
    with pytest.raises(
        ConfigError,
        match=f'kubeconfig {path} is malformed: user "a": client-certificate-data is not valid',
    ):
        await load_config(kubeconfig=str(path))


# ---------------------------------------------------------------------- clusters


async def test_insecure_skip_tls_verify_ignores_the_ca(tmp_path: Path) -> None:
    doc = {
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": "https://10.0.0.1",
                    "insecure-skip-tls-verify": True,
                    "certificate-authority": str(tmp_path / "no-such-ca.crt"),
                    "proxy-url": "http://proxy:3128",
                    "disable-compression": True,
                },
            }
        ],
        "contexts": [{"name": "c", "context": {"cluster": "c"}}],
        "current-context": "c",
    }
    config = await load_config(kubeconfig=str(write(tmp_path / "kc", doc)))
    assert config.insecure_skip_tls_verify
    assert config.ca_file is None and config.ca_data is None
    assert config.proxy == "http://proxy:3128"
    assert config.disable_compression
    assert config.auth is None  # a context without a user: anonymous
    ctx = config.ssl_context()
    assert ctx is not None and ctx.verify_mode == ssl.CERT_NONE and not ctx.check_hostname


@pytest.mark.parametrize(
    ("cluster", "host"),
    [
        ({"server": "10.0.0.1:6443/"}, "http://10.0.0.1:6443"),
        ({"server": "10.0.0.1:6443", "insecure-skip-tls-verify": True}, "https://10.0.0.1:6443"),
        ({"server": "https://10.0.0.1:6443/prefix/"}, "https://10.0.0.1:6443/prefix"),
    ],
    ids=["no-scheme", "no-scheme-tls", "trailing-slash"],
)
async def test_server_url(tmp_path: Path, cluster: dict[str, Any], host: str) -> None:
    doc = {
        "clusters": [{"name": "c", "cluster": cluster}],
        "contexts": [{"name": "c", "context": {"cluster": "c"}}],
        "current-context": "c",
    }
    assert (await load_config(kubeconfig=str(write(tmp_path / "kc", doc)))).host == host


async def test_cluster_without_server_takes_the_host_override(tmp_path: Path) -> None:
    doc = {
        "clusters": [{"name": "c", "cluster": {}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path = write(tmp_path / "kc", doc)
    with pytest.raises(
        ConfigError, match=f'kubeconfig {path} is malformed: cluster "c" has no server'
    ):
        await load_config(kubeconfig=str(path))
    config = await load_config(kubeconfig=str(path), host="https://override/")
    assert config.host == "https://override"
    assert await auth_header(config) == "Bearer t"


# ---------------------------------------------------------------------- users


async def test_basic_auth(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", {"a": {"username": "admin", "password": "pw"}}, "a")
    config = await load_config(kubeconfig=str(path))
    assert await auth_header(config) == "Basic " + base64.b64encode(b"admin:pw").decode()
    assert "pw" not in repr(config)


async def test_token_wins_over_token_file_and_exec(tmp_path: Path) -> None:
    user = {"token": "inline", "tokenFile": "missing", **exec_user(tmp_path / "never-run.py")}
    config = await load_config(kubeconfig=str(kubeconfig(tmp_path / "kc", {"a": user}, "a")))
    assert await auth_header(config) == "Bearer inline"


async def test_token_override_skips_the_users_credentials(tmp_path: Path) -> None:
    user = exec_user(plugin_script(tmp_path, "answer({'token': 't'})"))
    path = kubeconfig(tmp_path / "kc", {"a": user}, "a")
    config = await load_config(kubeconfig=str(path), token="override")
    assert await auth_header(config) == "Bearer override"
    assert not (tmp_path / "runs").exists()


async def test_token_file_unreadable_at_load(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", {"a": {"tokenFile": "missing-token"}}, "a")
    with pytest.raises(ConfigError, match=f"cannot read token file {tmp_path / 'missing-token'}"):
        await load_config(kubeconfig=str(path))


async def test_undefined_user_is_anonymous(tmp_path: Path) -> None:
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": "https://c"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "ghost"}}],
        "current-context": "c",
    }
    config = await load_config(kubeconfig=str(write(tmp_path / "kc", doc)))
    assert config.auth is None


@pytest.mark.parametrize(
    ("user", "expected"),
    [
        (
            {"auth-provider": {"name": "oidc", "config": {"idp-issuer-url": "https://idp"}}},
            'user "a" uses the auth-provider "oidc", which kcontrol does not support; use an '
            "exec credential plugin",
        ),
        ({"token": "t", "username": "u", "password": "p"}, "more than one authentication method"),
        ({"client-certificate": "c.crt"}, 'user "a" has a client certificate but no client key'),
        ({"client-key-data": "a2V5"}, 'user "a" has a client key but no client certificate'),
        ({"as": "system:admin", "token": "t"}, "impersonates another user"),
    ],
    ids=["auth-provider", "token-and-basic", "cert-without-key", "key-without-cert", "as"],
)
async def test_unusable_users(tmp_path: Path, user: dict[str, Any], expected: str) -> None:
    path = kubeconfig(tmp_path / "kc", {"a": user}, "a")
    with pytest.raises(ConfigError, match=re.escape(expected)) as caught:
        await load_config(kubeconfig=str(path))
    assert str(path) in str(caught.value)


async def test_unusable_user_of_another_context_does_not_matter(tmp_path: Path) -> None:
    users = {"a": {"token": "ta"}, "b": {"auth-provider": {"name": "gcp"}}}
    config = await load_config(kubeconfig=str(kubeconfig(tmp_path / "kc", users, "a")))
    assert await auth_header(config) == "Bearer ta"


# ---------------------------------------------------------------------- contexts, malformed files


async def test_no_current_context(tmp_path: Path) -> None:
    path = write(tmp_path / "kc", {"clusters": [], "contexts": []})
    with pytest.raises(ConfigError, match="sets no current-context"):
        await load_config(kubeconfig=str(path))


async def test_context_names_an_undefined_cluster(tmp_path: Path) -> None:
    doc = {"contexts": [{"name": "c", "context": {"cluster": "gone"}}], "current-context": "c"}
    path = write(tmp_path / "kc", doc)
    with pytest.raises(ConfigError, match=f'kubeconfig {path} has no cluster "gone"'):
        await load_config(kubeconfig=str(path))


MALFORMED = {
    "not-yaml": (
        "clusters: [\n",
        "is not valid YAML: expected the node content, but found '<stream end>' "
        "at line 2, column 1",
    ),
    "unclosed-flow": (
        "{{{",
        "is not valid YAML: expected the node content, but found '<stream end>' "
        "at line 1, column 4",
    ),
    "empty": ("", "is empty"),
    "a-list": ("- a\n- b\n", "is not a kubeconfig: the document is a list, not a mapping"),
    "clusters-not-a-list": ("clusters: {}\n", "is malformed: clusters is a dict, not a list"),
    "entry-without-name": ("clusters:\n- cluster: {}\n", "is malformed: clusters[0] has no name"),
    "duplicate-name": (
        "clusters:\n- name: a\n- name: a\n",
        'is malformed: clusters has two entries named "a"',
    ),
    "server-not-a-string": (
        "clusters:\n- name: a\n  cluster: {server: 6443}\n",
        'is malformed: cluster "a": server is a int, not a string',
    ),
    "insecure-not-a-bool": (
        "clusters:\n- name: a\n  cluster: {insecure-skip-tls-verify: 'yes'}\n",
        'is malformed: cluster "a": insecure-skip-tls-verify is a str, not a boolean',
    ),
    "user-not-a-mapping": (
        "users:\n- name: u\n  user: [1]\n",
        'is malformed: user "u" is a list, not a mapping',
    ),
}


@pytest.mark.parametrize(("text", "expected"), MALFORMED.values(), ids=MALFORMED.keys())
async def test_malformed_kubeconfig(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "kc"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        await load_config(kubeconfig=str(path))
    assert str(caught.value) == f"kubeconfig {path} {expected}"


async def test_malformed_file_in_the_list_breaks_the_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = kubeconfig(tmp_path / "good", {"a": {"token": "t"}}, "a")
    bad = tmp_path / "bad"
    bad.write_text("users: 3\n")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(good), str(bad)]))
    with pytest.raises(ConfigError, match=f"kubeconfig {bad} is malformed: users is a int"):
        await load_config()


async def test_unreadable_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"kubeconfig {tmp_path} cannot be read: Is a directory"):
        await load_config(kubeconfig=str(tmp_path))


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
