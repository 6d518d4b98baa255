"""Running kcontrol's controllers in this process against the test cluster, and reading what
they did: the manager as kcontrol-manager runs it (no leader election, no HTTP server), an
admin client, and small readers for pods, conditions and events."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import DEPLOYMENTS, EVENTS, PODS, REPLICASETS, ApiClient, ListOptions, Object
from kcontrol.envtest import find_binary
from kcontrol.envtest.cluster import Cluster
from kcontrol.leaderelection import LeaderElectionOptions
from kcontrol.manager import (
    ClientOptions,
    ControllerRegistry,
    ControllerSpec,
    Manager,
    ManagerOptions,
)
from kcontrol.serving import ServingOptions
from tests.integration.helpers import poll

HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"

WITHIN = 90.0
"""Seconds a convergence gets: generous, the machine is shared and noisy."""


SHARDS = int(os.environ.get("KCONTROL_TEST_SHARDS", "1"))
"""How many sharded replicas :func:`running_manager` runs by default (``KCONTROL_TEST_SHARDS``;
1: one manager without leader election, as the tests are written)."""


@contextlib.asynccontextmanager
async def running_manager(
    cluster: Cluster, *specs: ControllerSpec, shards: int | None = None, **overrides: Any
) -> AsyncIterator[Manager]:
    """A :class:`Manager` running ``specs`` (each, enabled by default or not) against
    ``cluster`` until the block ends: the first of :func:`running_managers` (the same
    arguments). With shards, the test's namespace falls in one shard, which any of the
    replicas may hold: a test that reads a manager's metrics or writes needs them all."""
    async with running_managers(cluster, *specs, shards=shards, **overrides) as managers:
        yield managers[0]


@contextlib.asynccontextmanager
async def running_managers(
    cluster: Cluster, *specs: ControllerSpec, shards: int | None = None, **overrides: Any
) -> AsyncIterator[list[Manager]]:
    """Managers running ``specs`` (each, enabled by default or not) against ``cluster`` until
    the block ends.

    Unthrottled by default (``kube_api_qps=0``); ``overrides`` are :class:`ManagerOptions`
    fields other than ``election``. One manager without leader election, or, with ``shards``
    above 1 (default :data:`SHARDS`), that many, as replicas of
    ``kcontrol-manager --shards=<shards>`` electing in kube-system with a 4 s lease
    (identities ``<identity>-<i>``). On exit every manager is shut down and awaited, so
    nothing it started outlives the block.
    """
    count = SHARDS if shards is None else shards
    identity = f"test-{uuid.uuid4().hex[:6]}"
    client = ClientOptions(kubeconfig=str(cluster.kubeconfig_path), kube_api_qps=0.0)
    election = (
        LeaderElectionOptions(
            shards=count,
            resource_namespace="kube-system",
            resource_name=f"{identity}-shards",
            lease_duration=4.0,
            renew_deadline=3.0,
            retry_period=0.5,
        )
        if count > 1
        else LeaderElectionOptions(leader_elect=False)
    )
    values: dict[str, Any] = {
        "client": client,
        "serving": ServingOptions(),  # neither HTTPS nor plain HTTP
        # The specs given, enabled by default or not (the batch controllers are not yet).
        "controllers": tuple(spec.name for spec in specs),
        **overrides,
    }
    managers = [
        Manager(
            ManagerOptions(
                election=replace(election, identity=f"{identity}-{i}" if count > 1 else identity),
                **values,
            ),
            ControllerRegistry(specs),
            registry=CollectorRegistry(),
            freeze_gc_after_sync=False,
        )
        for i in range(count)
    ]
    tasks = [asyncio.create_task(manager.run()) for manager in managers]
    try:
        yield managers
    finally:
        for manager in managers:
            manager.shutdown()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


