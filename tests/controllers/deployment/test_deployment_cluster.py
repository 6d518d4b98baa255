"""kcontrol's Deployment and ReplicaSet controllers together on the test cluster: upstream's
deployment integration scenarios (test/integration/deployment), rolling updates checked
against their surge and unavailability bounds after every pod event, and Recreate never
running old and new pods together.

Both controllers run in this process through the manager (as kcontrol-manager runs them);
kube-scheduler binds the pods, kwok makes them ready, KCM's garbage collector and quota
controller do their part.
"""

from __future__ import annotations

import asyncio
import copy
import datetime

import pytest

from kcontrol.client import DEPLOYMENTS, REPLICASETS, ApiClient, Object, PatchType, Resource
from kcontrol.envtest.cluster import BEHAVIOR_LABEL, BEHAVIOR_NEVER_READY, Cluster
from kcontrol.errors import Invalid, NotFound
from kcontrol.manager import Manager
from tests.controllers.cluster_helpers import (
    HASH,
    REVISION,
    WITHIN,
    RolloutWatcher,
    active,
    condition,
    deployment,
    events_for,
    get,
    patch,
    pods_of,
    replicasets,
    set_image,
    wait_complete,
)
from tests.integration.helpers import poll

RESOURCEQUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota")


# -- upstream's integration scenarios ---------------------------------------------------------


@pytest.mark.usefixtures("controllers")
async def test_new_deployment(cluster_namespace: str, client: ApiClient) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("web", 3), namespace=ns)
    d = await wait_complete(client, ns, "web")
    (rs,) = await replicasets(client, ns, "web")
    template_hash = rs["metadata"]["labels"][HASH]
    assert rs["metadata"]["name"] == f"web-{template_hash}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", HASH: template_hash}
    assert rs["spec"]["template"]["metadata"]["labels"][HASH] == template_hash
    annotations = rs["metadata"]["annotations"]
    assert annotations[REVISION] == "1"
    assert annotations["deployment.kubernetes.io/desired-replicas"] == "3"
    assert annotations["deployment.kubernetes.io/max-replicas"] == "4"
    assert d["metadata"]["annotations"][REVISION] == "1"
    for pod in active(await pods_of(client, ns, "app=web")):
        assert pod["metadata"]["labels"][HASH] == template_hash

    available = condition(d, "Available")
    assert available is not None
    assert (available["status"], available["reason"], available["message"]) == (
        "True",
        "MinimumReplicasAvailable",
        "Deployment has minimum availability.",
    )
    progressing = condition(d, "Progressing")
    assert progressing is not None
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "True",
        "NewReplicaSetAvailable",
        f'ReplicaSet "{rs["metadata"]["name"]}" has successfully progressed.',
    )
    assert d["status"]["readyReplicas"] == 3
    assert d["status"].get("unavailableReplicas", 0) == 0
    events = await events_for(client, ns, "web")
    message = f"Scaled up replica set {rs['metadata']['name']} from 0 to 3"  # as 1.36 words it
    assert ("ScalingReplicaSet", message) in events, events


@pytest.mark.usefixtures("controllers")
async def test_rolling_update_stays_within_surge_and_unavailability(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("roll", 6, revisionHistoryLimit=1), namespace=ns)
    await wait_complete(client, ns, "roll")
    async with RolloutWatcher(
        client, ns, "app=roll", replicas=6, max_surge=1, max_unavailable=1
    ) as watcher:
        for revision, image in ((2, "registry.example/app:2"), (3, "registry.example/app:3")):
            await patch(client, ns, "roll", set_image(image))
            d = await wait_complete(client, ns, "roll")
            assert d["metadata"]["annotations"][REVISION] == str(revision)
    assert watcher.violations == [], watcher.violations
    assert watcher.events > 0
    assert watcher.max_active >= 7, "the rollout should use its surge"

    # revisionHistoryLimit=1: the newest and one old ReplicaSet are kept, scaled to zero.
    async def history_cleaned() -> bool:
        return len(await replicasets(client, ns, "roll")) == 2

    await poll(history_cleaned, within=WITHIN, message="old ReplicaSets were not cleaned up")
    old, new = await replicasets(client, ns, "roll")
    assert old["spec"]["replicas"] == 0
    assert new["spec"]["replicas"] == 6
    assert new["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/app:3"
    pods = active(await pods_of(client, ns, "app=roll"))
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"registry.example/app:3"}


