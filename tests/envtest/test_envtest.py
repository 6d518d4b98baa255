"""The test control plane itself: a real round trip through kubernetes_asyncio, data surviving
an apiserver restart, the built kubectl, and RBAC for the unprivileged users."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from pathlib import Path

import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

import kcontrol.envtest._controlplane as controlplane
from kcontrol.client import NAMESPACES
from kcontrol.envtest import ControlPlane, ControlPlaneError, find_binary


def _configmap(name: str, value: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": value},
    }


async def test_round_trip_create_get_list_watch_delete(
    control_plane: ControlPlane, namespace: str
) -> None:
    configuration = await control_plane.kube_configuration()
    async with client.ApiClient(configuration) as api_client:
        core = client.CoreV1Api(api_client)
        created = await core.create_namespaced_config_map(namespace, _configmap("one", "1"))
        assert created.metadata.uid

        fetched = await core.read_namespaced_config_map("one", namespace)
        assert fetched.data == {"k": "1"}

        listed = await core.list_namespaced_config_map(namespace)
        assert [item.metadata.name for item in listed.items] == ["one"]

        events: list[tuple[str, str]] = []
        async with watch.Watch() as watcher:
            stream = watcher.stream(
                core.list_namespaced_config_map,
                namespace,
                resource_version=listed.metadata.resource_version,
                timeout_seconds=10,
            )
            await core.create_namespaced_config_map(namespace, _configmap("two", "2"))
            await core.delete_namespaced_config_map("one", namespace)
            async for event in stream:
                events.append((event["type"], event["object"].metadata.name))
                if len(events) == 2:
                    break
        assert events == [("ADDED", "two"), ("DELETED", "one")]

        with pytest.raises(ApiException) as raised:
            await core.read_namespaced_config_map("one", namespace)
        assert raised.value.status == 404


async def test_apiserver_restart_keeps_data(control_plane: ControlPlane, namespace: str) -> None:
    configuration = await control_plane.kube_configuration()
    async with client.ApiClient(configuration) as api_client:
        core = client.CoreV1Api(api_client)
        await core.create_namespaced_config_map(namespace, _configmap("kept", "yes"))

    await control_plane.restart_apiserver()

    async with client.ApiClient(configuration) as api_client:
        fetched = await client.CoreV1Api(api_client).read_namespaced_config_map("kept", namespace)
        assert fetched.data == {"k": "yes"}


async def test_built_kubectl_works(control_plane: ControlPlane, namespace: str) -> None:
    version = json.loads(await asyncio.to_thread(control_plane.kubectl, "version", "-o", "json"))
    assert version["serverVersion"]["gitVersion"].startswith("v1.36.")
    assert version["clientVersion"]["gitVersion"] == version["serverVersion"]["gitVersion"]

    await asyncio.to_thread(
        control_plane.kubectl, "-n", namespace, "create", "configmap", "from-kubectl"
    )
    names = await asyncio.to_thread(
        control_plane.kubectl, "-n", namespace, "get", "configmaps", "-o", "name"
    )
    assert "configmap/from-kubectl" in names.split()


async def test_unprivileged_user_is_denied_by_rbac(control_plane: ControlPlane) -> None:
    answer = await asyncio.to_thread(
        control_plane.kubectl, "auth", "can-i", "list", "pods", user="alice", check=False
    )
    assert answer.strip() == "no"
    admin = await asyncio.to_thread(control_plane.kubectl, "auth", "can-i", "list", "pods")
    assert admin.strip() == "yes"


def test_missing_binary_names_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KCONTROL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KCONTROL_ASSETS", raising=False)
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    with pytest.raises(ControlPlaneError, match=r"hack/build-k8s\.sh"):
        find_binary("kube-apiserver")


async def test_start_failure_surfaces_apiserver_log() -> None:
    plane = ControlPlane(extra_apiserver_args=["--no-such-flag"], start_timeout=30)
    with pytest.raises(ControlPlaneError, match="no-such-flag"):
        await plane.start()
    with pytest.raises(ControlPlaneError):
        _ = plane.directory  # the temp dir is gone after a failed start


async def test_exit_leaves_no_process_or_directory() -> None:
    async with ControlPlane() as plane:
        directory = plane.directory
        pids = [p.popen.pid for p in (plane._etcd, plane._apiserver) if p and p.popen]
        assert directory.exists() and len(pids) == 2
    assert not directory.exists()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


async def test_a_port_taken_before_the_apiserver_binds_it_is_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ports come from the ephemeral range, which any connection on the machine may take
    between the pick and the bind: kube-apiserver is started again on another port."""
    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    real = controlplane.free_port
    picks = iter([real(), real(), taken.getsockname()[1]])  # etcd, its peer, the apiserver
    monkeypatch.setattr(controlplane, "free_port", lambda: next(picks, None) or real())
    try:
        async with ControlPlane(start_timeout=60) as plane:
            assert plane.port != taken.getsockname()[1]
            assert b"address already in use" in plane.apiserver_log.read_bytes()
            assert f":{plane.port}" in plane.kubeconfig_path.read_text()
            async with plane.admin_client() as api:
                namespaces = await api.list(NAMESPACES)
            assert "default" in [ns["metadata"]["name"] for ns in namespaces["items"]]
    finally:
        taken.close()


WRAPPER = """
import asyncio, json, sys
from kcontrol.envtest import ControlPlane

async def main() -> None:
    async with ControlPlane(start_timeout=60) as plane:
        pids = [p.popen.pid for p in (plane._etcd, plane._apiserver) if p and p.popen]
        print(json.dumps(pids), flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead but not reaped; its parent here is init, which reaps it soon.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
async def test_a_killed_parent_leaves_no_control_plane_behind() -> None:
    """SIGKILL the process that started etcd and kube-apiserver: they end with it (no
    orphaned apiserver after a killed test run)."""
    wrapper = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WRAPPER, stdout=asyncio.subprocess.PIPE
    )
    pids: list[int] = []
    try:
        assert wrapper.stdout is not None
        line = await asyncio.wait_for(wrapper.stdout.readline(), 90)
        pids = json.loads(line)
        assert len(pids) == 2 and all(_alive(pid) for pid in pids)
        wrapper.kill()
        await wrapper.wait()
        for _ in range(100):
            if not any(_alive(pid) for pid in pids):
                break
            await asyncio.sleep(0.1)
        assert [pid for pid in pids if _alive(pid)] == [], "outlived the killed parent"
    finally:
        if wrapper.returncode is None:
            wrapper.kill()
            await wrapper.wait()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
