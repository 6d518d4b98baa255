"""kubectl against kcontrol's DaemonSet controller, as a user would drive a cluster run by
KCM: ``rollout status`` (complete, waiting, ``--watch=false``), ``rollout history``
(``--revision``), ``rollout undo`` (``--to-revision``) and ``rollout restart``.

Every command is the kubectl the suite built, with the cluster's admin kubeconfig, run in a
thread so the controller in this process keeps running while it blocks. KCM's own
daemonset-controller is switched off and the DaemonSets run on kwok nodes of their own, as
in test_daemonset_cluster.py.
"""

from __future__ import annotations

from kcontrol.client import DAEMONSETS, NODES, ApiClient, Object
from kcontrol.envtest.cluster import BEHAVIOR_LABEL, BEHAVIOR_NEVER_READY, Cluster
from tests.controllers.cluster_helpers import (
    WITHIN,
    active,
    is_ready,
    kubectl,
    kubectl_ok,
    pods_of,
    uids,
)
from tests.controllers.daemonset.test_daemonset_cluster import (
    HASH,
    controller_and_nodes,
    daemonset,
    hashes,
    placed,
    revisions_of,
    wait_settled,
)
from tests.integration.helpers import poll

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"


async def rolled_out(cluster: Cluster, namespace: str, name: str) -> None:
    out = await kubectl_ok(
        cluster, namespace, "rollout", "status", f"daemonset/{name}", "--timeout=90s"
    )
    assert f'daemon set "{name}" successfully rolled out' in out, out


async def history(cluster: Cluster, namespace: str, name: str) -> list[int]:
    out = await kubectl_ok(cluster, namespace, "rollout", "history", f"daemonset/{name}")
    return [int(line.split()[0]) for line in out.splitlines()[2:] if line.strip()]


def image_of(obj: Object) -> str:
    image: str = obj["spec"]["template"]["spec"]["containers"][0]["image"]
    return image


async def pod_images(client: ApiClient, namespace: str, name: str) -> set[str]:
    return {
        p["spec"]["containers"][0]["image"]
        for p in active(await pods_of(client, namespace, f"app={name}"))
    }


