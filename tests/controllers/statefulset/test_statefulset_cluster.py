"""kcontrol's StatefulSet controller on the test cluster: pods that kube-scheduler binds and
kwok makes ready a second after they start, kube-controller-manager's garbage collector, and
KCM's own statefulset-controller switched off for each test.

Each test runs the controller in this process through the manager (as kcontrol-manager would,
without leader election) and waits on outcomes with deadline-bounded polls; the order in
which pods came and went is read from a watch (the apiserver's ordered history), not sampled.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from kcontrol.client import (
    CONTROLLERREVISIONS,
    PERSISTENTVOLUMECLAIMS,
    PODS,
    STATEFULSETS,
    ApiClient,
    ListOptions,
    Object,
)
from kcontrol.envtest.cluster import (
    BEHAVIOR_FAIL,
    BEHAVIOR_LABEL,
    BEHAVIOR_NEVER_READY,
    Cluster,
)
from kcontrol_controllers.statefulset import NAME, SPEC
from tests.controllers.cluster_helpers import (
    WITHIN,
    active,
    is_ready,
    pods_of,
    running_manager,
    without_kcm_controllers,
)
from tests.integration.helpers import poll

REVISION = "controller-revision-hash"


def stateful_set(
    name: str,
    replicas: int,
    *,
    policy: str = "OrderedReady",
    claims: bool = False,
    **spec: Any,
) -> Object:
    labels = {"app": name}
    body: Object = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": policy,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "app", "image": "registry.example/app:1"}],
                },
            },
            **spec,
        },
    }
    if claims:
        body["spec"]["volumeClaimTemplates"] = [
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ]
    return body


@contextlib.asynccontextmanager
async def controller(cluster: Cluster) -> AsyncIterator[None]:
    """kcontrol's controller running, kube-controller-manager's switched off."""
    async with without_kcm_controllers(cluster, NAME), running_manager(cluster, SPEC):
        yield


class PodLog:
    """Every pod event of a namespace from the block's start, in the apiserver's order, as
    (kind, pod name): ``created``, ``ready`` (first seen ready), ``terminating`` (first seen
    with a deletion timestamp) and ``deleted``."""

    def __init__(self, client: ApiClient, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.events: list[tuple[str, str]] = []
        self._seen: set[tuple[str, str]] = set()
        self._task: asyncio.Task[None] | None = None
        self._started = asyncio.Event()

    async def __aenter__(self) -> PodLog:
        self._task = asyncio.create_task(self._run())
        await self._started.wait()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def _note(self, kind: str, pod: Object) -> None:
        key = (kind, f"{pod['metadata']['name']}/{pod['metadata']['uid']}")
        if key not in self._seen:
            self._seen.add(key)
            self.events.append((kind, pod["metadata"]["name"]))

    def of(self, kind: str) -> list[str]:
        return [name for event, name in self.events if event == kind]

    def index(self, kind: str, name: str) -> int:
        return self.events.index((kind, name))

    async def _run(self) -> None:
        listed = await self.client.list(PODS, namespace=self.namespace)
        version = listed["metadata"]["resourceVersion"]
        self._started.set()
        while True:
            async with self.client.watch(
                PODS,
                namespace=self.namespace,
                options=ListOptions(resource_version=version, timeout_seconds=300),
            ) as stream:
                async for event in stream:
                    pod = event.object
                    version = pod["metadata"].get("resourceVersion", version)
                    if event.type == "BOOKMARK":
                        continue
                    if event.type == "ADDED":
                        self._note("created", pod)
                    if event.type == "DELETED":
                        self._note("deleted", pod)
                        continue
                    if is_ready(pod):
                        self._note("ready", pod)
                    if pod["metadata"].get("deletionTimestamp"):
                        self._note("terminating", pod)


async def get_set(client: ApiClient, namespace: str, name: str) -> Object:
    return await client.get(STATEFULSETS, name, namespace=namespace)


async def patch_set(client: ApiClient, namespace: str, name: str, spec: Object) -> None:
    await client.patch(STATEFULSETS, name, {"spec": spec}, namespace=namespace)


async def wait_members(
    client: ApiClient,
    namespace: str,
    name: str,
    members: list[str],
    *,
    ready: bool = True,
    within: float = WITHIN,
) -> Object:
    """Wait until the set's active pods are exactly ``members`` (all ready, if ``ready``) and
    its status says so for its generation; returns the set."""
    seen: dict[str, Any] = {}

    async def done() -> bool:
        set_ = await get_set(client, namespace, name)
        pods = active(await pods_of(client, namespace, f"app={name}"))
        status = set_.get("status") or {}
        names = sorted(p["metadata"]["name"] for p in pods)
        seen.update(pods=names, status=status)
        return (
            names == sorted(members)
            and (not ready or all(map(is_ready, pods)))
            and status.get("observedGeneration") == set_["metadata"]["generation"]
            and status.get("replicas") == len(members)
            and (not ready or status.get("readyReplicas", 0) == len(members))
        )

    await poll(done, within=within, message=lambda: f"{name} is not {members}: {seen}")
    return await get_set(client, namespace, name)


async def revisions_of_pods(client: ApiClient, namespace: str, name: str) -> dict[str, str]:
    pods = active(await pods_of(client, namespace, f"app={name}"))
    return {p["metadata"]["name"]: p["metadata"]["labels"][REVISION] for p in pods}


# -- the tests -------------------------------------------------------------------------------------


async def test_ordered_ready_scales_up_and_down_one_pod_at_a_time(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with controller(cluster), PodLog(client, ns) as log:
        await client.create(STATEFULSETS, stateful_set("web", 3), namespace=ns)
        set_ = await wait_members(client, ns, "web", ["web-0", "web-1", "web-2"])

        assert log.of("created") == ["web-0", "web-1", "web-2"]
        # each pod was created only once its predecessor was ready
        assert log.index("ready", "web-0") < log.index("created", "web-1")
        assert log.index("ready", "web-1") < log.index("created", "web-2")
        status = set_["status"]
        assert status["currentRevision"] == status["updateRevision"]
        assert status["currentReplicas"] == status["updatedReplicas"] == 3
        assert status["availableReplicas"] == 3
        pod = await client.get(PODS, "web-1", namespace=ns)
        assert pod["spec"]["hostname"] == "web-1" and pod["spec"]["subdomain"] == "web"
        assert pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"
        (ref,) = pod["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["uid"]) == ("StatefulSet", set_["metadata"]["uid"])

        await patch_set(client, ns, "web", {"replicas": 1})
        await wait_members(client, ns, "web", ["web-0"])
        await poll(lambda: _gone(log, "web-1"), within=WITHIN, message="web-1 not deleted")

        # highest ordinal first, the next only once the previous was gone
        assert log.of("terminating") == ["web-2", "web-1"]
        assert log.index("deleted", "web-2") < log.index("terminating", "web-1")


async def _gone(log: PodLog, name: str) -> bool:
    return ("deleted", name) in log.events


async def test_parallel_creates_every_pod_without_waiting(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with controller(cluster), PodLog(client, ns) as log:
        await client.create(STATEFULSETS, stateful_set("par", 4, policy="Parallel"), namespace=ns)
        await wait_members(client, ns, "par", [f"par-{i}" for i in range(4)])

        assert sorted(log.of("created")) == [f"par-{i}" for i in range(4)]
        first_ready = min(log.index("ready", f"par-{i}") for i in range(4))
        last_created = max(log.index("created", f"par-{i}") for i in range(4))
        assert last_created < first_ready  # all created before kwok made any ready

        await patch_set(client, ns, "par", {"replicas": 1})
        await wait_members(client, ns, "par", ["par-0"])


async def test_partitioned_rolling_update_then_rollback(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    body = stateful_set(
        "db", 3, updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}
    )
    async with controller(cluster), PodLog(client, ns) as log:
        await client.create(STATEFULSETS, body, namespace=ns)
        set_ = await wait_members(client, ns, "db", ["db-0", "db-1", "db-2"])
        original = set_["status"]["currentRevision"]

        image = {
            "template": {
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:2"}]}
            }
        }
        await patch_set(client, ns, "db", image)

        async def partitioned() -> bool:
            set_ = await get_set(client, ns, "db")
            status = set_.get("status") or {}
            update = status.get("updateRevision")
            revisions = await revisions_of_pods(client, ns, "db")
            return (
                update != original
                and revisions == {"db-0": original, "db-1": update, "db-2": update}
                and status.get("observedGeneration") == set_["metadata"]["generation"]
                and status.get("readyReplicas") == 3
                and status.get("updatedReplicas") == 2
                and status.get("currentReplicas") == 1
            )

        await poll(partitioned, within=WITHIN, message="partitioned update not reached")
        updated = (await get_set(client, ns, "db"))["status"]["updateRevision"]
        assert (await get_set(client, ns, "db"))["status"]["currentRevision"] == original
        # db-2 was replaced before db-1, and db-0 never
        assert log.of("terminating") == ["db-2", "db-1"]

        # rollback: the old template again brings back the old revision, renumbered
        back = {
            "template": {
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}
            }
        }
        await patch_set(client, ns, "db", back)

        async def rolled_back() -> bool:
            set_ = await get_set(client, ns, "db")
            status = set_.get("status") or {}
            return (
                status.get("updateRevision") == original
                and set((await revisions_of_pods(client, ns, "db")).values()) == {original}
                and status.get("readyReplicas") == 3
                and status.get("currentRevision") == original
                and status.get("currentReplicas") == 3
            )

        await poll(rolled_back, within=WITHIN, message="rollback not complete")
        revisions = {
            r["metadata"]["name"]: r["revision"]
            for r in (await client.list(CONTROLLERREVISIONS, namespace=ns))["items"]
        }
        assert revisions == {updated: 2, original: 3}


async def test_claims_follow_the_retention_policy_on_scale_down(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    """Claims stay Pending here (no provisioner), so the pods are never scheduled: Parallel
    sets, which do not wait for their pods."""
    ns = cluster_namespace
    deleting = stateful_set(
        "del",
        3,
        policy="Parallel",
        claims=True,
        persistentVolumeClaimRetentionPolicy={"whenScaled": "Delete", "whenDeleted": "Retain"},
    )
    retaining = stateful_set("ret", 3, policy="Parallel", claims=True)
    async with controller(cluster):
        for body in (deleting, retaining):
            await client.create(STATEFULSETS, body, namespace=ns)
        for name in ("del", "ret"):
            await wait_members(client, ns, name, [f"{name}-{i}" for i in range(3)], ready=False)

        async def claims() -> dict[str, Object]:
            items = (await client.list(PERSISTENTVOLUMECLAIMS, namespace=ns))["items"]
            return {
                c["metadata"]["name"]: c
                for c in items
                if not c["metadata"].get("deletionTimestamp")
            }

        async def all_claims() -> bool:
            return len(await claims()) == 6

        await poll(all_claims, within=WITHIN, message="claims not created")
        pod = await client.get(PODS, "del-1", namespace=ns)
        assert pod["spec"]["volumes"][0] == {
            "name": "data",
            "persistentVolumeClaim": {"claimName": "data-del-1"},
        }
        assert (await claims())["data-del-1"]["metadata"]["labels"] == {"app": "del"}

        for name in ("del", "ret"):
            await patch_set(client, ns, name, {"replicas": 1})
        for name in ("del", "ret"):
            await wait_members(client, ns, name, [f"{name}-0"], ready=False)

        async def collected() -> bool:
            return sorted(await claims()) == [
                "data-del-0",
                "data-ret-0",
                "data-ret-1",
                "data-ret-2",
            ]

        # the condemned claims were handed to their pods, and went with them
        await poll(collected, within=WITHIN, message="scaled-down claims not collected")
        remaining = await claims()
        assert not remaining["data-del-0"]["metadata"].get("ownerReferences")
        assert not remaining["data-ret-2"]["metadata"].get("ownerReferences")


async def test_start_ordinal_moves_the_range(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with controller(cluster), PodLog(client, ns) as log:
        await client.create(
            STATEFULSETS, stateful_set("ord", 2, ordinals={"start": 5}), namespace=ns
        )
        await wait_members(client, ns, "ord", ["ord-5", "ord-6"])
        assert log.of("created") == ["ord-5", "ord-6"]

        await patch_set(client, ns, "ord", {"ordinals": {"start": 3}})
        await wait_members(client, ns, "ord", ["ord-3", "ord-4"])

        # the new range made first, in order; then the old pods, highest first
        assert log.of("created")[2:] == ["ord-3", "ord-4"]
        assert log.of("terminating") == ["ord-6", "ord-5"]
        assert log.index("ready", "ord-4") < log.index("terminating", "ord-6")


async def test_ordered_ready_waits_for_a_pod_that_never_gets_ready(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    body = stateful_set("slow", 3)
    body["spec"]["template"]["metadata"]["labels"][BEHAVIOR_LABEL] = BEHAVIOR_NEVER_READY
    async with controller(cluster):
        await client.create(STATEFULSETS, body, namespace=ns)

        async def running() -> bool:
            pods = await pods_of(client, ns, "app=slow")
            return [p["status"].get("phase") for p in pods] == ["Running"]

        await poll(running, within=WITHIN, message="slow-0 not running")
        await asyncio.sleep(3)  # several syncs' worth: kwok reports the pod every change

        pods = await pods_of(client, ns, "app=slow")
        assert [p["metadata"]["name"] for p in pods] == ["slow-0"]
        status = (await get_set(client, ns, "slow"))["status"]
        assert (status["replicas"], status.get("readyReplicas", 0)) == (1, 0)


async def test_failed_pod_is_deleted_and_made_again(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with controller(cluster), PodLog(client, ns) as log:
        await client.create(STATEFULSETS, stateful_set("crash", 2), namespace=ns)
        await wait_members(client, ns, "crash", ["crash-0", "crash-1"])
        first = await client.get(PODS, "crash-1", namespace=ns)

        # kwok fails the pod a second after it carries the behaviour label
        labels = {**first["metadata"]["labels"], BEHAVIOR_LABEL: BEHAVIOR_FAIL}
        await client.patch(PODS, "crash-1", {"metadata": {"labels": labels}}, namespace=ns)

        async def replaced() -> bool:
            pods = {p["metadata"]["name"]: p for p in await pods_of(client, ns, "app=crash")}
            pod = pods.get("crash-1")
            return (
                pod is not None
                and pod["metadata"]["uid"] != first["metadata"]["uid"]
                and is_ready(pod)
            )

        await poll(replaced, within=WITHIN, message="crash-1 not replaced")
        await wait_members(client, ns, "crash", ["crash-0", "crash-1"])
        assert log.of("created") == ["crash-0", "crash-1", "crash-1"]
        assert "crash-0" not in log.of("terminating")
