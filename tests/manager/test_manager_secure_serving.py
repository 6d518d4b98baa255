"""The secure port against the real API server: kcontrol-manager serves /metrics over HTTPS
only to callers the API server authenticates (TokenReview, client certificates) and
authorizes (SubjectAccessReview on the non-resource URL), health paths to anyone, never logs a
token, and a flood of garbage tokens never turns a legitimate scrape away."""

from __future__ import annotations

import asyncio
import os
import ssl
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from kcontrol.client import Resource
from kcontrol.envtest import ControlPlane
from tests.manager.manager_helpers import admin_client
from tests.serving.secure_helpers import (
    METRICS_READER,
    ClientCA,
    SecureManager,
    apply,
    binding,
    cluster_signing_key,
    https_get,
    metrics_reader_role,
    service_account_token,
)

pytestmark = pytest.mark.slow

AUTHN_REVIEWS = "apiserver_delegated_authn_request_total"
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
CLUSTERROLEBINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
)


@pytest.fixture(scope="module")
def bob_reads_metrics(control_plane: ControlPlane) -> Iterator[str]:
    """deploy/'s metrics-reader ClusterRole, bound to bob (alice gets nothing)."""
    name = f"test-metrics-bob-{uuid.uuid4().hex[:6]}"
    apply(
        control_plane,
        metrics_reader_role(),
        binding(name, METRICS_READER, [{"kind": "User", "name": "bob"}]),
    )
    yield name
    control_plane.kubectl("delete", "clusterrolebinding", name, "--ignore-not-found")


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("secure")


@pytest.fixture(scope="module")
def running(
    control_plane: ControlPlane, bob_reads_metrics: str, directory: Path
) -> Iterator[SecureManager]:
    """One kcontrol-manager with default secure-serving flags for the module's tests."""
    manager = SecureManager(control_plane, directory)
    yield manager
    manager.stop()


@pytest.fixture
async def manager(running: SecureManager) -> AsyncIterator[SecureManager]:
    await running.wait_ready()
    yield running


def status_of(answer_json: dict[str, object]) -> tuple[object, object, object]:
    return answer_json["kind"], answer_json["reason"], answer_json["code"]


async def test_health_paths_are_served_without_credentials(manager: SecureManager) -> None:
    context = manager.context()
    for path in ("/healthz", "/livez", "/readyz"):
        answer = await https_get(manager.port, path, context=context)
        assert (answer.status, answer.body) == (200, "ok"), path
    answer = await https_get(manager.port, "/readyz?verbose", context=context)
    assert answer.status == 200
    assert answer.body.endswith("readyz check passed\n")
    answer = await https_get(manager.port, "/readyz/api-server", context=context)
    assert answer.status == 401, "only the listed paths: /readyz/<check> needs credentials"


async def test_no_credentials_is_401(manager: SecureManager, control_plane: ControlPlane) -> None:
    context = manager.context()
    answer = await https_get(manager.port, "/metrics", context=context)
    assert answer.status == 401
    assert answer.headers["Content-Type"].startswith("application/json")
    assert status_of(answer.json()) == ("Status", "Unauthorized", 401)
    assert "process_" not in answer.body
    answer = await https_get(manager.port, "/no-such-path", context=context)
    assert answer.status == 401, "authentication comes before routing"
    async with aiohttp.ClientSession() as session:
        url = f"https://127.0.0.1:{manager.port}/metrics"
        basic = {"Authorization": "Basic " + control_plane.token()}
        async with session.get(url, headers=basic, ssl=context) as response:
            assert response.status == 401, "only bearer tokens"


async def test_plain_http_is_not_served(manager: SecureManager) -> None:
    async with aiohttp.ClientSession() as session:
        url = f"http://127.0.0.1:{manager.port}/metrics"
        with pytest.raises(aiohttp.ClientError):  # the TLS port hangs up on plain HTTP
            async with session.get(url) as response:
                await response.read()


async def test_user_without_the_permission_is_403(
    manager: SecureManager, control_plane: ControlPlane
) -> None:
    answer = await https_get(
        manager.port, "/metrics", context=manager.context(), token=control_plane.token("alice")
    )
    assert answer.status == 403
    body = answer.json()
    assert status_of(body) == ("Status", "Forbidden", 403)
    assert body["message"] == 'forbidden: User "alice" cannot get path "/metrics"'


