"""kcontrol's DaemonSet controller on the test cluster: kwok nodes this module creates (with
labels, taints, cordoned), pods kube-scheduler binds and kwok makes ready, nodes joining and
leaving, a rolling update with surge, a rollback as ``kubectl rollout undo`` does it, and a
takeover from KCM's own controller.

kube-controller-manager's own daemonset-controller is switched off for each test, and the
controller runs in this process through the manager. The module's nodes carry a label unique
to the test, which its DaemonSets select, so the cluster's other nodes are left alone; they
are deleted at the end of the test.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from kcontrol.client import (
    CONTROLLERREVISIONS,
    DAEMONSETS,
    NODES,
    ApiClient,
    ListOptions,
    Object,
    PatchType,
)
from kcontrol.envtest.cluster import Cluster
from kcontrol.envtest.cluster._kwok import node_manifest
from kcontrol.errors import NotFound
from kcontrol_controllers.daemonset import NAME, SPEC
from tests.controllers.cluster_helpers import (
    WITHIN,
    active,
    condition,
    events_for,
    is_ready,
    pods_of,
    running_manager,
    uids,
    without_kcm_controllers,
)
from tests.integration.helpers import poll

HASH = "controller-revision-hash"


def daemonset(
    name: str, group: str, *, strategy: dict[str, Any] | None = None, **spec: Any
) -> Object:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": strategy or {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {"dstest": group},
                    "containers": [{"name": "app", "image": "registry.example/agent:1"}],
                    **spec,
                },
            },
        },
    }


NOT_READY_TAINT = "node.kubernetes.io/not-ready"


class Nodes:
    """The kwok nodes of one test, labelled ``dstest=<group>``; deleted at the end."""

    def __init__(self, client: ApiClient, group: str) -> None:
        self.client = client
        self.group = group
        self.names: list[str] = []

    async def add(
        self,
        suffix: str,
        *,
        taints: list[dict[str, str]] | None = None,
        unschedulable: bool = False,
        group: str | None = None,
    ) -> str:
        name = f"{self.group}-{suffix}"
        node = node_manifest(name, labels={"dstest": group or self.group})
        if taints:
            node["spec"]["taints"] = taints
        if unschedulable:
            node["spec"]["unschedulable"] = True
        await self.client.create(NODES, node)
        self.names.append(name)

        async def ready() -> bool:
            got = await self.client.get(NODES, name)
            ready = condition(got, "Ready")
            not_ready_taint = any(
                t.get("key") == NOT_READY_TAINT for t in got["spec"].get("taints") or ()
            )
            return ready is not None and ready.get("status") == "True" and not not_ready_taint

        # Ready, and rid of the not-ready taint the API server puts on every new node (its
        # TaintNodesByCondition admission) until KCM's node lifecycle controller sees it Ready:
        # while the taint is there the node should not run new daemon pods, so it leaves a
        # rolling update's count - a test must not start before a real node would be usable.
        await poll(ready, within=WITHIN, message=f"node {name} never became Ready and untainted")
        return name

    async def remove(self, name: str) -> None:
        with contextlib.suppress(NotFound):
            await self.client.delete(NODES, name)
        if name in self.names:
            self.names.remove(name)


@contextlib.asynccontextmanager
async def controller_and_nodes(
    cluster: Cluster, client: ApiClient, namespace: str
) -> AsyncIterator[Nodes]:
    """kcontrol's controller instead of KCM's, and the test's nodes; before KCM's comes back,
    the test's DaemonSets and nodes are deleted, so it never acts on them."""
    nodes = Nodes(client, namespace)
    async with without_kcm_controllers(cluster, NAME), running_manager(cluster, SPEC):
        try:
            yield nodes
        finally:
            listed = await client.list(DAEMONSETS, namespace=namespace)
            for ds in listed["items"]:
                with contextlib.suppress(NotFound):
                    await client.delete(DAEMONSETS, ds["metadata"]["name"], namespace=namespace)
            for name in list(nodes.names):
                await nodes.remove(name)


async def placed(client: ApiClient, ns: str, name: str) -> dict[str, list[Object]]:
    """The DaemonSet's active pods by the node they are bound to ("" for unbound)."""
    by_node: dict[str, list[Object]] = {}
    for pod in active(await pods_of(client, ns, f"app={name}")):
        by_node.setdefault(pod["spec"].get("nodeName", ""), []).append(pod)
    return by_node


