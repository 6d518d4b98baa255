"""Shared helpers of the manager tests: API access, ConfigMaps, Leases, free ports, polling."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

from examples.configmap_annotator import ANNOTATION
from kcontrol.client import CONFIGMAPS, LEASES, ApiClient, load_config
from kcontrol.envtest import ControlPlane
from kcontrol.errors import NotFound
from tests.processes import LoggedProcess, free_port

T = TypeVar("T")

LABELS = {"kcontrol.example/annotate": "true"}


async def admin_client(plane: ControlPlane) -> ApiClient:
    config = await load_config(kubeconfig=str(plane.kubeconfig_path))
    return ApiClient(config, qps=0)


async def eventually(
    probe: Callable[[], Awaitable[T | None]],
    *,
    within: float,
    interval: float = 0.1,
    message: str = "condition",
) -> T:
    """Poll ``probe`` until it returns something truthy; fail after ``within`` seconds."""
    deadline = time.monotonic() + within
    last: T | None = None
    while True:
        last = await probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"{message} not reached within {within}s (last: {last!r})")
        await asyncio.sleep(interval)


async def create_configmap(client: ApiClient, namespace: str, name: str) -> dict[str, Any]:
    return await client.create(
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": LABELS},
            "data": {"k": "v"},
        },
    )


async def annotations(client: ApiClient, namespace: str) -> dict[str, str | None]:
    """ConfigMap name -> the example's annotation (None when missing)."""
    listed = await client.list(CONFIGMAPS, namespace=namespace)
    return {
        item["metadata"]["name"]: (item["metadata"].get("annotations") or {}).get(ANNOTATION)
        for item in listed["items"]
    }


async def lease_spec(client: ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        lease = await client.get(LEASES, name, namespace=namespace)
    except NotFound:
        return None
    spec: dict[str, Any] = lease.get("spec") or {}
    return spec


async def http_get(port: int, path: str) -> tuple[int, str]:
    """GET ``http://127.0.0.1:<port><path>``; ``(0, error)`` when nothing answers."""
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session,
            session.get(f"http://127.0.0.1:{port}{path}") as response,
        ):
            return response.status, await response.text()
    except (aiohttp.ClientError, TimeoutError) as error:
        return 0, str(error)


LEASE_DURATION = 4.0
RENEW_DEADLINE = 3.0
RETRY_PERIOD = 0.5


class ManagerProcess(LoggedProcess):
    """``python -m examples.configmap_annotator`` (kcontrol-manager with the example
    controller) in its own session, logging JSON lines to a file."""

    def __init__(
        self, plane: ControlPlane, namespace: str, lease: str, identity: str, log_dir: Path
    ) -> None:
        self.identity = identity
        self.port = free_port()
        super().__init__(
            [
                sys.executable,
                "-m",
                "examples.configmap_annotator",
                f"--kubeconfig={plane.kubeconfig_path}",
                f"--leader-elect-lease-duration={LEASE_DURATION:g}s",
                f"--leader-elect-renew-deadline={RENEW_DEADLINE:g}s",
                f"--leader-elect-retry-period={RETRY_PERIOD * 1000:g}ms",
                f"--leader-elect-resource-namespace={namespace}",
                f"--leader-elect-resource-name={lease}",
                f"--leader-elect-identity={identity}",
                "--bind-address=127.0.0.1",
                f"--metrics-port={self.port}",
                "--secure-port=0",  # several run at once; the secure port has its own tests
                "--log-format=json",
                "-v=4",
            ],
            log_dir / f"{identity}.log",
        )
