"""Defaults that do not collide with kube-controller-manager (its own Lease and port), the
secure port's flags as kube-controller-manager names them (its defaults: 10 s review caches,
TLS 1.2 and up), their validation, and the plain-HTTP metrics port on 127.0.0.1 unless
--metrics-bind-address says otherwise."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from kcontrol.manager import ControllerRegistry, Manager, ManagerOptions, main
from kcontrol.manager._options import DEFAULT_LEASE_NAME, DEFAULT_SECURE_PORT
from kcontrol.manager.flags import parse_args
from kcontrol_controllers.replicaset import SPEC
from tests.processes import free_port

KUBERNETES_PORTS = {
    10248: "kubelet healthz",
    10249: "kube-proxy metrics",
    10250: "kubelet",
    10251: "kube-scheduler (old insecure port)",
    10252: "kube-controller-manager (old insecure port)",
    10253: "cloud-controller-manager (old insecure port)",
    10254: "ingress-nginx metrics",
    10255: "kubelet read-only",
    10256: "kube-proxy healthz",
    10257: "kube-controller-manager",
    10258: "cloud-controller-manager",
    10259: "kube-scheduler",
    10260: "cloud-controller-manager webhooks",
}


def test_defaults_do_not_collide_with_kube_controller_manager() -> None:
    options, _ = parse_args([])
    lease = (options.election.resource_namespace, options.election.resource_name)
    assert lease == ("kube-system", DEFAULT_LEASE_NAME) == ("kube-system", "kcontrol-manager")
    assert lease != ("kube-system", "kube-controller-manager")
    assert options.serving.secure_port == DEFAULT_SECURE_PORT == 10263
    assert options.serving.secure_port not in KUBERNETES_PORTS
    assert options.serving.metrics_port == 0, "no plain HTTP unless asked for"


def test_secure_serving_defaults_are_kube_controller_managers_or_documented() -> None:
    options = ManagerOptions().serving
    assert options.bind_address == "0.0.0.0"
    assert options.cert_dir == ""
    assert options.tls_cert_file is options.tls_private_key_file is options.client_ca_file is None
    assert options.authentication_kubeconfig is options.authorization_kubeconfig is None
    assert options.authentication_skip_lookup is False
    assert options.authentication_tolerate_lookup_failure is False
    assert options.authorization_always_allow_paths == ("/healthz", "/readyz", "/livez")
    # kube-controller-manager's review caches: 10 s for every answer.
    assert options.authentication_token_webhook_cache_ttl == 10.0
    assert options.authorization_webhook_cache_authorized_ttl == 10.0
    assert options.authorization_webhook_cache_unauthorized_ttl == 10.0
    assert options.tls_min_version == "VersionTLS12"
    assert options.tls_cipher_suites == ()
    # kcontrol's plain-HTTP port, when asked for, listens on the loopback interface only.
    assert options.metrics_bind_address == "127.0.0.1"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["--secure-port=8443"], {"secure_port": 8443}, id="secure-port"),
        pytest.param(["--secure-port=0"], {"secure_port": 0}, id="secure-port-off"),
        pytest.param(["--cert-dir=/certs"], {"cert_dir": "/certs"}, id="cert-dir"),
        pytest.param(
            ["--tls-cert-file=/t/tls.crt", "--tls-private-key-file=/t/tls.key"],
            {"tls_cert_file": "/t/tls.crt", "tls_private_key_file": "/t/tls.key"},
            id="tls-pair",
        ),
        pytest.param(["--client-ca-file=/ca.crt"], {"client_ca_file": "/ca.crt"}, id="client-ca"),
        pytest.param(
            ["--authentication-kubeconfig=/a", "--authorization-kubeconfig=/b"],
            {"authentication_kubeconfig": "/a", "authorization_kubeconfig": "/b"},
            id="kubeconfigs",
        ),
        pytest.param(
            ["--authentication-skip-lookup"], {"authentication_skip_lookup": True}, id="skip"
        ),
        pytest.param(
            ["--authentication-tolerate-lookup-failure=true"],
            {"authentication_tolerate_lookup_failure": True},
            id="tolerate",
        ),
        pytest.param(
            ["--authentication-token-webhook-cache-ttl=2m"],
            {"authentication_token_webhook_cache_ttl": 120.0},
            id="token-ttl",
        ),
        pytest.param(
            [
                "--authorization-webhook-cache-authorized-ttl=5m",
                "--authorization-webhook-cache-unauthorized-ttl=30s",
            ],
            {
                "authorization_webhook_cache_authorized_ttl": 300.0,
                "authorization_webhook_cache_unauthorized_ttl": 30.0,
            },
            id="authz-ttls",
        ),
        pytest.param(
            ["--authorization-always-allow-paths=/healthz,/healthz/*,/metrics"],
            {"authorization_always_allow_paths": ("/healthz", "/healthz/*", "/metrics")},
            id="always-allow",
        ),
        pytest.param(
            ["--authorization-always-allow-paths="],
            {"authorization_always_allow_paths": ()},
            id="always-allow-none",
        ),
        pytest.param(
            ["--metrics-port=8080"],
            {"metrics_port": 8080, "metrics_bind_address": "127.0.0.1"},
            id="plain-http-opt-in",
        ),
        pytest.param(
            ["--bind-address=0.0.0.0", "--metrics-port=8080"],
            {"bind_address": "0.0.0.0", "metrics_bind_address": "127.0.0.1"},
            id="bind-address-is-the-secure-ports",
        ),
        pytest.param(
            ["--metrics-port=8080", "--metrics-bind-address=0.0.0.0"],
            {"metrics_bind_address": "0.0.0.0"},
            id="metrics-bind-address",
        ),
        pytest.param(
            ["--tls-min-version=VersionTLS13"], {"tls_min_version": "VersionTLS13"}, id="tls13"
        ),
        pytest.param(
            ["--tls-min-version=VersionTLS10"], {"tls_min_version": "VersionTLS10"}, id="tls10"
        ),
        pytest.param(
            [
                "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,"
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305,TLS_AES_128_GCM_SHA256"
            ],
            {
                "tls_cipher_suites": (
                    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
                    "TLS_AES_128_GCM_SHA256",
                )
            },
            id="cipher-suites",
        ),
    ],
)
def test_serving_flags(argv: list[str], expected: dict[str, Any]) -> None:
    options, _ = parse_args(argv)
    for field, value in expected.items():
        assert getattr(options.serving, field) == value, field
    options.validate()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--secure-port=70000"], "--secure-port 70000 is not a port", id="port"),
        pytest.param(["--secure-port=9000", "--metrics-port=9000"], "must differ", id="same-ports"),
        pytest.param(["--tls-cert-file=/c"], "go together", id="cert-without-key"),
        pytest.param(["--tls-private-key-file=/k"], "go together", id="key-without-cert"),
        pytest.param(
            ["--authorization-always-allow-paths=/a*b"], "only a trailing *", id="bad-path"
        ),
        pytest.param(
            ["--authentication-token-webhook-cache-ttl=-1s"], "must not be negative", id="ttl"
        ),
        pytest.param(
            ["--tls-min-version=VersionTLS14"], "unknown TLS version 'VersionTLS14'", id="tls"
        ),
        pytest.param(
            ["--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,ECDHE-RSA-AES128-SHA"],
            "cipher suite ECDHE-RSA-AES128-SHA not supported or doesn't exist",
            id="openssl-name",
        ),
        pytest.param(
            ["--metrics-bind-address=localhost"],
            "--metrics-bind-address 'localhost' is not an IP address",
            id="metrics-bind-address",
        ),
    ],
)
def test_inconsistent_serving_flags_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv, registry=ControllerRegistry([SPEC])) == 2
    assert message in capsys.readouterr().err


def test_help_lists_the_secure_serving_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"], registry=ControllerRegistry([SPEC])) == 0
    out = capsys.readouterr().out
    for flag in (
        "--secure-port",
        "--cert-dir",
        "--tls-cert-file",
        "--tls-private-key-file",
        "--client-ca-file",
        "--authentication-kubeconfig",
        "--authentication-skip-lookup",
        "--authentication-tolerate-lookup-failure",
        "--authentication-token-webhook-cache-ttl",
        "--authorization-kubeconfig",
        "--authorization-always-allow-paths",
        "--authorization-webhook-cache-authorized-ttl",
        "--authorization-webhook-cache-unauthorized-ttl",
        "--tls-min-version string",
        "--tls-cipher-suites strings",
        "--metrics-port",
        "--metrics-bind-address ip",
    ):
        assert flag in out, flag
    assert "10263" in out
    out = " ".join(out.split())  # as if the terminal were wide enough for every line
    assert "Possible values: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13." in out
    assert '(default "VersionTLS12")' in out
    assert "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" in out
    assert "--authentication-token-webhook-cache-ttl duration" in out
    assert out.count("(default 10s)") >= 3, "the three review cache TTLs"


def _outward_address() -> str | None:
    """An address of this machine that is not a loopback one, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: nothing is sent
            address = str(probe.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


async def _answers(address: str, port: int) -> bool:
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session,
            session.get(f"http://{address}:{port}/livez") as response,
        ):
            return response.status == 200
    except (aiohttp.ClientError, OSError, TimeoutError):
        return False


async def test_the_metrics_port_listens_on_loopback_even_with_a_bind_address() -> None:
    outward = _outward_address()
    if outward is None:
        pytest.skip("this machine has no address but loopback ones")
    port = free_port()
    options, _ = parse_args([f"--metrics-port={port}", "--bind-address=0.0.0.0", "--secure-port=0"])
    manager = Manager(options, ControllerRegistry(), registry=CollectorRegistry())
    serving = asyncio.create_task(manager.health.run())
    try:
        await asyncio.wait_for(manager.health.wait_started(), 30)
        assert await _answers("127.0.0.1", port)
        assert not await _answers(outward, port), f"plain HTTP reachable on {outward}"
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
