"""The disruption controller under ``kcontrol-manager --shards=3`` (docs/manager/sharding.md,
"What can be sharded by namespace"), on a kwok cluster whose apiserver filters lists and
watches by shard (feature gate ShardedListAndWatch) and audits every write with the Leases'
bodies, PodDisruptionBudget statuses included. kube-controller-manager's own
disruption-controller is off, so only kcontrol writes PDB statuses.

Three replicas (deployment, replicaset and disruption controllers, a 4 s lease) share the
three shards one each. Each of six namespaces, two per shard, holds a Deployment of 3 and a
PDB over its pods: ``minAvailable: 2`` in one namespace of each shard (the pods are counted),
``minAvailable: 50%`` in the other (the Deployment's scale is read from the replica's cache).
Every PDB's status reaches 1 disruption allowed of 3 pods, 3 healthy, 2 desired; each replica
caches only its shard's PDBs and Deployments. The holder of one shard is SIGKILLed; that
shard's Deployments are scaled to 4 and one of its PDBs is raised to ``minAvailable: 3``. The
two survivors take the shard over, cache its PDBs, and bring its PDB statuses to the new
values, the other shards' staying as they were.

Checked in the audit log: every write of a replica to a namespace's PDBs (their status), pods,
ReplicaSets or Deployments was received while the latest write of that namespace's shard Lease
was the replica's own, naming itself, less than a lease duration before; only the replicas
wrote PDB statuses; each replica wrote some in its own shard before the kill, and the
survivors wrote the killed shard's after it.
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kcontrol.client import (
    DEPLOYMENTS,
    PODDISRUPTIONBUDGETS,
    ApiClient,
    shard_of,
)
from kcontrol.envtest.cluster import Cluster
from tests.controllers.cluster_helpers import deployment
from tests.controllers.disruption.test_disruption_cluster import Status, pdb, status_of
from tests.dropin.dropin_helpers import (
    LEASE_BODIES_POLICY,
    ManagerProcess,
    describe,
    manager_processes,
    read_audit_log,
    sent_by,
    start_audited_cluster,
    successful_writes,
)
from tests.dropin.test_leadership_rollout import logs_of
from tests.dropin.test_sharded_rollout import (
    ROLLOUT,
    SHARDS,
    WITHIN,
    cached_objects,
    holders,
    outside_holds,
    spread_namespaces,
    start_one_per_shard,
)
from tests.integration.helpers import poll

pytestmark = [pytest.mark.slow, pytest.mark.integration]

DISRUPTION = "disruption-controller"
CONTROLLERS = ("deployment-controller", "replicaset-controller", DISRUPTION)
PDBS = "poddisruptionbudgets"
POLICY = LEASE_BODIES_POLICY.replace(
    "- level: None\n",
    """- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  resources:
  - group: "policy"
    resources: ["poddisruptionbudgets", "poddisruptionbudgets/*"]
- level: None
""",
)
"""The drop-in policy with the Leases' bodies, and the writes to PDBs (their status too)."""
BEFORE: Status = (1, 3, 2, 3)
"""``(disruptionsAllowed, currentHealthy, desiredHealthy, expectedPods)`` of every PDB over
3 ready pods, ``minAvailable`` 2 or 50%."""
SCALED: Status = (2, 4, 2, 4)
"""The same PDBs over 4 ready pods."""
RAISED: Status = (1, 4, 3, 4)
"""``minAvailable: 3`` over 4 ready pods."""


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    """This module's cluster: the shard selectors served, the Leases' bodies and the PDB
    writes audited, kube-controller-manager without its disruption-controller."""
    cluster, log = start_audited_cluster(
        tmp_path_factory.mktemp("audit"),
        policy_text=POLICY,
        extra_apiserver_args=["--feature-gates=ShardedListAndWatch=true"],
    )
    try:
        controllers = (*cluster.controllers, f"-{DISRUPTION}")
        asyncio.run(cluster.set_controller_manager_controllers(controllers))
        yield cluster, log
    finally:
        cluster.stop()


async def wait_statuses(
    client: ApiClient, want: dict[str, Status], processes: list[ManagerProcess]
) -> None:
    """Until the PDB ``web`` of each namespace has the status ``want[namespace]``, its
    ``observedGeneration`` its generation."""
    seen: dict[str, Any] = {}

    async def reached() -> bool:
        for ns, status in want.items():
            numbers, current = await status_of(client, ns, "web")
            observed = (current.get("status") or {}).get("observedGeneration")
            seen[ns] = (numbers, observed, current["metadata"].get("generation"))
            if numbers != status or observed != current["metadata"].get("generation"):
                return False
        return True

    await poll(
        reached,
        within=WITHIN,
        interval=0.3,
        message=lambda: (
            f"wanted {want}; (status, observed, generation): {seen}\n{logs_of(processes)}"
        ),
    )


