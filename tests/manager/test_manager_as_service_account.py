"""kcontrol-manager with exactly deploy/'s permissions: deploy/namespace.yaml and rbac.yaml are
applied (server-side) to the test cluster, the manager runs as a process with a token of the
ServiceAccount kcontrol-system/kcontrol-manager (TokenRequest API) and deploy/deployment.yaml's
arguments - leader election on the Lease kube-system/kcontrol-manager, the secure port with
delegated authentication and authorization - and rolls a Deployment out and to a new image
without a single request denied. The same token may not read Secrets or delete Deployments."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import ssl
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
import yaml

from kcontrol.client import (
    DEPLOYMENTS,
    LEASES,
    NAMESPACES,
    REPLICASETS,
    SECRETS,
    ApiClient,
    load_config,
)
from kcontrol.envtest import find_binary
from kcontrol.envtest.cluster import Cluster
from kcontrol.errors import Forbidden, KcontrolError, NotFound
from tests.controllers.cluster_helpers import (
    REVISION,
    deployment,
    patch,
    replicasets,
    set_image,
    wait_complete,
)
from tests.integration.helpers import new_client, poll
from tests.processes import LoggedProcess, free_port
from tests.serving.secure_helpers import https_get, trusting

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
NAMESPACE = "kcontrol-system"
SERVICE_ACCOUNT = "kcontrol-manager"
LEASE_NAMESPACE, LEASE_NAME = "kube-system", "kcontrol-manager"
WITHIN = 90.0

DENIED = re.compile(r"forbidden|\b403\b", re.IGNORECASE)
"""A log line about a request the API server refused: its message says "... is forbidden:
User ... cannot ...", the exception is ``Forbidden``, or the status code 403 is logged."""


def apply_server_side(cluster: Cluster, *paths: Path) -> None:
    """``kubectl apply --server-side`` as the administrator; deploy/'s manifests own their
    fields (forced, should an earlier test of the session have applied them otherwise)."""
    files = [arg for path in paths for arg in ("-f", str(path))]
    done = subprocess.run(
        [
            str(find_binary("kubectl")),
            "--kubeconfig",
            str(cluster.kubeconfig_path),
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=kcontrol-deploy",
            *files,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


async def request_token(cluster: Cluster) -> str:
    """A token of the ServiceAccount from the TokenRequest API, as the kubelet gets one for a
    pod's projected volume."""
    url = f"{cluster.host}/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}/token"
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    headers = {"Authorization": f"Bearer {cluster.token()}"}
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=cluster.ssl_context())) as session,
        session.post(url, json=body, headers=headers) as response,
    ):
        answer = await response.json()
        assert response.status == 201, answer
    token: str = answer["status"]["token"]
    return token


def token_kubeconfig(cluster: Cluster, token: str, path: Path) -> Path:
    """The administrator's kubeconfig (server, CA) with the user replaced by ``token``."""
    admin = yaml.safe_load(cluster.kubeconfig_path.read_text())
    context = admin["current-context"]
    [cluster_ref] = [c["context"]["cluster"] for c in admin["contexts"] if c["name"] == context]
    [server] = [c for c in admin["clusters"] if c["name"] == cluster_ref]
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [server],
        "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token}}],
        "contexts": [
            {"name": "sa", "context": {"cluster": server["name"], "user": SERVICE_ACCOUNT}}
        ],
        "current-context": "sa",
    }
    path.write_text(json.dumps(kubeconfig, indent=2))
    path.chmod(0o600)
    return path


def deployed_args() -> list[str]:
    """The manager container's arguments in deploy/deployment.yaml."""
    for document in yaml.safe_load_all((DEPLOY / "deployment.yaml").read_text()):
        if document and document["kind"] == "Deployment":
            [container] = document["spec"]["template"]["spec"]["containers"]
            return list(container["args"])
    raise AssertionError("no Deployment in deploy/deployment.yaml")


class ManagerAsServiceAccount(LoggedProcess):
    """``kcontrol-manager`` with deploy/'s arguments, but the given kubeconfig, a loopback
    address, a free secure port and its own certificate directory; JSON log in a file."""

    def __init__(self, kubeconfig: Path, directory: Path) -> None:
        self.identity = f"sa-test-{uuid.uuid4().hex[:6]}"
        self.port = free_port()
        self.cert_file = directory / "certs" / "kcontrol-manager.crt"
        local = ("--bind-address", "--secure-port", "--kubeconfig")
        args = [arg for arg in deployed_args() if not arg.startswith(local)]
        super().__init__(
            [
                str(Path(sys.executable).with_name("kcontrol-manager")),
                f"--kubeconfig={kubeconfig}",
                *args,
                f"--leader-elect-identity={self.identity}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--cert-dir={directory / 'certs'}",
            ],
            directory / "manager.log",
            cwd=directory,
            env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
        )

    def context(self) -> ssl.SSLContext:
        return trusting(self.cert_file)

    def alive(self) -> bool:
        if self.popen.poll() is not None:
            raise AssertionError(f"kcontrol-manager exited {self.popen.returncode}:\n{self.log()}")
        return True