async def test_rollout_status_history_and_undo(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with controller_and_nodes(cluster, client, ns) as nodes:
        names = {await nodes.add(str(i)) for i in range(2)}
        await client.create(DAEMONSETS, daemonset("agent", ns), namespace=ns)
        await rolled_out(cluster, ns, "agent")
        await wait_settled(client, ns, "agent", names)

        for image in ("registry.example/agent:2", "registry.example/agent:3"):
            await kubectl_ok(cluster, ns, "set", "image", "daemonset/agent", f"app={image}")
            await rolled_out(cluster, ns, "agent")
            assert await pod_images(client, ns, "agent") == {image}

        assert await history(cluster, ns, "agent") == [1, 2, 3]
        second = await kubectl_ok(
            cluster, ns, "rollout", "history", "daemonset/agent", "--revision=2"
        )
        assert "registry.example/agent:2" in second and "agent:3" not in second

        out = await kubectl_ok(cluster, ns, "rollout", "undo", "daemonset/agent")  # to revision 2
        assert "rolled back" in out, out
        await rolled_out(cluster, ns, "agent")
        ds = await wait_settled(client, ns, "agent", names)
        assert image_of(ds) == "registry.example/agent:2"
        assert await pod_images(client, ns, "agent") == {"registry.example/agent:2"}
        # revision 2 is reused and renumbered 4, as upstream
        assert await history(cluster, ns, "agent") == [1, 3, 4]

        await kubectl_ok(cluster, ns, "rollout", "undo", "daemonset/agent", "--to-revision=1")
        await rolled_out(cluster, ns, "agent")
        ds = await wait_settled(client, ns, "agent", names)
        assert image_of(ds) == "registry.example/agent:1"
        assert await pod_images(client, ns, "agent") == {"registry.example/agent:1"}
        assert await history(cluster, ns, "agent") == [3, 4, 5]
        newest = (await revisions_of(client, ns, "agent"))[-1]
        assert await hashes(client, ns, "agent") == {newest["metadata"]["labels"][HASH]}

        # undoing to the current template is skipped (kubectl compares the revision's bytes
        # with its own encoding of the template); to a revision that does not exist fails
        run = await kubectl(cluster, ns, "rollout", "undo", "daemonset/agent", "--to-revision=5")
        assert "skipped rollback" in run.out, run
        run = await kubectl(cluster, ns, "rollout", "undo", "daemonset/agent", "--to-revision=9")
        assert run.code != 0 and "unable to find specified revision 9" in run.err, run
        assert await history(cluster, ns, "agent") == [3, 4, 5]


async def test_rollout_status_waits_for_a_stuck_update_and_undo_recovers(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    """An update whose pods never become ready stops at maxUnavailable (1): ``rollout
    status`` reports the progress and times out; ``rollout undo`` rolls back on its own (the
    unavailable pod of the abandoned revision is replaced at once, as upstream)."""
    ns = cluster_namespace
    async with controller_and_nodes(cluster, client, ns) as nodes:
        names = {await nodes.add(str(i)) for i in range(2)}
        await client.create(DAEMONSETS, daemonset("stuck", ns), namespace=ns)
        await rolled_out(cluster, ns, "stuck")
        (original,) = await hashes(client, ns, "stuck")

        broken = {
            "spec": {
                "template": {
                    "metadata": {"labels": {BEHAVIOR_LABEL: BEHAVIOR_NEVER_READY}},
                    "spec": {"containers": [{"name": "app", "image": "registry.example/agent:2"}]},
                }
            }
        }
        await client.patch(DAEMONSETS, "stuck", broken, namespace=ns)

        seen: dict[str, object] = {}
        trouble: list[object] = []

        async def stuck() -> bool:
            ds = await client.get(DAEMONSETS, "stuck", namespace=ns)
            status = ds.get("status") or {}
            seen.update(
                generation=ds["metadata"]["generation"],
                status=status,
                pods={
                    node: [
                        (
                            p["metadata"]["name"],
                            p["metadata"]["labels"].get(HASH),
                            (p.get("status") or {}).get("phase"),
                            is_ready(p),
                            bool(p["metadata"].get("deletionTimestamp")),
                        )
                        for p in pods
                    ]
                    for node, pods in (await placed(client, ns, "stuck")).items()
                },
            )
            # A node that stops being schedulable (a not-ready taint) leaves the rolling
            # update's count, which may then take the other node's old pod too: kept for
            # the failure message, as it passes.
            for name in names:
                node = await client.get(NODES, name)
                ready = [
                    c["status"]
                    for c in (node.get("status") or {}).get("conditions") or ()
                    if c["type"] == "Ready"
                ]
                taints = (node.get("spec") or {}).get("taints")
                if taints or ready != ["True"]:
                    trouble.append((name, ready, taints))
            return (
                status.get("observedGeneration") == ds["metadata"]["generation"]
                and status.get("updatedNumberScheduled") == 1
                and status.get("numberAvailable") == 1
                and len(await hashes(client, ns, "stuck")) == 2
            )

        await poll(
            stuck,
            within=WITHIN,
            message=lambda: (
                f"the broken update never reached one node: {seen}; "
                f"nodes seen unready or tainted: {trouble}"
            ),
        )

        snapshot = await kubectl_ok(
            cluster, ns, "rollout", "status", "daemonset/stuck", "--watch=false"
        )
        waiting = 'Waiting for daemon set "stuck" rollout to finish: 1 out of 2 new pods'
        assert waiting in snapshot, snapshot
        run = await kubectl(cluster, ns, "rollout", "status", "daemonset/stuck", "--timeout=8s")
        assert run.code != 0, run
        assert waiting in run.out, run
        assert "timed out" in run.err, run
        # maxUnavailable 1: the other node keeps its ready pod of the first revision
        by_node = await placed(client, ns, "stuck")
        first = [
            n for n, pods in by_node.items() if pods[0]["metadata"]["labels"][HASH] == original
        ]
        assert len(by_node) == 2 and len(first) == 1, by_node
        assert is_ready(by_node[first[0]][0])

        await kubectl_ok(cluster, ns, "rollout", "undo", "daemonset/stuck")
        await rolled_out(cluster, ns, "stuck")
        await wait_settled(client, ns, "stuck", names)
        assert await hashes(client, ns, "stuck") == {original}
        assert await pod_images(client, ns, "stuck") == {"registry.example/agent:1"}


async def test_rollout_restart_replaces_every_pod(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with controller_and_nodes(cluster, client, ns) as nodes:
        names = {await nodes.add(str(i)) for i in range(3)}
        await client.create(DAEMONSETS, daemonset("agent", ns), namespace=ns)
        await rolled_out(cluster, ns, "agent")
        await wait_settled(client, ns, "agent", names)
        before = uids(active(await pods_of(client, ns, "app=agent")))

        out = await kubectl_ok(cluster, ns, "rollout", "restart", "daemonset/agent")
        assert "restarted" in out, out
        ds = await client.get(DAEMONSETS, "agent", namespace=ns)
        assert RESTARTED_AT in ds["spec"]["template"]["metadata"]["annotations"]
        await rolled_out(cluster, ns, "agent")
        await wait_settled(client, ns, "agent", names)

        pods = active(await pods_of(client, ns, "app=agent"))
        assert len(pods) == 3 and not (uids(pods) & before), "not every pod was replaced"
        (newest,) = (await revisions_of(client, ns, "agent"))[-1:]
        for pod in pods:
            assert RESTARTED_AT in pod["metadata"]["annotations"]
            assert pod["metadata"]["labels"][HASH] == newest["metadata"]["labels"][HASH]
        assert await history(cluster, ns, "agent") == [1, 2]