@pytest.mark.timeout(600)
async def test_three_sharded_replicas_keep_pdb_statuses_and_take_over_a_killed_shard(
    cluster: Cluster, client: ApiClient, audit_log: Path, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:6]
    lease = f"kcontrol-pdb-{suffix}"
    lease_namespace, names = await spread_namespaces(cluster, client, suffix)
    by_shard = {k: [ns for ns in names if shard_of(ns, SHARDS) == k] for k in range(SHARDS)}

    with manager_processes() as processes:
        await start_one_per_shard(
            cluster, client, processes, (lease_namespace, lease), suffix, tmp_path, CONTROLLERS
        )

        for group in by_shard.values():
            for ns, min_available in zip(group, (2, "50%"), strict=True):
                await client.create(DEPLOYMENTS, deployment("web", 3), namespace=ns)
                body = pdb("web", {"matchLabels": {"app": "web"}}, minAvailable=min_available)
                await client.create(PODDISRUPTIONBUDGETS, body, namespace=ns)
        await wait_statuses(client, dict.fromkeys(names, BEFORE), processes)

        # Each replica caches its own shard's PDBs and Deployments, and only those.
        held = await holders(client, lease_namespace, lease)
        for process in processes:
            (shard,) = [k for k, who in held.items() if who == process.identity]
            share = len(by_shard[shard])

            async def cached(process: ManagerProcess = process, share: int = share) -> bool:
                return (
                    await cached_objects(process, PDBS)
                    == share
                    == await cached_objects(process, "deployments")
                )

            await poll(cached, within=30, message=f"{process.identity} caches {share} of each")

        # Kill one shard's holder; scale its Deployments and raise one of its budgets.
        split = await holders(client, lease_namespace, lease)
        assert split == held, f"the shards moved before the kill: {held} then {split}"
        killed_shard = 0
        killed = next(p for p in processes if p.identity == split[killed_shard])
        survivors = [p for p in processes if p is not killed]
        killed.signal(signal.SIGKILL)
        faulted = datetime.now(UTC)
        raised, scaled = by_shard[killed_shard]
        for ns in by_shard[killed_shard]:
            await client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 4}}, namespace=ns)
        await client.patch(
            PODDISRUPTIONBUDGETS, "web", {"spec": {"minAvailable": 3}}, namespace=raised
        )

        async def survivors_hold_all() -> bool:
            for process in survivors:
                if not process.running():
                    raise AssertionError(f"{process.identity} exited\n{logs_of(processes)}")
            return set((await holders(client, lease_namespace, lease)).values()) == {
                p.identity for p in survivors
            }

        await poll(
            survivors_hold_all,
            within=WITHIN,
            message=lambda: f"no takeover\n{logs_of(processes)}",
        )
        want = dict.fromkeys(names, BEFORE) | {raised: RAISED, scaled: SCALED}
        await wait_statuses(client, want, processes)

        held = await holders(client, lease_namespace, lease)
        for process in survivors:
            share = sum(len(by_shard[k]) for k, who in held.items() if who == process.identity)

            async def took(process: ManagerProcess = process, share: int = share) -> bool:
                return await cached_objects(process, PDBS) == share

            await poll(took, within=30, message=f"{process.identity} caches {share} PDBs")
        await asyncio.sleep(1.0)  # any write still in flight has landed
        for process in survivors:
            assert process.running(), logs_of(processes)

    events = [e for e in read_audit_log(audit_log) if e.namespace in {lease_namespace, *names}]
    violations = outside_holds(events, processes, lease, resources=(*ROLLOUT, PDBS))
    assert violations == [], "\n".join(violations[:20])
    status_writes = [
        w for w in successful_writes(events) if w.resource == PDBS and w.subresource == "status"
    ]
    strangers = [w for w in status_writes if not any(sent_by(w, p.user_agent) for p in processes)]
    assert strangers == [], describe(strangers)

    def writers(shard: int, before: bool) -> set[str]:
        """Who wrote the shard's PDB statuses before the kill (or after)."""
        return {
            p.identity
            for w in status_writes
            for p in processes
            if shard_of(w.namespace, SHARDS) == shard
            and (w.received < faulted) == before
            and sent_by(w, p.user_agent)
        }

    for shard, who in split.items():
        assert writers(shard, before=True) == {who}, (shard, who, describe(status_writes))
    after_kill = writers(killed_shard, before=False)
    assert after_kill, f"nobody wrote shard {killed_shard}'s PDB statuses after the kill"
    assert after_kill <= {p.identity for p in survivors}, describe(status_writes)