@contextlib.contextmanager
def running(kubeconfig: Path, directory: Path) -> Iterator[ManagerAsServiceAccount]:
    manager = ManagerAsServiceAccount(kubeconfig, directory)
    try:
        yield manager
    finally:
        manager.stop()


async def lease_holder(client: ApiClient) -> str:
    try:
        lease = await client.get(LEASES, LEASE_NAME, namespace=LEASE_NAMESPACE)
    except NotFound:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


async def test_the_service_account_suffices_for_a_rollout_and_nothing_more(
    cluster: Cluster, tmp_path: Path
) -> None:
    apply_server_side(cluster, DEPLOY / "namespace.yaml", DEPLOY / "rbac.yaml")
    token = await request_token(cluster)
    kubeconfig = token_kubeconfig(cluster, token, tmp_path / "sa.kubeconfig")
    namespace = f"t-{uuid.uuid4().hex[:10]}"
    async with (
        new_client(cluster) as admin,
        ApiClient(await load_config(kubeconfig=str(kubeconfig)), qps=0) as service_account,
    ):
        await admin.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
        try:
            await cluster.wait_for_service_account(namespace)
            with running(kubeconfig, tmp_path) as manager:
                await roll_out(admin, manager, namespace)
                await scrape(manager, cluster.token())
                await assert_denied(admin, service_account, namespace)

                manager.popen.send_signal(signal.SIGTERM)
                code = await poll_exit(manager)
                log = manager.log()
                assert code == 0, f"exit status {code}:\n{log[-3000:]}"
            assert not await lease_holder(admin), "the Lease is released on SIGTERM"
            denied = [line for line in log.splitlines() if DENIED.search(line)]
            assert not denied, "requests the ServiceAccount may not make:\n" + "\n".join(denied)
        finally:
            with contextlib.suppress(KcontrolError):
                await admin.delete(NAMESPACES, namespace)


async def roll_out(admin: ApiClient, manager: ManagerAsServiceAccount, namespace: str) -> None:
    """Leading on deploy/'s Lease, the manager completes a Deployment, then its rollout."""

    async def leading() -> bool:
        return manager.alive() and await lease_holder(admin) == manager.identity

    await poll(
        leading, within=WITHIN, interval=0.5, message=lambda: f"not leading:\n{manager.log()}"
    )
    await admin.create(DEPLOYMENTS, deployment("web", 3), namespace=namespace)
    first = await wait_complete(admin, namespace, "web")
    await patch(admin, namespace, "web", set_image("registry.example/app:2"))
    second = await wait_complete(admin, namespace, "web")
    assert second["metadata"]["generation"] > first["metadata"]["generation"]
    old, new = await replicasets(admin, namespace, "web")
    assert (old["metadata"]["annotations"][REVISION], old["spec"]["replicas"]) == ("1", 0)
    assert new["metadata"]["annotations"][REVISION] == "2"
    assert new["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/app:2"
    manager.alive()


async def scrape(manager: ManagerAsServiceAccount, admin_token: str) -> None:
    """/metrics with the administrator's token: the manager's TokenReview and
    SubjectAccessReview, made with the ServiceAccount's rights, let it through."""
    answer = await https_get(manager.port, "/metrics", context=manager.context(), token=admin_token)
    assert answer.status == 200, answer.body
    assert "kcontrol" in answer.body


async def assert_denied(admin: ApiClient, service_account: ApiClient, namespace: str) -> None:
    """The ServiceAccount's own token: no Secrets, no deleting Deployments."""
    await admin.create(
        SECRETS,
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {}},
        namespace=namespace,
    )
    with pytest.raises(Forbidden):
        await service_account.get(SECRETS, "s", namespace=namespace)
    with pytest.raises(Forbidden):
        await service_account.list(SECRETS, namespace=namespace)
    with pytest.raises(Forbidden):
        await service_account.delete(DEPLOYMENTS, "web", namespace=namespace)
    await admin.get(DEPLOYMENTS, "web", namespace=namespace)  # still there
    # and what it may do, with the same client: read its Deployments and ReplicaSets
    await service_account.get(DEPLOYMENTS, "web", namespace=namespace)
    await service_account.list(REPLICASETS, namespace=namespace)


async def poll_exit(manager: ManagerAsServiceAccount, within: float = 40.0) -> int:
    async def exited() -> bool:
        return manager.popen.poll() is not None

    await poll(exited, within=within, message="kcontrol-manager still running after SIGTERM")
    code = manager.popen.returncode
    assert code is not None
    return code