async def test_user_with_the_permission_gets_the_metrics(
    manager: SecureManager, control_plane: ControlPlane
) -> None:
    token = control_plane.token("bob")
    answer = await https_get(manager.port, "/metrics", context=manager.context(), token=token)
    assert answer.status == 200, answer.body
    assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert "process_cpu_seconds_total" in answer.body
    assert 'apiserver_delegated_authn_request_total{code="201"}' in answer.body
    assert 'apiserver_delegated_authz_request_total{code="201"}' in answer.body
    other = await https_get(manager.port, "/debug", context=manager.context(), token=token)
    assert other.status == 403, "the role grants /metrics only"
    assert other.json()["message"] == 'forbidden: User "bob" cannot get path "/debug"'


async def test_admin_may_read_everything(
    manager: SecureManager, control_plane: ControlPlane
) -> None:
    token = control_plane.token()
    answer = await https_get(manager.port, "/metrics", context=manager.context(), token=token)
    assert answer.status == 200
    answer = await https_get(manager.port, "/nope", context=manager.context(), token=token)
    assert answer.status == 404, "authorized, then routed"


async def test_expired_and_forged_tokens_are_401_and_never_logged(
    manager: SecureManager, control_plane: ControlPlane, namespace: str
) -> None:
    async with await admin_client(control_plane) as client:
        account = await client.create(
            SERVICEACCOUNTS, {"metadata": {"name": "scraper"}}, namespace=namespace
        )
        name = f"test-metrics-sa-{uuid.uuid4().hex[:6]}"
        subject = {"kind": "ServiceAccount", "name": "scraper", "namespace": namespace}
        await client.create(CLUSTERROLEBINDINGS, binding(name, METRICS_READER, [subject]))
        try:
            key = cluster_signing_key(control_plane)
            uid = account["metadata"]["uid"]
            valid = service_account_token(key, namespace, "scraper", uid, expires_in=3600)
            expired = service_account_token(key, namespace, "scraper", uid, expires_in=-60)
            other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            forged = service_account_token(other_key, namespace, "scraper", uid, expires_in=3600)
            garbage = "garbage-" + os.urandom(16).hex()
            context = manager.context()

            async def status(token: str) -> int:
                return (
                    await https_get(manager.port, "/metrics", context=context, token=token)
                ).status

            # The same claims, signed by the cluster's key and not expired: accepted. So the
            # expired one is refused for its expiry and the forged one for its signature.
            assert await _eventually_status(status, valid, 200), "RBAC may take a moment"
            assert await status(expired) == 401
            assert await status(forged) == 401
            assert await status(garbage) == 401
            assert await status(expired) == 401, "cached: still refused"
        finally:
            await client.delete(CLUSTERROLEBINDINGS, name)
    secrets = [valid, expired, forged, garbage]
    secrets += [control_plane.token(user) for user in ("admin", "alice", "bob")]
    log = manager.log()
    refusals = [e for e in manager.log_events() if e.get("event") == "request not authenticated"]
    assert refusals, "the refusals are logged (at -v=4 and up)"
    for secret in secrets:
        assert secret not in log
        # nor a large piece of it (a JWT's signature is its last part)
        assert secret[-24:] not in log


async def _eventually_status(status: object, token: str, expected: int) -> bool:
    deadline = time.monotonic() + 30
    while True:
        got = await status(token)  # type: ignore[operator]
        if got == expected:
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.5)


async def test_the_cluster_client_ca_is_looked_up(manager: SecureManager) -> None:
    updates = [e for e in manager.log_events() if e.get("event") == "client CA updated"]
    assert updates and updates[0]["certificates"] == 1, manager.log()[-2000:]
    # A certificate from a CA the cluster does not publish is refused in the handshake.
    ca = ClientCA(manager.cert_dir.parent / f"stranger-{uuid.uuid4().hex[:6]}")
    context = manager.context(client=ca.issue("bob"))
    with pytest.raises((aiohttp.ClientError, ssl.SSLError)):
        await https_get(manager.port, "/metrics", context=context)


async def test_client_certificates_against_the_client_ca_file(
    control_plane: ControlPlane, bob_reads_metrics: str, directory: Path
) -> None:
    ca = ClientCA(directory / "client-ca")
    manager = SecureManager(
        control_plane, directory / "with-ca", f"--client-ca-file={ca.cert_file}"
    )
    try:
        await manager.wait_ready()
        bob = manager.context(client=ca.issue("bob", ("team-a",)))
        answer = await https_get(manager.port, "/metrics", context=bob)
        assert answer.status == 200, answer.body
        assert "process_cpu_seconds_total" in answer.body
        alice = manager.context(client=ca.issue("alice"))
        answer = await https_get(manager.port, "/metrics", context=alice)
        assert answer.status == 403
        assert answer.json()["message"] == 'forbidden: User "alice" cannot get path "/metrics"'
        stranger = ClientCA(directory / "stranger")
        with pytest.raises((aiohttp.ClientError, ssl.SSLError)):
            await https_get(
                manager.port, "/metrics", context=manager.context(stranger.issue("bob"))
            )
        answer = await https_get(manager.port, "/metrics", context=manager.context())
        assert answer.status == 401, "a certificate stays optional; without one: 401"
    finally:
        manager.stop()


