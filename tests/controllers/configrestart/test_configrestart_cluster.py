"""The config-restart controller on the test cluster, next to kcontrol's Deployment and
ReplicaSet controllers, so a restart is a real rollout of kwok pods.

Covers each trigger (ConfigMap data, Secret data, a newly referenced config), compaction
within the grace period, no restart on metadata-only edits, opt-out, and fault 10 of
reliability.md: a Secret rotated twice within the grace period with the controller process
SIGKILLed in between.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from kcontrol.client import (
    CONFIGMAPS,
    DEPLOYMENTS,
    EVENTS,
    PODS,
    REPLICASETS,
    SECRETS,
    ApiClient,
    ListOptions,
    Object,
    encode_json,
)
from kcontrol.envtest.cluster import Cluster
from kcontrol.testing import capture_logs
from kcontrol_controllers.configrestart import KCONTROL, SPEC, HmacKey
from kcontrol_controllers.deployment import SPEC as DEPLOYMENT_SPEC
from kcontrol_controllers.replicaset import SPEC as REPLICASET_SPEC
from tests.controllers.cluster_helpers import (
    WITHIN,
    deployment,
    replicasets,
    running_manager,
    wait_complete,
)
from tests.integration.helpers import poll
from tests.processes import LoggedProcess, free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
KEY_TEXT = "configrestart-test-key-0123456789abcdef"
KEY = HmacKey(KEY_TEXT.encode())
GRACE = 5.0
FAULT_GRACE = 10.0
"""The fault-10 process's grace period: long enough that the kill (about 1 s after the
rotation) always lands inside it, however slow the machine."""


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "hmac-key"
    path.write_text(KEY_TEXT + "\n")
    return path


def flags(key_file: Path) -> dict[str, Any]:
    return {
        "configrestart-hmac-key-file": str(key_file),
        "configrestart-grace-period": GRACE,
        "configrestart-check-period": 0.2,
    }


def configmap(name: str, **data: str) -> Object:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def secret(name: str, value: str) -> Object:
    encoded = base64.b64encode(value.encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "data": {"p": encoded},
    }


def app(name: str, *, configmap_name: str | None = "app", secret_name: str | None = "db") -> Object:
    d = deployment(name, 2)
    d["metadata"]["annotations"] = {KCONTROL.enabled: "enabled"}
    pod = d["spec"]["template"]["spec"]
    if configmap_name:
        pod["containers"][0]["envFrom"] = [{"configMapRef": {"name": configmap_name}}]
    if secret_name:
        pod["volumes"] = [{"name": "db", "secret": {"secretName": secret_name}}]
    return d


async def stored(client: ApiClient, namespace: str, name: str) -> dict[str, str]:
    d = await client.get(DEPLOYMENTS, name, namespace=namespace)
    text = (d["metadata"].get("annotations") or {}).get(KCONTROL.checksums)
    return json.loads(text) if text else {}


async def wait_stored(
    client: ApiClient, namespace: str, name: str, expected: dict[str, str]
) -> None:
    seen: dict[str, Any] = {}

    async def done() -> bool:
        seen["stored"] = await stored(client, namespace, name)
        return seen["stored"] == expected

    await poll(done, within=WITHIN, message=lambda: f"stored {seen} != {expected}")


async def set_data(client: ApiClient, resource: Any, namespace: str, name: str, data: Any) -> None:
    await client.patch(resource, name, {"data": data}, namespace=namespace)


async def revisions(client: ApiClient, namespace: str, name: str) -> int:
    return len(await replicasets(client, namespace, name))


def cm_sum(namespace: str, name: str, **data: str) -> str:
    return KEY.checksum("configmap", namespace, name, data)


def secret_sum(namespace: str, name: str, value: str) -> str:
    return KEY.checksum("secret", namespace, name, secret(name, value)["data"])


async def test_triggers_compaction_metadata_and_opt_out(
    cluster: Cluster, cluster_namespace: str, client: ApiClient, key_file: Path
) -> None:
    ns = cluster_namespace
    await client.create(CONFIGMAPS, configmap("app", a="1"), namespace=ns)
    await client.create(SECRETS, secret("db", "s1"), namespace=ns)
    await client.create(DEPLOYMENTS, app("web"), namespace=ns)
    with capture_logs(logging.DEBUG) as logs:
        try:
            await _triggers(cluster, ns, client, key_file)
        finally:
            for entry in logs:  # shown if the test fails
                if entry["logger"].startswith("kcontrol_controllers.configrestart"):
                    print({k: v for k, v in entry.items() if k != "exc_info"})


async def _triggers(cluster: Cluster, ns: str, client: ApiClient, key_file: Path) -> None:
    async with running_manager(
        cluster,
        SPEC,
        DEPLOYMENT_SPEC,
        REPLICASET_SPEC,
        controllers=("*", "configrestart"),
        controller_flags=flags(key_file),
    ):
        await wait_stored(
            client,
            ns,
            "web",
            {
                f"configmap/{ns}/app": cm_sum(ns, "app", a="1"),
                f"secret/{ns}/db": secret_sum(ns, "db", "s1"),
            },
        )
        await wait_complete(client, ns, "web")
        assert await revisions(client, ns, "web") == 1, "first sight restarts nothing"

        # ConfigMap data, changed twice within the grace period: one rollout
        await set_data(client, CONFIGMAPS, ns, "app", {"a": "2"})
        await asyncio.sleep(GRACE / 4)
        await set_data(client, CONFIGMAPS, ns, "app", {"a": "3"})
        await wait_stored(
            client,
            ns,
            "web",
            {
                f"configmap/{ns}/app": cm_sum(ns, "app", a="3"),
                f"secret/{ns}/db": secret_sum(ns, "db", "s1"),
            },
        )
        await wait_complete(client, ns, "web")
        await asyncio.sleep(GRACE + 1)
        assert await revisions(client, ns, "web") == 2, "two edits within the grace: one restart"

        # Secret data
        await set_data(client, SECRETS, ns, "db", secret("db", "s2")["data"])
        await wait_stored(
            client,
            ns,
            "web",
            {
                f"configmap/{ns}/app": cm_sum(ns, "app", a="3"),
                f"secret/{ns}/db": secret_sum(ns, "db", "s2"),
            },
        )
        await wait_complete(client, ns, "web")
        assert await revisions(client, ns, "web") == 3

        # metadata-only edits of both: nothing
        for resource, name in ((CONFIGMAPS, "app"), (SECRETS, "db")):
            await client.patch(
                resource, name, {"metadata": {"labels": {"edited": "yes"}}}, namespace=ns
            )
        await asyncio.sleep(GRACE * 2 + 1)
        assert await revisions(client, ns, "web") == 3, "metadata-only edits restart nothing"

        # a newly referenced config changed again before its checksum was stored
        await client.create(CONFIGMAPS, configmap("extra", e="1"), namespace=ns)
        d = await client.get(DEPLOYMENTS, "web", namespace=ns)
        containers = d["spec"]["template"]["spec"]["containers"]
        containers[0]["envFrom"].append({"configMapRef": {"name": "extra"}})
        await client.update(DEPLOYMENTS, d, namespace=ns)  # rollout 4: the template changed

        # The shared Deployment informer has delivered the new reference once the Deployment
        # controller made revision 4's ReplicaSet from it; edit the config within the grace
        # period that follows (not before: the reference must be seen first).
        async def revision_4() -> bool:
            return await revisions(client, ns, "web") == 4

        await poll(revision_4, within=WITHIN, message="revision 4's ReplicaSet")
        await set_data(client, CONFIGMAPS, ns, "extra", {"e": "2"})
        await wait_stored(
            client,
            ns,
            "web",
            {
                f"configmap/{ns}/app": cm_sum(ns, "app", a="3"),
                f"configmap/{ns}/extra": cm_sum(ns, "extra", e="2"),
                f"secret/{ns}/db": secret_sum(ns, "db", "s2"),
            },
        )
        await wait_complete(client, ns, "web")
        assert await revisions(client, ns, "web") == 5, "template change, then the restart"

        # opt-out
        await client.patch(
            DEPLOYMENTS,
            "web",
            {"metadata": {"annotations": {KCONTROL.enabled: None}}},
            namespace=ns,
        )
        await asyncio.sleep(0.5)
        await set_data(client, CONFIGMAPS, ns, "app", {"a": "4"})
        await asyncio.sleep(GRACE * 2 + 1)
        assert await revisions(client, ns, "web") == 5, "opted out: no restart"
        assert (await stored(client, ns, "web"))[f"configmap/{ns}/app"] == cm_sum(ns, "app", a="3")


# -- fault 10: a Secret rotated twice within the grace period, the controller killed between --


class Process(LoggedProcess):
    """``kcontrol-manager`` running configrestart and the two rollout controllers."""

    def __init__(self, cluster: Cluster, key_file: Path, log_path: Path) -> None:
        self.port = free_port()
        super().__init__(
            [
                str(Path(sys.executable).parent / "kcontrol-manager"),
                f"--kubeconfig={cluster.kubeconfig_path}",
                "--controllers=configrestart,deployment-controller,replicaset-controller",
                "--leader-elect=false",
                "--secure-port=0",
                "--bind-address=127.0.0.1",
                f"--metrics-port={self.port}",
                f"--configrestart-hmac-key-file={key_file}",
                f"--configrestart-grace-period={FAULT_GRACE:g}s",
                "--configrestart-check-period=200ms",
                "--kube-api-qps=0",
                "--log-format=json",
                "-v=4",
            ],
            log_path,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            append=True,
        )

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            return r.read().decode()  # type: ignore[no-any-return]


async def test_secret_rotated_twice_with_the_controller_killed_between(
    cluster: Cluster, cluster_namespace: str, client: ApiClient, key_file: Path, tmp_path: Path
) -> None:
    ns = cluster_namespace
    canaries = [f"canary-{i}-5f1d2c9e" for i in range(3)]
    log_path = tmp_path / "manager.log"
    await client.create(SECRETS, secret("db", canaries[0]), namespace=ns)
    await client.create(DEPLOYMENTS, app("web", configmap_name=None), namespace=ns)
    first = Process(cluster, key_file, log_path)
    second: Process | None = None
    metrics_seen: list[str] = []
    try:
        await wait_stored(client, ns, "web", {f"secret/{ns}/db": secret_sum(ns, "db", canaries[0])})
        await wait_complete(client, ns, "web")
        assert await revisions(client, ns, "web") == 1

        await set_data(client, SECRETS, ns, "db", secret("db", canaries[1])["data"])
        await asyncio.sleep(1.0)  # the change is waiting out its grace period
        metrics_seen.append(await asyncio.to_thread(first.metrics))
        first.stop()
        await set_data(client, SECRETS, ns, "db", secret("db", canaries[2])["data"])
        assert await revisions(client, ns, "web") == 1, "nothing restarted before the kill"

        second = Process(cluster, key_file, log_path)
        await wait_stored(client, ns, "web", {f"secret/{ns}/db": secret_sum(ns, "db", canaries[2])})
        await wait_complete(client, ns, "web")
        assert await revisions(client, ns, "web") == 2, "exactly one restart, after the kill"
        metrics_seen.append(await asyncio.to_thread(second.metrics))
    finally:
        first.stop()
        if second is not None:
            second.stop()
        print(log_path.read_text(errors="replace")[-20000:])  # shown if the test fails

    log = log_path.read_text(errors="replace")
    assert "restarting workload" in log
    events = await client.list(EVENTS, namespace=ns)
    objects: list[Any] = [events]
    for resource in (DEPLOYMENTS, REPLICASETS, PODS):
        objects.append(await client.list(resource, namespace=ns, options=ListOptions()))
    visible = "\n".join([log, *metrics_seen, *(encode_json(o).decode() for o in objects)])
    assert "ConfigChanged" in visible
    for canary in canaries:
        encoded = base64.b64encode(canary.encode()).decode()
        assert canary not in visible, f"{canary} leaked"
        assert encoded not in visible, f"{canary} (base64) leaked"
