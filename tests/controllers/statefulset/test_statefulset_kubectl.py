"""kubectl against kcontrol's StatefulSet controller, as a user would drive a cluster run by
KCM: ``rollout status`` (complete, waiting, ``--watch=false``), ``rollout history``
(``--revision``), ``rollout undo`` (``--to-revision``) and ``rollout restart``.

Every command is the kubectl the suite built, with the cluster's admin kubeconfig, run in a
thread so the controller in this process keeps running while it blocks. KCM's own
statefulset-controller is switched off for each test (as in test_statefulset_cluster.py).
"""

from __future__ import annotations

from kcontrol.client import CONTROLLERREVISIONS, PODS, STATEFULSETS, ApiClient, Object
from kcontrol.envtest.cluster import BEHAVIOR_LABEL, BEHAVIOR_NEVER_READY, Cluster
from tests.controllers.cluster_helpers import WITHIN, active, kubectl, kubectl_ok, pods_of, uids
from tests.controllers.statefulset.test_statefulset_cluster import (
    REVISION,
    controller,
    get_set,
    stateful_set,
    wait_members,
)
from tests.integration.helpers import poll

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"


async def rolled_out(cluster: Cluster, namespace: str, name: str) -> str:
    out = await kubectl_ok(
        cluster, namespace, "rollout", "status", f"statefulset/{name}", "--timeout=90s"
    )
    # the default RollingUpdate is defaulted to partition 0: kubectl's partitioned message
    assert "roll out complete" in out, out
    return out


async def history(cluster: Cluster, namespace: str, name: str) -> list[int]:
    out = await kubectl_ok(cluster, namespace, "rollout", "history", f"statefulset/{name}")
    return [int(line.split()[0]) for line in out.splitlines()[2:] if line.strip()]


def image_of(obj: Object) -> str:
    image: str = obj["spec"]["template"]["spec"]["containers"][0]["image"]
    return image


async def revision_numbers(client: ApiClient, namespace: str) -> dict[str, int]:
    listed = await client.list(CONTROLLERREVISIONS, namespace=namespace)
    return {r["metadata"]["name"]: r["revision"] for r in listed["items"]}


async def pod_images(client: ApiClient, namespace: str, name: str) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"]["containers"][0]["image"]
        for p in active(await pods_of(client, namespace, f"app={name}"))
    }


