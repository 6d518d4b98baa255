"""The rollout view in a real terminal (tmux), on the test cluster, as a person would see it:
bars filling up to ready/desired, the conditions, a rolling update, and Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Iterator

import pytest

from kcontrol.client import DEPLOYMENTS, ApiClient, PatchType
from kcontrol.envtest.cluster import READY_DELAY_ANNOTATION, Cluster
from kcontrol.manager import Manager
from kcontrol_controllers.deployment import SPEC as DEPLOYMENT_SPEC
from kcontrol_controllers.replicaset import SPEC as REPLICASET_SPEC
from tests.controllers.cluster_helpers import WITHIN, running_manager
from tests.integration.helpers import new_client
from tests.rollout.tmux_helpers import Terminal, line_with, requires_tmux

pytestmark = [requires_tmux, pytest.mark.slow]


def web(namespace: str, image: str) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {
                    "labels": {"app": "web"},
                    "annotations": {READY_DELAY_ANNOTATION: "1s"},
                },
                "spec": {"containers": [{"name": "web", "image": image}]},
            },
        },
    }


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[ApiClient]:
    async with new_client(cluster) as api:
        yield api


@pytest.fixture
async def controllers(cluster: Cluster, cluster_namespace: str) -> AsyncIterator[Manager]:
    async with running_manager(cluster, DEPLOYMENT_SPEC, REPLICASET_SPEC) as manager:
        yield manager


@contextlib.contextmanager
def terminal(*argv: str) -> Iterator[Terminal]:
    term = Terminal(argv)
    try:
        yield term
    finally:
        term.close()


def new_replicaset_shows(ready: str, image: str) -> object:
    def check(screen: str) -> bool:
        line = line_with(screen, image)
        return line.split()[:1] == ["│"] and " new " in line and f" {ready} " in line

    return check


@pytest.mark.usefixtures("controllers")
async def test_view_follows_a_rollout_and_exits_cleanly_on_ctrl_c(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    target = f"{cluster_namespace}/web"
    view = [sys.executable, "-m", "kcontrol.rollout", target]
    with terminal(*view, "--kubeconfig", str(cluster.kubeconfig_path)) as term:
        await term.wait_for(lambda s: f"waiting for {target}" in s, WITHIN)

        await client.create(
            DEPLOYMENTS, web(cluster_namespace, "pause:1"), namespace=cluster_namespace
        )
        screen = await term.wait_for(
            lambda s: (
                new_replicaset_shows("3/3", "pause:1")(s)
                and 'deployment "web" successfully rolled out' in s
            ),
            WITHIN,
        )
        assert "━" in line_with(screen, "pause:1")
        available = line_with(screen, "MinimumReplicasAvailable").split()
        assert available[1:3] == ["Available", "True"]
        assert "ScalingReplicaSet" in screen and "SuccessfulCreate" in screen
        assert "replicas 3/3  updated 3  ready 3  available 3" in screen

        # A rolling update: a second ReplicaSet, marked new, the first one old, both on screen.
        patch = {
            "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "pause:2"}]}}}
        }
        await client.patch(
            DEPLOYMENTS, "web", patch, namespace=cluster_namespace, patch_type=PatchType.STRATEGIC
        )
        screen = await term.wait_for(
            lambda s: (
                new_replicaset_shows("3/3", "pause:2")(s)
                and 'deployment "web" successfully rolled out' in s
                and "generation 2" in s
            ),
            WITHIN,
        )
        old = line_with(screen, "pause:1")
        assert " old " in old and " 0/0 " in old

        term.send_keys("C-c")
        screen = await term.wait_for(lambda s: term.exit_status(s) is not None, 20)
        assert term.exit_status(screen) == 0, screen
        assert "Traceback" not in screen
        # The last frame stays on screen after the exit.
        assert 'deployment "web" successfully rolled out' in screen


async def test_view_once_prints_a_frame_for_a_missing_deployment(
    cluster: Cluster, cluster_namespace: str
) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kcontrol.rollout", f"{cluster_namespace}/nothing", "--once",
        "--kubeconfig", str(cluster.kubeconfig_path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, output.decode()
    assert f"waiting for {cluster_namespace}/nothing" in output.decode()