@pytest.mark.usefixtures("controllers")
async def test_recreate_never_runs_old_and_new_pods_together(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(
        DEPLOYMENTS, deployment("recreate", 3, strategy={"type": "Recreate"}), namespace=ns
    )
    await wait_complete(client, ns, "recreate")
    mixed: list[set[str]] = []

    # Both bounds off (surge 0, everything may go): the check here is on images.
    async with RolloutWatcher(
        client, ns, "app=recreate", replicas=3, max_surge=0, max_unavailable=3
    ) as watcher:
        original_check = watcher._check

        def check_images() -> None:
            original_check()
            pods = [p for p in watcher._pods.values() if p.get("status", {}).get("phase")]
            images = {p["spec"]["containers"][0]["image"] for p in pods}
            if len(images) > 1:
                mixed.append(images)

        watcher._check = check_images  # type: ignore[method-assign]
        await patch(client, ns, "recreate", set_image("registry.example/app:2"))
        await wait_complete(client, ns, "recreate")
    assert watcher.violations == []
    assert mixed == [], "old and new pods ran at the same time"
    events = [m for r, m in await events_for(client, ns, "recreate") if r == "ScalingReplicaSet"]
    assert any(m.startswith("Scaled down replica set") and m.endswith(" to 0") for m in events)


@pytest.mark.usefixtures("controllers")
async def test_selector_is_immutable(cluster_namespace: str, client: ApiClient) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("fixed", 1), namespace=ns)
    with pytest.raises(Invalid):
        await patch(client, ns, "fixed", {"spec": {"selector": {"matchLabels": {"app": "x"}}}})


@pytest.mark.usefixtures("controllers")
async def test_paused_deployment_rolls_out_only_when_resumed_but_scales(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("paused", 2, paused=True), namespace=ns)

    async def paused_condition() -> bool:
        d = await get(client, ns, "paused")
        progressing = condition(d, "Progressing")
        return progressing is not None and progressing["reason"] == "DeploymentPaused"

    await poll(paused_condition, within=WITHIN, message="no DeploymentPaused condition")
    d = await get(client, ns, "paused")
    progressing = condition(d, "Progressing")
    assert progressing is not None
    assert (progressing["status"], progressing["message"]) == ("Unknown", "Deployment is paused")
    assert await replicasets(client, ns, "paused") == [], "a paused Deployment rolls nothing out"

    await patch(client, ns, "paused", {"spec": {"paused": False}})
    await wait_complete(client, ns, "paused")
    (first,) = await replicasets(client, ns, "paused")

    # Paused again: a scale applies, a template change does not.
    await patch(client, ns, "paused", {"spec": {"paused": True}})
    await poll(paused_condition, within=WITHIN, message="no DeploymentPaused after re-pausing")
    scaled_and_changed = set_image("registry.example/app:2")
    scaled_and_changed["spec"]["replicas"] = 4
    await patch(client, ns, "paused", scaled_and_changed)
    await wait_complete_scaled(client, ns, "paused", first["metadata"]["name"], 4)
    assert len(await replicasets(client, ns, "paused")) == 1

    await patch(client, ns, "paused", {"spec": {"paused": False}})
    d = await wait_complete(client, ns, "paused")
    assert d["metadata"]["annotations"][REVISION] == "2"
    resumed = condition(d, "Progressing")
    assert resumed is not None and resumed["reason"] == "NewReplicaSetAvailable"