@contextlib.asynccontextmanager
async def without_kcm_controllers(cluster: Cluster, *names: str) -> AsyncIterator[None]:
    """kube-controller-manager without its controllers ``names`` (each switched off with
    ``-<name>`` unless it already is) until the block ends, then with the controllers it
    had; no restart when nothing changes."""
    original = cluster.controllers
    wanted = tuple(f"-{name}" for name in names if f"-{name}" not in original)
    if not wanted:
        yield
        return
    await cluster.set_controller_manager_controllers((*original, *wanted))
    try:
        yield
    finally:
        await cluster.set_controller_manager_controllers(original)


async def pods_of(client: ApiClient, namespace: str, selector: str) -> list[Object]:
    """Pods matching ``selector``, terminating ones included."""
    listed = await client.list(
        PODS, namespace=namespace, options=ListOptions(label_selector=selector)
    )
    items: list[Object] = listed["items"]
    return items


def active(pods: list[Object]) -> list[Object]:
    """Pods that are neither terminating nor finished."""
    return [
        pod
        for pod in pods
        if not pod["metadata"].get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]


def condition(obj: Object, kind: str) -> dict[str, Any] | None:
    """The status condition of type ``kind``, or None."""
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item.get("type") == kind:
            return item  # type: ignore[no-any-return]
    return None


def is_ready(pod: Object) -> bool:
    ready = condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


def uids(pods: list[Object]) -> set[str]:
    return {pod["metadata"]["uid"] for pod in pods}


async def events_for(client: ApiClient, namespace: str, name: str) -> list[tuple[str, str]]:
    """(reason, message) of the core/v1 events about the object ``name``."""
    listed = await client.list(
        EVENTS,
        namespace=namespace,
        options=ListOptions(field_selector=f"involvedObject.name={name}"),
    )
    return [(event.get("reason", ""), event.get("message", "")) for event in listed["items"]]


class RolloutWatcher:
    """Watches a Deployment's pods and checks the rolling-update bounds after every event.

    From :meth:`start` (call it once the Deployment is complete) until the block ends, every
    pod event is applied to a local copy of the pod set, which is then checked: ready pods
    never drop below ``replicas - max_unavailable`` (a :attr:`violations` entry). Pods
    carrying ``exclude_label`` (pods kwok was told to fail) are left out. Events of one watch
    are the apiserver's ordered history, so every state the cluster passed through is
    checked, not a sample.

    Active pods (not terminating, not finished) above ``replicas + max_surge`` are only
    counted in :attr:`over_surge`: upstream bounds the sum of the ReplicaSets'
    ``spec.replicas``, not pods - a new ReplicaSet's pod may be created before the ReplicaSet
    controller has deleted an old ReplicaSet's excess pod, and kube-controller-manager's own
    controllers were seen doing so here (tests/dropin checks the spec-sum bound).
    :attr:`max_active` and :attr:`min_ready` are what was seen.
    """

    def __init__(
        self,
        client: ApiClient,
        namespace: str,
        selector: str,
        *,
        replicas: int,
        max_surge: int,
        max_unavailable: int,
        exclude_label: str | None = None,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.selector = selector
        self.max_active_allowed = replicas + max_surge
        self.min_ready_allowed = replicas - max_unavailable
        self.exclude_label = exclude_label
        self.violations: list[str] = []
        self.over_surge = 0
        self.max_active = 0
        self.min_ready = replicas
        self.events = 0
        self._pods: dict[str, Object] = {}
        self._task: asyncio.Task[None] | None = None
        self._started = asyncio.Event()

    async def __aenter__(self) -> RolloutWatcher:
        self._task = asyncio.create_task(self._run())
        await self._started.wait()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def _check(self) -> None:
        counted = [
            pod
            for pod in active(list(self._pods.values()))
            if not (self.exclude_label and self.exclude_label in pod["metadata"].get("labels", {}))
        ]
        ready = sum(map(is_ready, counted))
        self.max_active = max(self.max_active, len(counted))
        self.min_ready = min(self.min_ready, ready)
        if len(counted) > self.max_active_allowed:
            self.over_surge += 1
        if ready < self.min_ready_allowed:
            self.violations.append(f"{ready} ready pods < {self.min_ready_allowed}")

    async def _run(self) -> None:
        listed = await self.client.list(
            PODS, namespace=self.namespace, options=ListOptions(label_selector=self.selector)
        )
        for pod in listed["items"]:
            self._pods[pod["metadata"]["uid"]] = pod
        self._check()
        version = listed["metadata"]["resourceVersion"]
        self._started.set()
        while True:  # a watch may end (timeouts); resume from the last version seen
            async with self.client.watch(
                PODS,
                namespace=self.namespace,
                options=ListOptions(
                    label_selector=self.selector, resource_version=version, timeout_seconds=300
                ),
            ) as stream:
                async for event in stream:
                    obj = event.object
                    version = obj["metadata"].get("resourceVersion", version)
                    if event.type == "BOOKMARK":
                        continue
                    if event.type == "DELETED":
                        self._pods.pop(obj["metadata"]["uid"], None)
                    else:
                        self._pods[obj["metadata"]["uid"]] = obj
                    self.events += 1
                    self._check()


# -- Deployments ---------------------------------------------------------------------------


def deployment(
    name: str,
    replicas: int,
    *,
    image: str = "registry.example/app:1",
    strategy: dict[str, Any] | None = None,
    pod_labels: dict[str, str] | None = None,
    **spec: Any,
) -> Object:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "strategy": strategy
            or {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {**labels, **(pod_labels or {})}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
            **spec,
        },
    }


