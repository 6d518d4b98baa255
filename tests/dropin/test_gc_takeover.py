"""The garbage collector handed from kube-controller-manager to kcontrol and back in the middle
of foreground deletions (issue 38).

100 owner ConfigMaps, each with two dependents: ``dep-<i>-a`` owned by it alone
(``blockOwnerDeletion``) and held by a finalizer the test removes later - so each foreground
deletion is still under way at the next hand-over - and ``dep-<i>-b`` owned by it and by
``keeper``, which lives on. The owners are deleted in the foreground in three batches: the
first while KCM's collector runs; then KCM's stops, kcontrol-manager's
(``--controllers=garbage-collector-controller``, a process of its own) starts, the first
batch's dependents are released (kcontrol must finish the deletions KCM began) and the
second batch is deleted; then kcontrol's stops, KCM's takes back, the second batch's
dependents are released and the third batch deleted and released.

Checked in the API server's audit log and the objects: every ``dep-<i>-a`` was deleted by a
successful DELETE exactly once, by the collector running when its owner was deleted (a
second collector deleting again would show); every owner is gone (its foreground finalizer
removed, also by the collector that did not start its deletion); no ``dep-<i>-a`` is left (no
orphan); every ``dep-<i>-b`` is alive (it still had a live owner) with the deleted owner's
reference removed.
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kcontrol.client import CONFIGMAPS, ApiClient, Object, PatchType
from kcontrol.envtest.cluster import Cluster
from kcontrol.errors import NotFound
from tests.dropin.dropin_helpers import (
    AuditEvent,
    ManagerProcess,
    describe,
    manager_processes,
    read_audit_log,
    sent_by,
    sent_by_kcm,
    start_audited_cluster,
    successful_writes,
)
from tests.dropin.test_leadership_rollout import LEASE, logs_of, wait_holder
from tests.integration.helpers import poll

pytestmark = [pytest.mark.slow, pytest.mark.integration]

OWNERS = 100
HOLD = "kcontrol.io/gc-takeover-test"
KCM_GC = "garbage-collector-controller"
KCM_GC_AGENT = "generic-garbage-collector"
"""The last part of the user agent of KCM's collector (``--controllers`` calls it
``garbage-collector-controller``)."""
BATCHES = (range(0, 30), range(30, 70), range(70, OWNERS))
"""Owners deleted while KCM collects, then while kcontrol does, then after the hand-back."""
WITHIN = 180.0
GC_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted", "Panic"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  resources:
  - group: ""
    resources: ["configmaps"]
  - group: "coordination.k8s.io"
    resources: ["leases"]
- level: None
"""


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    cluster, log = start_audited_cluster(tmp_path_factory.mktemp("audit"), policy_text=GC_POLICY)
    try:
        yield cluster, log
    finally:
        cluster.stop()


def ref(owner: Object, *, block: bool) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    }


def configmap(name: str, owners: list[dict[str, Any]], **metadata: Any) -> Object:
    return {"metadata": {"name": name, "ownerReferences": owners, **metadata}, "data": {}}


def by_kcm(event: AuditEvent) -> bool:
    return sent_by_kcm(event, KCM_GC_AGENT)