async def test_a_forbidden_client_ca_lookup_stops_the_start_unless_tolerated(
    control_plane: ControlPlane, directory: Path
) -> None:
    alice = control_plane.user_kubeconfig("alice")
    refused = SecureManager(
        control_plane, directory / "refused", f"--authentication-kubeconfig={alice}"
    )
    try:
        code = await refused.wait(60)
    finally:
        refused.stop()
    assert code == 1, refused.log()
    lines = [e["event"] for e in refused.log_events() if str(e.get("event")).startswith("exiting:")]
    assert len(lines) == 1, refused.log()
    assert "unable to get configmap/extension-apiserver-authentication in kube-system" in lines[0]
    assert "--role=extension-apiserver-authentication-reader" in lines[0]

    tolerated = SecureManager(
        control_plane,
        directory / "tolerated",
        f"--authentication-kubeconfig={alice}",
        "--authentication-tolerate-lookup-failure",
    )
    try:
        await tolerated.wait_ready()
        warnings = [
            e for e in tolerated.log_events() if "continuing without client" in str(e.get("event"))
        ]
        assert warnings, tolerated.log()
    finally:
        tolerated.stop()


def _sum(metrics: str, name: str, labels: str = "") -> float:
    total = 0.0
    for line in metrics.splitlines():
        if line.startswith(name + "{") and labels in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


async def _scrape(manager: SecureManager, token: str, session: aiohttp.ClientSession) -> str:
    answer = await https_get(
        manager.port, "/metrics", context=manager.context(), token=token, session=session
    )
    assert answer.status == 200, answer.body
    return answer.body


async def test_a_flood_of_garbage_tokens_never_refuses_a_legitimate_scrape(
    control_plane: ControlPlane, bob_reads_metrics: str, directory: Path
) -> None:
    manager = SecureManager(control_plane, directory / "flood")
    try:
        await manager.wait_ready()
        context = manager.context()
        statuses: dict[int, int] = {}
        semaphore = asyncio.Semaphore(50)
        flooding = asyncio.Event()
        async with aiohttp.ClientSession() as session:

            async def bad_request() -> None:
                async with semaphore:
                    token = "garbage-" + os.urandom(16).hex()
                    answer = await https_get(
                        manager.port, "/metrics", context=context, token=token, session=session
                    )
                    statuses[answer.status] = statuses.get(answer.status, 0) + 1
                    if sum(statuses.values()) >= 100:
                        flooding.set()

            async with asyncio.TaskGroup() as tasks:
                for _ in range(1000):
                    tasks.create_task(bad_request())
                # Mid-flood, a token the manager has not seen yet: its review and its
                # SubjectAccessReview are sent, and answered, like any other.
                await flooding.wait()
                scrape = await _scrape(manager, control_plane.token("bob"), session)
            assert "process_cpu_seconds_total" in scrape
        assert statuses == {401: 1000}, statuses

        # One garbage token, 200 requests at once: one review (shared, then cached).
        admin = control_plane.token()
        async with aiohttp.ClientSession() as session:
            before = _sum(await _scrape(manager, admin, session), AUTHN_REVIEWS)
            token = "repeated-" + os.urandom(16).hex()
            answers = await asyncio.gather(
                *(
                    https_get(
                        manager.port, "/metrics", context=context, token=token, session=session
                    )
                    for _ in range(200)
                )
            )
            after = _sum(await _scrape(manager, admin, session), AUTHN_REVIEWS)
        assert {a.status for a in answers} == {401}
        assert after - before == 1
    finally:
        manager.stop()


async def test_no_plain_http_listener_by_default(manager: SecureManager) -> None:
    assert not any(arg.startswith("--metrics-port") for arg in manager.argv)
    events = [str(e.get("event")) for e in manager.log_events()]
    assert "serving metrics and health checks over HTTPS" in events
    assert not [e for e in events if "plain HTTP" in e], events
