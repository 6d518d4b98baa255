"""kcontrol-manager beside kube-controller-manager, both with default flags, on one cluster:
each leads on its own Lease and serves on its own port, and both run their controllers
(kcontrol's ReplicaSet controller creates pods, kube-controller-manager's service-account
controller and garbage collector do their work)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import signal
import socket
import ssl
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kcontrol.client import LEASES, NAMESPACES, PODS, REPLICASETS, ApiClient, ListOptions
from kcontrol.envtest.cluster import KUBE_CONTROLLER_MANAGER, Cluster
from kcontrol.errors import NotFound
from kcontrol.manager._options import DEFAULT_LEASE_NAME, DEFAULT_SECURE_PORT
from tests.integration.helpers import new_client, poll
from tests.serving.secure_helpers import https_get

pytestmark = pytest.mark.slow

KCM_PORT = 10257
WITHIN = 90.0


@contextlib.contextmanager
def holding(address: str, port: int) -> Iterator[None]:
    """Listen on ``address:port`` as a kube-controller-manager on the same host network
    would; if something already listens there, that does as well."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with contextlib.suppress(OSError):
            sock.bind((address, port))
            sock.listen()
        yield
    finally:
        sock.close()


def free_on(address: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return False
            raise
    return True


def serving_address() -> str | None:
    """Where kcontrol-manager can listen on its default port: everywhere (its default
    --bind-address) if the port is free, else a loopback address of its own (other test
    runs on this machine may hold the port on 127.0.0.1); None if neither is free."""
    for address in ("0.0.0.0", "127.0.0.42", "127.0.0.43"):
        if free_on(address, DEFAULT_SECURE_PORT):
            return address
    return None


async def holder(client: ApiClient, name: str) -> str:
    try:
        lease = await client.get(LEASES, name, namespace="kube-system")
    except NotFound:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def replicaset(namespace: str, name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


async def test_both_lead_and_both_run_their_controllers(tmp_path: Path) -> None:
    address = serving_address()
    if address is None:
        pytest.skip(f"port {DEFAULT_SECURE_PORT} is taken on this machine (another run?)")
    # Default flags: nothing but where the cluster is (and, only if another run on this
    # machine holds the port everywhere, a loopback address of its own).
    flags = [] if address == "0.0.0.0" else [f"--bind-address={address}"]
    kcm_args = {KUBE_CONTROLLER_MANAGER: ["--leader-elect=true"]}  # its default Lease
    async with Cluster(nodes=1, extra_args=kcm_args) as cluster:
        log_path = tmp_path / "kcontrol-manager.log"
        with holding(address, KCM_PORT), log_path.open("wb") as log:
            process = subprocess.Popen(  # noqa: ASYNC220 - returns at once
                [
                    str(Path(sys.executable).with_name("kcontrol-manager")),
                    f"--kubeconfig={cluster.kubeconfig_path}",
                    *flags,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                await _check_both_lead_and_act(cluster, process, log_path, address)
            finally:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
                code = await asyncio.to_thread(process.wait, 60)
        output = log_path.read_text(errors="replace")
        assert code == 0, output[-3000:]
        assert "attempting to acquire leader lease" in output
        assert "kube-system/kube-controller-manager" not in output, "never KCM's Lease"


async def _check_both_lead_and_act(
    cluster: Cluster, process: subprocess.Popen[bytes], log_path: Path, address: str
) -> None:
    def alive() -> None:
        assert process.poll() is None, log_path.read_text(errors="replace")[-3000:]

    async with new_client(cluster) as client:
        kcm, ours = "", ""

        async def both_hold() -> bool:
            nonlocal kcm, ours
            alive()
            kcm = await holder(client, "kube-controller-manager")
            ours = await holder(client, DEFAULT_LEASE_NAME)
            return bool(kcm and ours)

        await poll(both_hold, within=WITHIN, message=lambda: f"Lease holders {kcm!r}, {ours!r}")
        assert kcm != ours

        # kube-controller-manager's controllers run: the service-account controller gives
        # a new namespace its default ServiceAccount ...
        namespace = f"t-{uuid.uuid4().hex[:10]}"
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        await cluster.wait_for_service_account(namespace)

        # ... kcontrol's run: its ReplicaSet controller creates the pods (KCM's is off) ...
        name = "beside"
        await client.create(REPLICASETS, replicaset(namespace, name, 2), namespace=namespace)

        async def pods() -> list[dict[str, Any]]:
            listed = await client.list(
                PODS, namespace=namespace, options=ListOptions(label_selector=f"app={name}")
            )
            return [p for p in listed["items"] if not p["metadata"].get("deletionTimestamp")]

        async def two_pods() -> bool:
            alive()
            return len(await pods()) == 2

        await poll(two_pods, within=WITHIN, message="kcontrol's ReplicaSet controller made pods")
        owners = {p["metadata"]["ownerReferences"][0]["name"] for p in await pods()}
        assert owners == {name}

        # ... and kube-controller-manager's garbage collector removes them with their owner.
        await client.delete(REPLICASETS, name, namespace=namespace, propagation_policy="Background")

        async def gone() -> bool:
            return not await pods()

        await poll(gone, within=WITHIN, message="KCM's garbage collector deleted the pods")

        # kcontrol-manager serves on its own port, beside whatever holds 10257.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        host = "127.0.0.1" if address == "0.0.0.0" else address
        answer = await https_get(DEFAULT_SECURE_PORT, "/healthz", context=context, host=host)
        assert (answer.status, answer.body) == (200, "ok")
        assert await holder(client, "kube-controller-manager") == kcm, "KCM still leads"
        assert await holder(client, DEFAULT_LEASE_NAME) == ours, "kcontrol still leads"