async def get(client: ApiClient, namespace: str, name: str) -> Object:
    return await client.get(DEPLOYMENTS, name, namespace=namespace)


async def replicasets(client: ApiClient, namespace: str, name: str) -> list[Object]:
    """The ReplicaSets owned by Deployment ``name``, oldest revision first."""
    owner = await get(client, namespace, name)
    listed = await client.list(REPLICASETS, namespace=namespace)
    owned = [
        rs
        for rs in listed["items"]
        if any(
            ref.get("controller") and ref["uid"] == owner["metadata"]["uid"]
            for ref in rs["metadata"].get("ownerReferences") or []
        )
    ]
    return sorted(owned, key=lambda rs: int(rs["metadata"]["annotations"].get(REVISION, "0")))


def complete(d: Object) -> bool:
    """upstream's DeploymentComplete plus an observed generation."""
    spec, status = d["spec"], d.get("status") or {}
    return (
        status.get("observedGeneration", 0) >= d["metadata"]["generation"]
        and status.get("updatedReplicas") == spec["replicas"]
        and status.get("replicas") == spec["replicas"]
        and status.get("availableReplicas") == spec["replicas"]
    )


async def wait_complete(client: ApiClient, namespace: str, name: str) -> Object:
    seen: dict[str, Any] = {}

    async def done() -> bool:
        d = await get(client, namespace, name)
        seen["status"] = d.get("status")
        return complete(d)

    await poll(done, within=WITHIN, message=lambda: f"{name} never completed: {seen}")
    return await get(client, namespace, name)


async def patch(client: ApiClient, namespace: str, name: str, body: Object) -> Object:
    return await client.patch(DEPLOYMENTS, name, body, namespace=namespace)


def set_image(image: str) -> Object:
    return {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}


@dataclass(frozen=True)
class KubectlRun:
    """What one kubectl command did."""

    code: int
    out: str
    err: str


async def kubectl(cluster: Cluster, namespace: str, *args: str) -> KubectlRun:
    """``kubectl <args> -n <namespace>`` with the cluster's admin kubeconfig, in a thread (so
    a controller in this process keeps running while it blocks): its exit code and output;
    never raises on failure."""
    command = [str(find_binary("kubectl")), "--kubeconfig", str(cluster.kubeconfig_path)]
    done = await asyncio.to_thread(
        subprocess.run,
        [*command, *args, "-n", namespace],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return KubectlRun(done.returncode, done.stdout, done.stderr)


async def kubectl_ok(cluster: Cluster, namespace: str, *args: str) -> str:
    """:func:`kubectl` that must succeed: its standard output."""
    run = await kubectl(cluster, namespace, *args)
    assert run.code == 0, f"kubectl {' '.join(args)}: {run.code} {run.out!r} {run.err!r}"
    return run.out