async def wait_settled(
    client: ApiClient, ns: str, name: str, nodes: set[str], *, within: float = WITHIN
) -> Object:
    """Wait until exactly ``nodes`` run one ready pod of the DaemonSet each, all of its
    current revision, and its status says so for its current generation; returns it."""
    seen: dict[str, Any] = {}

    async def done() -> bool:
        ds = await client.get(DAEMONSETS, name, namespace=ns)
        by_node = await placed(client, ns, name)
        status = ds.get("status") or {}
        seen.update(status=status, nodes={n: len(p) for n, p in by_node.items()})
        count = len(nodes)
        return (
            set(by_node) == nodes
            and all(len(p) == 1 and is_ready(p[0]) for p in by_node.values())
            and status.get("observedGeneration") == ds["metadata"]["generation"]
            and status.get("desiredNumberScheduled") == count
            and status.get("currentNumberScheduled") == count
            and status.get("updatedNumberScheduled") == count
            and status.get("numberReady") == count
            and status.get("numberAvailable") == count
            and (status.get("numberUnavailable") or 0) == 0
            and (status.get("numberMisscheduled") or 0) == 0
        )

    await poll(done, within=within, message=lambda: f"{name} not settled on {nodes}: {seen}")
    return await client.get(DAEMONSETS, name, namespace=ns)


async def revisions_of(client: ApiClient, ns: str, name: str) -> list[Object]:
    listed = await client.list(
        CONTROLLERREVISIONS, namespace=ns, options=ListOptions(label_selector=f"app={name}")
    )
    items: list[Object] = listed["items"]
    return sorted(items, key=lambda r: r["revision"])


async def set_image(client: ApiClient, ns: str, name: str, image: str) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}
    await client.patch(DAEMONSETS, name, patch, namespace=ns, patch_type=PatchType.STRATEGIC)


async def hashes(client: ApiClient, ns: str, name: str) -> set[str]:
    return {
        pod["metadata"]["labels"].get(HASH, "")
        for pods in (await placed(client, ns, name)).values()
        for pod in pods
    }