@pytest.mark.timeout(600)
async def test_foreground_deletions_handed_kcm_kcontrol_kcm_delete_each_dependent_once(
    cluster: Cluster, cluster_namespace: str, client: ApiClient, audit_log: Path, tmp_path: Path
) -> None:
    ns = cluster_namespace
    original = cluster.controllers
    without_kcm = (*original, f"-{KCM_GC}")
    suffix = uuid.uuid4().hex[:6]
    semaphore = asyncio.Semaphore(16)

    async def create(body: Object) -> Object:
        async with semaphore:
            created: Object = await client.create(CONFIGMAPS, body, namespace=ns)
            return created

    keeper = await create(configmap("keeper", []))
    owners = await asyncio.gather(*(create(configmap(f"owner-{i}", [])) for i in range(OWNERS)))
    await asyncio.gather(
        *(
            create(configmap(f"dep-{i}-a", [ref(o, block=True)], finalizers=[HOLD]))
            for i, o in enumerate(owners)
        ),
        *(
            create(configmap(f"dep-{i}-b", [ref(o, block=True), ref(keeper, block=False)]))
            for i, o in enumerate(owners)
        ),
    )

    async def delete_owners(indexes: range) -> None:
        async def one(i: int) -> None:
            async with semaphore:
                await client.delete(
                    CONFIGMAPS, f"owner-{i}", namespace=ns, propagation_policy="Foreground"
                )

        await asyncio.gather(*(one(i) for i in indexes))

    async def release(indexes: range) -> None:
        async def one(i: int) -> None:
            async with semaphore:
                await client.patch(
                    CONFIGMAPS,
                    f"dep-{i}-a",
                    [{"op": "remove", "path": "/metadata/finalizers"}],
                    namespace=ns,
                    patch_type=PatchType.JSON,
                )

        await asyncio.gather(*(one(i) for i in indexes))

    async def deleting(indexes: range) -> bool:
        """Every dep-<i>-a of ``indexes`` has been deleted (its finalizer holds it)."""
        for i in indexes:
            try:
                dep = await client.get(CONFIGMAPS, f"dep-{i}-a", namespace=ns)
            except NotFound:
                continue
            if not dep["metadata"].get("deletionTimestamp"):
                return False
        return True

    async def gone(indexes: range) -> bool:
        for i in indexes:
            for name in (f"owner-{i}", f"dep-{i}-a"):
                try:
                    await client.get(CONFIGMAPS, name, namespace=ns)
                except NotFound:
                    continue
                return False
        return True

    first, second, third = BATCHES
    started = datetime.now(UTC)
    try:
        with manager_processes() as processes:

            def logs() -> str:
                return logs_of(processes)

            # KCM's collector begins the first batch's foreground deletions.
            await delete_owners(first)
            await poll(lambda: deleting(first), within=WITHIN, message="KCM deleted nothing")

            # kcontrol's collector takes over: it finishes the first batch, does the second.
            await cluster.set_controller_manager_controllers(without_kcm)
            handed = datetime.now(UTC)
            manager = ManagerProcess(
                cluster,
                ns,
                LEASE,
                f"gc-{suffix}",
                tmp_path,
                controllers=["garbage-collector-controller"],
            )
            processes.append(manager)
            await wait_holder(client, ns, manager, logs())
            await release(first)
            await poll(lambda: gone(first), within=WITHIN, message=lambda: f"first left\n{logs()}")
            await delete_owners(second)
            await poll(
                lambda: deleting(second), within=WITHIN, message=lambda: f"no deletes\n{logs()}"
            )

            # KCM's takes back: it finishes the second batch, does the third.
            manager.signal(signal.SIGTERM)
            assert await manager.wait(WITHIN) == 0, manager.log()[-3000:]
            await cluster.set_controller_manager_controllers(original)
            given_back = datetime.now(UTC)
            await release(second)
            await poll(lambda: gone(second), within=WITHIN, message="second batch left")
            await delete_owners(third)
            await poll(lambda: deleting(third), within=WITHIN, message="KCM took nothing back")
            await release(third)
            await poll(lambda: gone(third), within=WITHIN, message="third batch left")
            await asyncio.sleep(2.0)  # anything still in flight lands
    finally:
        if cluster.controllers != original:
            await cluster.set_controller_manager_controllers(original)

    events = [e for e in successful_writes(read_audit_log(audit_log, ns)) if e.received > started]
    deletes = [e for e in events if e.verb == "delete" and e.name.startswith("dep-")]
    per_dependent = Counter(e.name for e in deletes)
    expected = {f"dep-{i}-a": 1 for i in range(OWNERS)}
    assert dict(per_dependent) == expected, describe(
        [e for e in deletes if per_dependent[e.name] != 1 or e.name.endswith("-b")], limit=20
    )
    deleted_by = {e.name: e for e in deletes}
    wrong = [
        e.describe()
        for batch, expected_by in (
            (first, lambda e: by_kcm(e) and e.received < handed),
            (second, lambda e: sent_by(e, manager.user_agent)),
            (third, lambda e: by_kcm(e) and e.received > given_back),
        )
        for i in batch
        if not expected_by(e := deleted_by[f"dep-{i}-a"])
    ]
    assert wrong == [], wrong[:10]
    finalizers = [
        e for e in events if e.name.startswith("owner-") and e.verb in ("update", "patch")
    ]
    kcontrol_finished = {e.name for e in finalizers if sent_by(e, manager.user_agent)}
    assert {f"owner-{i}" for i in first} <= kcontrol_finished, (
        "kcontrol did not finish the deletions KCM began"
    )
    collectors = {
        "kcm": sum(map(by_kcm, deletes)),
        "kcontrol": sum(sent_by(e, manager.user_agent) for e in deletes),
    }
    strangers = [e for e in deletes if not by_kcm(e) and not sent_by(e, manager.user_agent)]
    assert strangers == [], describe(strangers)

    listed = (await client.list(CONFIGMAPS, namespace=ns))["items"]
    left = {cm["metadata"]["name"]: cm for cm in listed}
    assert not [n for n in left if n.startswith(("owner-", "dep-")) and n.endswith(("-a",))]
    assert not [n for n in left if n.startswith("owner-")], "an owner's finalizer was left"
    for i in range(OWNERS):
        survivor = left.get(f"dep-{i}-b")
        assert survivor is not None, f"dep-{i}-b was deleted though keeper lives"
        owners_left = [r["name"] for r in survivor["metadata"].get("ownerReferences") or []]
        assert owners_left == ["keeper"], (f"dep-{i}-b", owners_left)
    print(f"dependents deleted per collector: {collectors}")