async def wait_complete_scaled(
    client: ApiClient, namespace: str, name: str, rs_name: str, replicas: int
) -> None:
    async def scaled() -> bool:
        rs = await client.get(REPLICASETS, rs_name, namespace=namespace)
        status = rs.get("status") or {}
        return rs["spec"]["replicas"] == replicas and status.get("readyReplicas") == replicas

    await poll(scaled, within=WITHIN, message=f"{rs_name} not scaled to {replicas}")


@pytest.mark.usefixtures("controllers")
async def test_hash_collision_bumps_collision_count(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("collide", 1), namespace=ns)
    await wait_complete(client, ns, "collide")
    (rs,) = await replicasets(client, ns, "collide")
    # Make the existing ReplicaSet's template differ from the Deployment's: the controller
    # then needs a new ReplicaSet, whose name (same template, same hash) is taken.
    changed = copy.deepcopy(rs)
    changed["spec"]["template"]["metadata"].setdefault("annotations", {})["changed"] = "yes"
    await client.update(REPLICASETS, changed, namespace=ns)

    async def collided() -> bool:
        d = await get(client, ns, "collide")
        return (d.get("status") or {}).get("collisionCount", 0) >= 1

    await poll(collided, within=WITHIN, message="collisionCount never increased")

    # The status written with the collision still reports the old ReplicaSet's completed
    # rollout: wait for the sync that follows to create the new one and take its revision.
    async def new_revision() -> bool:
        d = await get(client, ns, "collide")
        return (d["metadata"].get("annotations") or {}).get(REVISION) == "2"

    await poll(new_revision, within=WITHIN, message="the Deployment never took revision 2")
    await wait_complete(client, ns, "collide")
    sets = await replicasets(client, ns, "collide")
    names = {s["metadata"]["name"] for s in sets}
    assert rs["metadata"]["name"] in names and len(names) == 2


