"""Automatic rollback on the test cluster (issue 40): a Deployment rolled to a template whose
pods never become ready goes back to its previous ReplicaSet's pods once its 10 s progress
deadline passes, never below ``replicas - maxUnavailable`` ready pods; a tool re-applying
the failed template every two seconds (Argo CD's self-heal, played by the test) changes
nothing - no ReplicaSet is resized, no pod of the failed template is created - and a fixed
template then rolls forward as usual. ``kubectl rollout status`` reports the failure.

kcontrol's Deployment and ReplicaSet controllers run in this process (as the other
Deployment cluster tests run them); kwok plays the pods (``kwok.kcontrol.io/behavior:
never-ready`` keeps a pod Running but never Ready).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kcontrol.client import DEPLOYMENTS, PODS, ApiClient, ListOptions, Object
from kcontrol.envtest.cluster import BEHAVIOR_LABEL, BEHAVIOR_NEVER_READY, Cluster
from kcontrol.manager import Manager
from kcontrol_controllers.deployment import (
    AUTO_ROLLBACK_ANNOTATION,
    ROLLED_BACK,
    ROLLED_BACK_TO_ANNOTATION,
)
from kcontrol_controllers.deployment import SPEC as DEPLOYMENT_SPEC
from kcontrol_controllers.replicaset import SPEC as REPLICASET_SPEC
from tests.controllers.cluster_helpers import (
    HASH,
    WITHIN,
    RolloutWatcher,
    active,
    condition,
    deployment,
    get,
    is_ready,
    kubectl,
    replicasets,
    running_manager,
    wait_complete,
)
from tests.integration.helpers import poll

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NAME = "web"
REPLICAS = 4
REAPPLY_EVERY = 2.0
REAPPLY_FOR = 14.0
"""Longer than the progress deadline: a second timeout, if one came, would show."""


@pytest.fixture
async def controllers(cluster: Cluster, cluster_namespace: str) -> AsyncIterator[Manager]:
    async with running_manager(cluster, DEPLOYMENT_SPEC, REPLICASET_SPEC, shards=1) as manager:
        yield manager


def failing_template(d: Object) -> dict[str, Any]:
    """``d``'s template with pods that never become ready, and a new image."""
    template: dict[str, Any] = d["spec"]["template"]
    labels = {**template["metadata"]["labels"], BEHAVIOR_LABEL: BEHAVIOR_NEVER_READY}
    containers = [{**template["spec"]["containers"][0], "image": "registry.example/app:2"}]
    return {
        **template,
        "metadata": {**template["metadata"], "labels": labels},
        "spec": {**template["spec"], "containers": containers},
    }


async def pods_by_hash(client: ApiClient, ns: str) -> dict[str, list[Object]]:
    pods = (
        await client.list(PODS, namespace=ns, options=ListOptions(label_selector=f"app={NAME}"))
    )["items"]
    found: dict[str, list[Object]] = {}
    for pod in active(pods):
        found.setdefault(pod["metadata"]["labels"].get(HASH, ""), []).append(pod)
    return found


async def pod_uids(client: ApiClient, ns: str) -> dict[str, set[str]]:
    return {
        h: {p["metadata"]["uid"] for p in ps} for h, ps in (await pods_by_hash(client, ns)).items()
    }


@pytest.mark.usefixtures("controllers")
async def test_a_failed_rollout_is_rolled_back_held_against_reapplies_then_fixed(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    body = deployment(
        NAME,
        REPLICAS,
        progressDeadlineSeconds=10,
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}},
    )
    body["metadata"]["annotations"] = {AUTO_ROLLBACK_ANNOTATION: "true"}
    await client.create(DEPLOYMENTS, body, namespace=ns)
    d = await wait_complete(client, ns, NAME)
    (good,) = await replicasets(client, ns, NAME)
    good_hash = good["metadata"]["labels"][HASH]

    async with RolloutWatcher(
        client, ns, f"app={NAME}", replicas=REPLICAS, max_surge=1, max_unavailable=1
    ) as watcher:
        failed_template = failing_template(d)
        d["spec"]["template"] = failed_template
        await client.update(DEPLOYMENTS, d, namespace=ns)
        seen: dict[str, Any] = {}

        async def rolled_back() -> bool:
            current = await get(client, ns, NAME)
            rss = await replicasets(client, ns, NAME)
            by_hash = await pods_by_hash(client, ns)
            seen.update(status=current.get("status"), sizes=[r["spec"]["replicas"] for r in rss])
            held = condition(current, ROLLED_BACK)
            return (
                held is not None
                and held["status"] == "True"
                and len(rss) == 2
                and rss[0]["spec"]["replicas"] == REPLICAS
                and rss[1]["spec"]["replicas"] == 0
                and set(by_hash) == {good_hash}
                and sum(map(is_ready, by_hash[good_hash])) == REPLICAS
            )

        await poll(rolled_back, within=WITHIN, interval=0.5, message=lambda: f"no rollback: {seen}")
    assert watcher.violations == [], watcher.violations[:5]

    old, failed = await replicasets(client, ns, NAME)
    assert old["metadata"]["uid"] == good["metadata"]["uid"]
    assert failed["metadata"]["annotations"][ROLLED_BACK_TO_ANNOTATION] == good["metadata"]["name"]
    current = await get(client, ns, NAME)
    assert current["spec"]["template"] == failed_template, "the spec is Git's, untouched"
    progressing = condition(current, "Progressing")
    assert progressing is not None
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert failed["metadata"]["name"] in progressing["message"]
    assert good["metadata"]["name"] in progressing["message"]
    status = await kubectl(cluster, ns, "rollout", "status", f"deployment/{NAME}", "--timeout=5s")
    assert status.code != 0 and "exceeded its progress deadline" in status.err, status

    # Argo CD's self-heal, played: the failed template re-applied every two seconds.
    generations = {r["metadata"]["name"]: r["metadata"]["generation"] for r in (old, failed)}
    before = await pod_uids(client, ns)
    deadline = asyncio.get_running_loop().time() + REAPPLY_FOR
    while asyncio.get_running_loop().time() < deadline:
        live = await get(client, ns, NAME)
        live["spec"]["template"] = failed_template
        await client.update(DEPLOYMENTS, live, namespace=ns)
        await asyncio.sleep(REAPPLY_EVERY)
    rss = await replicasets(client, ns, NAME)
    assert {r["metadata"]["name"]: r["metadata"]["generation"] for r in rss} == generations, (
        "a ReplicaSet was resized while held"
    )
    assert await pod_uids(client, ns) == before, "a pod came or went while held"

    # The fix is pushed: a new template rolls forward and the hold's condition goes.
    live = await get(client, ns, NAME)
    live["spec"]["template"]["metadata"]["labels"].pop(BEHAVIOR_LABEL)
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example/app:3"
    await client.update(DEPLOYMENTS, live, namespace=ns)
    fixed = await wait_complete(client, ns, NAME)
    assert condition(fixed, ROLLED_BACK) is None
    progressing = condition(fixed, "Progressing")
    assert progressing is not None and progressing["reason"] == "NewReplicaSetAvailable"
    sizes = [r["spec"]["replicas"] for r in await replicasets(client, ns, NAME)]
    assert sizes == [0, 0, REPLICAS], sizes