async def test_rollout_status_history_and_undo(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    members = ["web-0", "web-1", "web-2"]
    async with controller(cluster):
        await client.create(STATEFULSETS, stateful_set("web", 3), namespace=ns)
        out = await rolled_out(cluster, ns, "web")
        assert "3 new pods have been updated" in out

        for image in ("registry.example/app:2", "registry.example/app:3"):
            await kubectl_ok(cluster, ns, "set", "image", "statefulset/web", f"app={image}")
            await rolled_out(cluster, ns, "web")
            assert set((await pod_images(client, ns, "web")).values()) == {image}

        assert await history(cluster, ns, "web") == [1, 2, 3]
        second = await kubectl_ok(
            cluster, ns, "rollout", "history", "statefulset/web", "--revision=2"
        )
        assert "registry.example/app:2" in second and "app:3" not in second

        out = await kubectl_ok(cluster, ns, "rollout", "undo", "statefulset/web")  # to revision 2
        assert "rolled back" in out, out
        await rolled_out(cluster, ns, "web")
        set_ = await wait_members(client, ns, "web", members)
        assert image_of(set_) == "registry.example/app:2"
        assert set((await pod_images(client, ns, "web")).values()) == {"registry.example/app:2"}
        # revision 2 is reused and renumbered 4, as upstream
        assert await history(cluster, ns, "web") == [1, 3, 4]
        status = set_["status"]
        assert status["currentRevision"] == status["updateRevision"]
        assert (await revision_numbers(client, ns))[status["updateRevision"]] == 4

        await kubectl_ok(cluster, ns, "rollout", "undo", "statefulset/web", "--to-revision=1")
        await rolled_out(cluster, ns, "web")
        set_ = await wait_members(client, ns, "web", members)
        assert image_of(set_) == "registry.example/app:1"
        assert set((await pod_images(client, ns, "web")).values()) == {"registry.example/app:1"}
        assert await history(cluster, ns, "web") == [3, 4, 5]
        status = set_["status"]
        assert status["currentRevision"] == status["updateRevision"]
        assert status["currentReplicas"] == status["updatedReplicas"] == 3
        revisions = {
            p["metadata"]["labels"][REVISION] for p in active(await pods_of(client, ns, "app=web"))
        }
        assert revisions == {status["updateRevision"]}

        # undoing to the current template is skipped (kubectl compares the revision's bytes
        # with its own encoding of the template); to a revision that does not exist fails
        run = await kubectl(cluster, ns, "rollout", "undo", "statefulset/web", "--to-revision=5")
        assert "skipped rollback" in run.out, run
        run = await kubectl(cluster, ns, "rollout", "undo", "statefulset/web", "--to-revision=9")
        assert run.code != 0 and "unable to find specified revision 9" in run.err, run
        assert await history(cluster, ns, "web") == [3, 4, 5]


async def test_rollout_status_waits_for_a_stuck_update(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    """An update whose pod never becomes ready: ``rollout status`` reports what it waits for
    and times out; undone (and, as upstream's documentation asks of a broken OrderedReady
    rollout, the broken pod deleted), the set rolls back and the status returns 0."""
    ns = cluster_namespace
    async with controller(cluster):
        await client.create(STATEFULSETS, stateful_set("stuck", 2), namespace=ns)
        await rolled_out(cluster, ns, "stuck")
        original = (await get_set(client, ns, "stuck"))["status"]["updateRevision"]

        broken = {
            "spec": {
                "template": {
                    "metadata": {"labels": {BEHAVIOR_LABEL: BEHAVIOR_NEVER_READY}},
                    "spec": {"containers": [{"name": "app", "image": "registry.example/app:2"}]},
                }
            }
        }
        await client.patch(STATEFULSETS, "stuck", broken, namespace=ns)

        async def replaced() -> bool:
            pods = {p["metadata"]["name"]: p for p in await pods_of(client, ns, "app=stuck")}
            set_ = await get_set(client, ns, "stuck")
            status = set_.get("status") or {}
            return (
                "stuck-1" in pods
                and pods["stuck-1"]["metadata"]["labels"].get(BEHAVIOR_LABEL)
                == BEHAVIOR_NEVER_READY
                and status.get("observedGeneration") == set_["metadata"]["generation"]
                and status.get("readyReplicas") == 1
            )

        await poll(replaced, within=WITHIN, message="stuck-1 was not replaced by the update")

        snapshot = await kubectl_ok(
            cluster, ns, "rollout", "status", "statefulset/stuck", "--watch=false"
        )
        assert "Waiting for 1 pods to be ready" in snapshot, snapshot
        run = await kubectl(cluster, ns, "rollout", "status", "statefulset/stuck", "--timeout=8s")
        assert run.code != 0, run
        assert "Waiting for 1 pods to be ready" in run.out, run
        assert "timed out" in run.err, run
        # stuck-0 is left alone while stuck-1 is not ready
        assert (await client.get(PODS, "stuck-0", namespace=ns))["metadata"]["labels"][
            REVISION
        ] == original

        await kubectl_ok(cluster, ns, "rollout", "undo", "statefulset/stuck")

        async def undo_observed() -> bool:
            set_ = await get_set(client, ns, "stuck")
            status = set_.get("status") or {}
            return bool(
                status.get("observedGeneration") == set_["metadata"]["generation"]
                and status.get("updateRevision") == original
            )

        # deleted once the controller has seen the undo, so it is made again from it
        await poll(undo_observed, within=WITHIN, message="the undo was not observed")
        await client.delete(PODS, "stuck-1", namespace=ns)
        await rolled_out(cluster, ns, "stuck")
        set_ = await wait_members(client, ns, "stuck", ["stuck-0", "stuck-1"])
        assert set_["status"]["updateRevision"] == original
        assert set((await pod_images(client, ns, "stuck")).values()) == {"registry.example/app:1"}


async def test_rollout_restart_replaces_every_pod(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    members = ["rs-0", "rs-1", "rs-2"]
    async with controller(cluster):
        await client.create(STATEFULSETS, stateful_set("rs", 3), namespace=ns)
        await rolled_out(cluster, ns, "rs")
        before = uids(active(await pods_of(client, ns, "app=rs")))

        out = await kubectl_ok(cluster, ns, "rollout", "restart", "statefulset/rs")
        assert "restarted" in out, out
        set_ = await get_set(client, ns, "rs")
        assert RESTARTED_AT in set_["spec"]["template"]["metadata"]["annotations"]
        await rolled_out(cluster, ns, "rs")
        set_ = await wait_members(client, ns, "rs", members)

        async def replaced() -> bool:
            pods = active(await pods_of(client, ns, "app=rs"))
            return len(pods) == 3 and not (uids(pods) & before)

        await poll(replaced, within=WITHIN, message="rollout restart did not replace every pod")
        for pod in active(await pods_of(client, ns, "app=rs")):
            assert RESTARTED_AT in pod["metadata"]["annotations"]
            assert pod["metadata"]["labels"][REVISION] == set_["status"]["updateRevision"]
        assert set_["status"]["currentRevision"] == set_["status"]["updateRevision"]
        assert await history(cluster, ns, "rs") == [1, 2]