async def test_placement_on_labelled_tainted_and_cordoned_nodes(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    taint = {"key": "dstest/dedicated", "value": "infra", "effect": "NoSchedule"}
    async with controller_and_nodes(cluster, client, ns) as nodes:
        plain = await nodes.add("plain")
        cordoned = await nodes.add("cordoned", unschedulable=True)
        tainted = await nodes.add("tainted", taints=[taint])
        await nodes.add("elsewhere", group=f"{ns}-other")

        await client.create(DAEMONSETS, daemonset("agent", ns), namespace=ns)
        ds = await wait_settled(client, ns, "agent", {plain, cordoned})
        for pods in (await placed(client, ns, "agent")).values():
            (pod,) = pods
            assert pod["metadata"]["ownerReferences"][0]["uid"] == ds["metadata"]["uid"]
            creator = pod["metadata"]["managedFields"][0]["manager"]
            assert creator != "kube-controller-manager", "created by KCM's own controller"
            terms = pod["spec"]["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"
            ]["nodeSelectorTerms"]
            assert terms == [
                {
                    "matchFields": [
                        {
                            "key": "metadata.name",
                            "operator": "In",
                            "values": [pod["spec"]["nodeName"]],
                        }
                    ]
                }
            ]

        # A DaemonSet tolerating the taint runs there too.
        toleration = {"key": "dstest/dedicated", "operator": "Exists", "effect": "NoSchedule"}
        await client.create(
            DAEMONSETS, daemonset("tolerant", ns, tolerations=[toleration]), namespace=ns
        )
        await wait_settled(client, ns, "tolerant", {plain, cordoned, tainted})

        reasons = [reason for reason, _ in await events_for(client, ns, "agent")]
        assert reasons.count("SuccessfulCreate") == 2


async def test_nodes_joining_and_leaving(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with controller_and_nodes(cluster, client, ns) as nodes:
        first = await nodes.add("a")
        await client.create(DAEMONSETS, daemonset("agent", ns), namespace=ns)
        await wait_settled(client, ns, "agent", {first})

        second = await nodes.add("b")
        await wait_settled(client, ns, "agent", {first, second})

        # A node that stops matching the selector loses its pod.
        await client.patch(NODES, second, {"metadata": {"labels": {"dstest": "none"}}})
        await wait_settled(client, ns, "agent", {first})

        # A node that leaves the cluster drops out of the status at once.
        third = await nodes.add("c")
        await wait_settled(client, ns, "agent", {first, third})
        await nodes.remove(third)

        async def counted_out() -> bool:
            ds = await client.get(DAEMONSETS, "agent", namespace=ns)
            status = ds.get("status") or {}
            return status.get("desiredNumberScheduled") == 1 and status.get("numberReady") == 1

        await poll(counted_out, within=WITHIN, message="the deleted node is still counted")


async def test_rolling_update_with_surge_keeps_every_node_served(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    surge = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    async with controller_and_nodes(cluster, client, ns) as nodes:
        names = {await nodes.add(str(i)) for i in range(3)}
        await client.create(DAEMONSETS, daemonset("agent", ns, strategy=surge), namespace=ns)
        await wait_settled(client, ns, "agent", names)
        (old,) = await hashes(client, ns, "agent")

        await set_image(client, ns, "agent", "registry.example/agent:2")
        most = 0
        lacking: list[str] = []

        async def rolled() -> bool:
            nonlocal most
            by_node = await placed(client, ns, "agent")
            most = max(most, sum(len(p) for p in by_node.values()))
            lacking.extend(n for n in names if not any(map(is_ready, by_node.get(n, []))))
            ds = await client.get(DAEMONSETS, "agent", namespace=ns)
            status = ds.get("status") or {}
            return (
                await hashes(client, ns, "agent") != {old}
                and len(await hashes(client, ns, "agent")) == 1
                and status.get("updatedNumberScheduled") == 3
                and status.get("numberAvailable") == 3
                and status.get("observedGeneration") == ds["metadata"]["generation"]
            )

        await poll(rolled, within=WITHIN, message="the surge rollout did not finish")
        await wait_settled(client, ns, "agent", names)
        assert most == 4, f"never more than {most} pods: no surge, or more than one"
        assert not lacking, f"nodes without a ready pod during the rollout: {set(lacking)}"


async def test_rollback_reuses_the_first_revision(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with controller_and_nodes(cluster, client, ns) as nodes:
        names = {await nodes.add(str(i)) for i in range(2)}
        await client.create(DAEMONSETS, daemonset("agent", ns), namespace=ns)
        await wait_settled(client, ns, "agent", names)
        (first,) = await hashes(client, ns, "agent")

        await set_image(client, ns, "agent", "registry.example/agent:2")

        async def rolled() -> bool:
            return (await hashes(client, ns, "agent")) - {first} != set()

        await poll(rolled, within=WITHIN, message="never rolled to the second template")
        await wait_settled(client, ns, "agent", names)
        (second,) = await hashes(client, ns, "agent")
        assert second != first
        revisions = await revisions_of(client, ns, "agent")
        assert [r["revision"] for r in revisions] == [1, 2]

        # kubectl rollout undo: apply the previous revision's data (a patch replacing the
        # template) to the DaemonSet.
        await client.patch(
            DAEMONSETS,
            "agent",
            revisions[0]["data"],
            namespace=ns,
            patch_type=PatchType.STRATEGIC,
        )

        async def rolled_back() -> bool:
            return await hashes(client, ns, "agent") == {first}

        await poll(rolled_back, within=WITHIN, message="never rolled back")
        await wait_settled(client, ns, "agent", names)
        revisions = await revisions_of(client, ns, "agent")
        by_hash = {r["metadata"]["labels"][HASH]: r["revision"] for r in revisions}
        assert by_hash == {second: 2, first: 3}, "the first revision is reused and renumbered"


async def test_takeover_from_kcm_replaces_no_pod(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    """A DaemonSet KCM's own controller placed is taken over as it is: kcontrol recognises
    KCM's ControllerRevision as the current one, so no pod is replaced and no revision
    added, and a node joining afterwards gets a pod of KCM's revision."""
    ns = cluster_namespace
    nodes = Nodes(client, ns)
    try:
        names = {await nodes.add(str(i)) for i in range(2)}
        await client.create(DAEMONSETS, daemonset("agent", ns), namespace=ns)
        await wait_settled(client, ns, "agent", names)  # by KCM's daemonset-controller
        before = uids(active(await pods_of(client, ns, "app=agent")))
        (kcm_hash,) = await hashes(client, ns, "agent")
        revisions = [r["metadata"]["name"] for r in await revisions_of(client, ns, "agent")]

        async with without_kcm_controllers(cluster, NAME), running_manager(cluster, SPEC):
            extra = await nodes.add("extra")
            await wait_settled(client, ns, "agent", names | {extra})
            after = uids(active(await pods_of(client, ns, "app=agent")))
            assert before < after and len(after - before) == 1, "a pod was replaced"
            assert await hashes(client, ns, "agent") == {kcm_hash}
            assert [
                r["metadata"]["name"] for r in await revisions_of(client, ns, "agent")
            ] == revisions
            with contextlib.suppress(NotFound):
                await client.delete(DAEMONSETS, "agent", namespace=ns)
            for name in list(nodes.names):
                await nodes.remove(name)
    finally:
        for name in list(nodes.names):
            await nodes.remove(name)