@pytest.mark.usefixtures("controllers")
async def test_failed_deployment_reports_progress_deadline_exceeded_then_recovers(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(
        DEPLOYMENTS,
        deployment(
            "stuck",
            2,
            pod_labels={BEHAVIOR_LABEL: BEHAVIOR_NEVER_READY},
            progressDeadlineSeconds=3,
        ),
        namespace=ns,
    )

    async def timed_out() -> bool:
        progressing = condition(await get(client, ns, "stuck"), "Progressing")
        return progressing is not None and progressing["reason"] == "ProgressDeadlineExceeded"

    await poll(timed_out, within=WITHIN, message="never ProgressDeadlineExceeded")
    d = await get(client, ns, "stuck")
    (rs,) = await replicasets(client, ns, "stuck")
    progressing = condition(d, "Progressing")
    assert progressing is not None
    assert progressing["status"] == "False"
    assert progressing["message"] == (
        f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.'
    )
    available = condition(d, "Available")
    assert available is not None and available["status"] == "False"
    assert available["reason"] == "MinimumReplicasUnavailable"

    await client.patch(
        DEPLOYMENTS,
        "stuck",
        [{"op": "remove", "path": "/spec/template/metadata/labels/kwok.kcontrol.io~1behavior"}],
        namespace=ns,
        patch_type=PatchType.JSON,
    )
    d = await wait_complete(client, ns, "stuck")
    progressing = condition(d, "Progressing")
    assert progressing is not None and progressing["reason"] == "NewReplicaSetAvailable"


@pytest.mark.usefixtures("controllers")
async def test_overlapping_deployments_each_keep_their_own_replicasets(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    first = deployment("first", 2)
    second = deployment("second", 1)
    selector = {"matchLabels": {"shared": "yes"}}
    for d in (first, second):
        d["spec"]["selector"] = selector
        d["spec"]["template"]["metadata"]["labels"]["shared"] = "yes"
    await client.create(DEPLOYMENTS, first, namespace=ns)
    await client.create(DEPLOYMENTS, second, namespace=ns)
    await wait_complete(client, ns, "first")
    await wait_complete(client, ns, "second")
    (rs1,) = await replicasets(client, ns, "first")
    (rs2,) = await replicasets(client, ns, "second")
    assert rs1["spec"]["replicas"] == 2 and rs2["spec"]["replicas"] == 1
    assert len(active(await pods_of(client, ns, "shared=yes"))) == 3


@pytest.mark.usefixtures("controllers")
async def test_scaling_mid_rollout_is_proportional(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
    await client.create(DEPLOYMENTS, deployment("prop", 10, strategy=strategy), namespace=ns)
    await wait_complete(client, ns, "prop")
    # A new template whose pods never become ready: the rollout stops half way.
    await patch(
        client,
        ns,
        "prop",
        {"spec": {"template": {"metadata": {"labels": {BEHAVIOR_LABEL: BEHAVIOR_NEVER_READY}}}}},
    )

    def sizes(sets: list[Object]) -> dict[str, int]:
        """Replicas by revision: "1" the old ReplicaSet, "2" the new one."""
        return {s["metadata"]["annotations"][REVISION]: s["spec"]["replicas"] for s in sets}

    async def rollout_stuck() -> bool:
        # 10 + surge 3 = 13 pods at most, 10 - 2 = 8 available at least: the old ReplicaSet
        # goes to 8 and the new one to 5, whose pods never become available.
        return sizes(await replicasets(client, ns, "prop")) == {"1": 8, "2": 5}

    await poll(rollout_stuck, within=WITHIN, message="rollout never got stuck at 8 + 5")

    await patch(client, ns, "prop", {"spec": {"replicas": 20}})

    async def scaled() -> bool:
        sets = await replicasets(client, ns, "prop")
        return sum(s["spec"]["replicas"] for s in sets) == 23 and all(
            s["metadata"]["annotations"].get("deployment.kubernetes.io/desired-replicas") == "20"
            for s in sets
        )

    await poll(scaled, within=WITHIN, message="ReplicaSets not scaled to 20 + surge")
    # Upstream's answer, each ReplicaSet scaled by (20 + 3) / its max-replicas annotation
    # (10 + 3), rounded: 8 -> 14 and 5 -> 9 (a formula on desired-replicas gives 16 and 7).
    assert sizes(await replicasets(client, ns, "prop")) == {"1": 14, "2": 9}


@pytest.mark.usefixtures("controllers")
async def test_a_deployment_with_the_longest_name_rolls_out(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    name = "long-" + "n" * 248  # 253 characters, the longest name there is
    d = deployment("long", 2)
    d["metadata"]["name"] = name
    await client.create(DEPLOYMENTS, d, namespace=ns)
    await wait_complete(client, ns, name)
    (rs,) = await replicasets(client, ns, name)
    template_hash = rs["metadata"]["labels"][HASH]
    assert rs["metadata"]["name"] == f"{name[: 252 - len(template_hash)]}-{template_hash}"
    assert len(active(await pods_of(client, ns, "app=long"))) == 2


@pytest.mark.usefixtures("controllers")
async def test_min_ready_seconds_delays_availability(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("slow", 2, minReadySeconds=5), namespace=ns)
    d = await wait_complete(client, ns, "slow")
    now = datetime.datetime.now(datetime.UTC)
    available = condition(d, "Available")
    assert available is not None and available["status"] == "True"
    for pod in active(await pods_of(client, ns, "app=slow")):
        ready = condition(pod, "Ready")
        assert ready is not None and ready["status"] == "True"
        # Ready times have one-second resolution: 5 s shows as at least 4.
        since = datetime.datetime.fromisoformat(ready["lastTransitionTime"].replace("Z", "+00:00"))
        waited = (now - since).total_seconds()
        assert waited >= 4, f"{pod['metadata']['name']} counted available after {waited} s"


@pytest.mark.usefixtures("controllers")
async def test_adopts_a_matching_orphan_replicaset(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    d = deployment("adopt", 2)
    orphan = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "adopt-orphan", "labels": {"app": "adopt"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "adopt"}},
            "template": copy.deepcopy(d["spec"]["template"]),
        },
    }
    await client.create(REPLICASETS, orphan, namespace=ns)
    await client.create(DEPLOYMENTS, d, namespace=ns)
    await wait_complete(client, ns, "adopt")
    (rs,) = await replicasets(client, ns, "adopt")
    assert rs["metadata"]["name"] == "adopt-orphan", "the orphan must be adopted, not replaced"


@pytest.mark.usefixtures("controllers")
async def test_replicaset_released_and_adopted_as_labels_change(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("labels", 1), namespace=ns)
    await wait_complete(client, ns, "labels")
    (rs,) = await replicasets(client, ns, "labels")
    name = rs["metadata"]["name"]
    await client.patch(REPLICASETS, name, {"metadata": {"labels": {"app": "gone"}}}, namespace=ns)

    async def released() -> bool:
        got = await client.get(REPLICASETS, name, namespace=ns)
        return not got["metadata"].get("ownerReferences")

    await poll(released, within=WITHIN, message="the relabelled ReplicaSet was not released")

    # The Deployment needs a ReplicaSet again; the released one holds the name its template
    # hashes to, so the collision count moves the new one to another name (as upstream).
    async def replaced() -> bool:
        owned = await replicasets(client, ns, "labels")
        return len(owned) == 1 and owned[0]["metadata"]["name"] != name

    await poll(replaced, within=WITHIN, message="no new ReplicaSet under another name")
    d = await wait_complete(client, ns, "labels")
    assert d["status"]["collisionCount"] == 1

    await client.patch(REPLICASETS, name, {"metadata": {"labels": {"app": "labels"}}}, namespace=ns)

    async def adopted() -> bool:
        return name in [s["metadata"]["name"] for s in await replicasets(client, ns, "labels")]

    await poll(adopted, within=WITHIN, message="the ReplicaSet was not adopted back")


@pytest.mark.usefixtures("controllers")
async def test_scale_subresource(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("scaled", 1), namespace=ns)
    await wait_complete(client, ns, "scaled")
    await asyncio.to_thread(cluster.kubectl, "scale", "deployment/scaled", "--replicas=3", "-n", ns)
    d = await wait_complete(client, ns, "scaled")
    assert d["spec"]["replicas"] == 3
    scale = await client.get(DEPLOYMENTS, "scaled", namespace=ns, subresource="scale")
    assert scale["status"]["replicas"] == 3


@pytest.mark.usefixtures("controllers")
async def test_replicaset_create_denied_sets_replicaset_create_error(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "one-rs"},
        "spec": {"hard": {"count/replicasets.apps": "1"}},
    }
    await client.create(RESOURCEQUOTAS, quota, namespace=ns)

    async def counted() -> bool:
        got = await client.get(RESOURCEQUOTAS, "one-rs", namespace=ns)
        return "hard" in (got.get("status") or {})

    await poll(counted, within=WITHIN, message="KCM never computed the quota's status")
    await client.create(DEPLOYMENTS, deployment("denied", 1), namespace=ns)
    await wait_complete(client, ns, "denied")
    await patch(client, ns, "denied", set_image("registry.example/app:2"))  # needs a 2nd RS

    async def create_error() -> bool:
        progressing = condition(await get(client, ns, "denied"), "Progressing")
        return progressing is not None and progressing["reason"] == "ReplicaSetCreateError"

    await poll(create_error, within=WITHIN, message="no ReplicaSetCreateError condition")
    progressing = condition(await get(client, ns, "denied"), "Progressing")
    assert progressing is not None and progressing["status"] == "False"
    assert "exceeded quota" in progressing["message"]
    events = await events_for(client, ns, "denied")
    assert any(r == "ReplicaSetCreateError" for r, _ in events), events

    await client.delete(RESOURCEQUOTAS, "one-rs", namespace=ns)
    d = await wait_complete(client, ns, "denied")
    assert d["metadata"]["annotations"][REVISION] == "2"


async def test_deleting_a_deployment_cascades_through_the_garbage_collector(
    controllers: Manager, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("doomed", 2), namespace=ns)
    await wait_complete(client, ns, "doomed")
    await client.delete(DEPLOYMENTS, "doomed", namespace=ns)

    async def all_gone() -> bool:
        listed = await client.list(REPLICASETS, namespace=ns)
        return not listed["items"] and not active(await pods_of(client, ns, "app=doomed"))

    await poll(all_gone, within=WITHIN, message="ReplicaSets or pods outlived their Deployment")
    with pytest.raises(NotFound):
        await get(client, ns, "doomed")


@pytest.mark.usefixtures("controllers")
async def test_rollback_through_the_deprecated_annotation(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("back", 2), namespace=ns)
    await wait_complete(client, ns, "back")
    await patch(client, ns, "back", set_image("registry.example/app:2"))
    await wait_complete(client, ns, "back")

    rollback = "deprecated.deployment.rollback.to"
    await patch(client, ns, "back", {"metadata": {"annotations": {rollback: "1"}}})

    async def rolled_back() -> bool:
        d = await get(client, ns, "back")
        image = d["spec"]["template"]["spec"]["containers"][0]["image"]
        return image == "registry.example/app:1" and rollback not in d["metadata"]["annotations"]

    await poll(rolled_back, within=WITHIN, message="the rollback annotation was not acted on")
    d = await wait_complete(client, ns, "back")
    assert d["metadata"]["annotations"][REVISION] == "3"
    events = await events_for(client, ns, "back")
    assert ("DeploymentRollback", 'Rolled back deployment "back" to revision 1') in events

    await patch(client, ns, "back", {"metadata": {"annotations": {rollback: "9"}}})

    async def not_found_reported() -> bool:
        reasons = [r for r, _ in await events_for(client, ns, "back")]
        return "DeploymentRollbackRevisionNotFound" in reasons

    await poll(not_found_reported, within=WITHIN, message="no RevisionNotFound event")
    d = await get(client, ns, "back")
    assert rollback not in d["metadata"]["annotations"], "a failed rollback is dropped too"


@pytest.mark.usefixtures("controllers")
async def test_replicaset_the_apiserver_rejects_is_reported_and_others_carry_on(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    # Room for one ReplicaSet in the namespace: the first Deployment takes it.
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "replicasets"},
        "spec": {"hard": {"count/replicasets.apps": "1"}},
    }
    await client.create(RESOURCEQUOTAS, quota, namespace=ns)

    async def counted() -> bool:
        got = await client.get(RESOURCEQUOTAS, "replicasets", namespace=ns)
        return "hard" in (got.get("status") or {})

    await poll(counted, within=WITHIN, message="KCM never computed the quota's status")
    await client.create(DEPLOYMENTS, deployment("ordinary", 1), namespace=ns)
    await wait_complete(client, ns, "ordinary")

    await client.create(DEPLOYMENTS, deployment("rejected", 1), namespace=ns)

    async def create_error() -> bool:
        progressing = condition(await get(client, ns, "rejected"), "Progressing")
        return progressing is not None and progressing["reason"] == "ReplicaSetCreateError"

    await poll(create_error, within=WITHIN, message="no ReplicaSetCreateError condition")
    progressing = condition(await get(client, ns, "rejected"), "Progressing")
    assert progressing is not None and progressing["status"] == "False"
    assert "exceeded quota" in progressing["message"], progressing["message"]

    # The refused one is retried with backoff; the other is still served meanwhile.
    await patch(client, ns, "ordinary", {"spec": {"replicas": 2}})
    d = await wait_complete(client, ns, "ordinary")
    assert d["status"]["availableReplicas"] == 2
