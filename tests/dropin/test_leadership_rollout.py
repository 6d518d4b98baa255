"""Leadership under a rollout (issue 11, section 1): faults 5, 6 and 7 of reliability.md with
two ``kcontrol-manager`` processes running the deployment and replicaset controllers.

Each case: manager A leads, manager B stands by (caches warm); both run with
kube-controller-manager's client defaults (20 qps, burst 30) and a 4 s lease (renew deadline
3 s, retry period 0.5 s). 20 Deployments of 3 replicas (maxSurge 1, maxUnavailable 1) are
created and complete; all 20 are re-templated (new pods take 3 s to become ready, so each
rollout takes several waves); as soon as the audit log shows A has created 5 of the new
ReplicaSets - A is in the thick of it, syncs in flight and writes queued on its rate
limiter - A is SIGKILLed, SIGSTOPped past its lease then resumed, or SIGTERMed. B takes over
and finishes.

Checked, for every case:

- watches on the namespace's pods and ReplicaSets record every state they pass through
  (:class:`~tests.dropin.dropin_helpers.NamespaceHistory`); in each, no Deployment's
  ReplicaSets ask for more than replicas + maxSurge pods, no Deployment has fewer than
  replicas - maxUnavailable ready pods (minReadySeconds 0: ready is available), and no
  ReplicaSet has more active pods than it was ever asked for. (Active pods themselves may
  exceed replicas + maxSurge while scaled-down pods await deletion - kube-controller-manager
  does the same; see that class);
- at the end every Deployment is complete with observedGeneration == generation, revision 2,
  and exactly two ReplicaSets (revisions 1 and 2); the apiserver's audit log shows exactly
  one ReplicaSet created per revision, none deleted, and exactly 3 pods created per
  ReplicaSet - nothing done twice across the hand-over;
- writers are told apart in the audit log by user agent (``kcontrol-manager/<identity>``):
  every write of A that succeeded (pods, ReplicaSets, Deployments, the Lease) completed before
  B's acquiring Lease write was even received; B wrote nothing before that; both wrote
  rollout steps (the fault really was mid-rollout).

Plus per fault: SIGKILL - B acquires; SIGSTOP - B acquires and acts while A is stopped, and A,
resumed, exits 1 ("leader election lost"); SIGTERM - A exits 0 after releasing the Lease.
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from kcontrol.client import DEPLOYMENTS, LEASES, ApiClient, Object
from kcontrol.envtest.cluster import READY_DELAY_ANNOTATION, Cluster
from kcontrol.errors import NotFound
from tests.controllers.cluster_helpers import (
    HASH,
    REVISION,
    complete,
    deployment,
    replicasets,
)
from tests.dropin.dropin_helpers import (
    AuditEvent,
    AuditTail,
    Bounds,
    ManagerProcess,
    NamespaceHistory,
    describe,
    manager_processes,
    read_audit_log,
    sent_by,
    successful_writes,
)
from tests.integration.helpers import poll

pytestmark = [pytest.mark.slow, pytest.mark.integration]

COUNT = 20
REPLICAS, MAX_SURGE, MAX_UNAVAILABLE = 3, 1, 1
ROLLOUT_READY_DELAY = "3s"
"""How long the re-templated pods take to become ready: a rollout is a few such waves."""
FAULT_AFTER = COUNT // 4
"""The fault comes once the leader has created this many of the new ReplicaSets."""
LEASE = "kcontrol-dropin"
WITHIN = 150.0
"""Seconds any convergence gets: generous, two shared cores run other people's tests too."""


# -- steps ---------------------------------------------------------------------------------------


async def holder(client: ApiClient, namespace: str) -> str | None:
    try:
        lease = await client.get(LEASES, LEASE, namespace=namespace)
    except NotFound:
        return None
    return (lease.get("spec") or {}).get("holderIdentity") or ""


async def wait_holder(
    client: ApiClient, namespace: str, process: ManagerProcess, logs: str
) -> None:
    async def holds() -> bool:
        if not process.running():
            raise AssertionError(f"{process.identity} exited\n{logs}")
        return await holder(client, namespace) == process.identity

    await poll(
        holds,
        within=WITHIN,
        interval=0.1,
        message=lambda: f"{process.identity} never held the lease\n{logs}",
    )


async def wait_ready(process: ManagerProcess) -> None:
    """Until the process answers /readyz (caches synced; a healthy standby is ready)."""
    status = {"last": ""}

    async def ready() -> bool:
        if not process.running():
            raise AssertionError(f"{process.identity} exited:\n{process.log()[-3000:]}")
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session,
                session.get(f"http://127.0.0.1:{process.port}/readyz?verbose") as response,
            ):
                status["last"] = f"{response.status}: {await response.text()}"
                return response.status == 200
        except (aiohttp.ClientError, TimeoutError) as error:
            status["last"] = str(error)
            return False

    await poll(ready, within=WITHIN, interval=0.2, message=lambda: f"{process.identity}: {status}")


async def deployments(client: ApiClient, namespace: str) -> dict[str, Object]:
    listed = await client.list(DEPLOYMENTS, namespace=namespace)
    return {d["metadata"]["name"]: d for d in listed["items"]}


async def wait_all_complete(
    client: ApiClient, namespace: str, names: list[str], logs: str = ""
) -> dict[str, Object]:
    seen: dict[str, Object] = {}

    async def done() -> bool:
        seen.clear()
        seen.update(await deployments(client, namespace))
        return all(name in seen and complete(seen[name]) for name in names)

    def why() -> str:
        pending = {
            name: (seen[name]["metadata"]["generation"], seen[name].get("status"))
            for name in names
            if name in seen and not complete(seen[name])
        }
        return f"{len(pending)} Deployments never completed: {pending}\n{logs}"

    await poll(done, within=WITHIN, interval=0.5, message=why)
    return seen


def retemplate(version: int) -> Object:
    """A new image, and pods that take a while to become ready."""
    return {
        "spec": {
            "template": {
                "metadata": {"annotations": {READY_DELAY_ANNOTATION: ROLLOUT_READY_DELAY}},
                "spec": {
                    "containers": [{"name": "app", "image": f"registry.example/app:{version}"}]
                },
            }
        }
    }


def logs_of(processes: list[ManagerProcess]) -> str:
    return "\n".join(f"--- {p.identity}\n{p.log()[-3000:]}" for p in processes)


async def wait_for_writes(
    tail: AuditTail,
    user_agent: str,
    after: datetime,
    count: int = 1,
    resources: tuple[str, ...] = ("pods", "replicasets"),
    verbs: tuple[str, ...] = ("create", "update", "patch", "delete"),
) -> None:
    """Until the audit log shows ``count`` writes of ``user_agent`` to ``resources`` with one
    of ``verbs``, completed after ``after``."""

    def wrote() -> bool:
        seen = [
            event
            for event in successful_writes(tail.refresh())
            if sent_by(event, user_agent)
            and event.resource in resources
            and event.verb in verbs
            and event.completed > after
        ]
        return len(seen) >= count

    await poll(
        wrote,
        within=WITHIN,
        interval=0.02,
        message=f"fewer than {count} {verbs} of {resources} by {user_agent}",
    )


async def inject(
    fault: str,
    client: ApiClient,
    namespace: str,
    old: ManagerProcess,
    new: ManagerProcess,
    tail: AuditTail,
    logs: str,
) -> None:
    """Apply ``fault`` to the leader ``old`` and wait until ``new`` leads (and, for
    SIGSTOP, has acted, and ``old`` has been resumed and exited)."""
    if fault == "SIGKILL":
        old.signal(signal.SIGKILL)
        assert await old.wait(60) == -signal.SIGKILL
        await wait_holder(client, namespace, new, logs)
    elif fault == "SIGSTOP":
        old.signal(signal.SIGSTOP)
        stopped = datetime.now(UTC)
        await wait_holder(client, namespace, new, logs)
        # The new leader acts while the old one is still stopped, with its stale caches
        # and its syncs in flight frozen mid-way.
        await wait_for_writes(tail, new.user_agent, stopped)
        old.signal(signal.SIGCONT)
        code = await old.wait(WITHIN)
        assert code == 1, f"the resumed leader exited {code}\n{old.log()[-3000:]}"
        events = [e.get("event", "") for e in old.log_events()]
        assert "exiting: leader election lost" in events, old.log()[-3000:]
    elif fault == "SIGTERM":
        old.signal(signal.SIGTERM)
        code = await old.wait(WITHIN)
        assert code == 0, f"SIGTERM: exit {code}\n{old.log()[-3000:]}"
        events = [e.get("event", "") for e in old.log_events()]
        assert "released lease" in events, old.log()[-3000:]
        assert "stopped cleanly" in events, old.log()[-3000:]
        await wait_holder(client, namespace, new, logs)
    else:  # pragma: no cover - a typo in the parametrization
        raise AssertionError(fault)


def acquisition(events: list[AuditEvent], namespace: str, user_agent: str) -> AuditEvent:
    """The first Lease write of ``user_agent`` that succeeded: a standby writes the Lease only
    when it acquires it."""
    writes = [
        event
        for event in successful_writes(events)
        if event.resource == "leases" and event.name == LEASE and sent_by(event, user_agent)
    ]
    assert writes, f"no successful Lease write by {user_agent} in {namespace}'s audit log"
    return min(writes, key=lambda event: event.completed)


# -- the test ------------------------------------------------------------------------------------


@pytest.mark.timeout(600)
@pytest.mark.parametrize("fault", ["SIGKILL", "SIGSTOP", "SIGTERM"])
async def test_leader_fault_mid_rollout_keeps_bounds_and_writes_nothing_stale(
    fault: str,
    cluster: Cluster,
    cluster_namespace: str,
    client: ApiClient,
    audit_log: Path,
    tmp_path: Path,
) -> None:
    ns = cluster_namespace
    names = [f"web-{i:02d}" for i in range(COUNT)]
    suffix = uuid.uuid4().hex[:6]
    with manager_processes() as processes:
        old = ManagerProcess(cluster, ns, LEASE, f"leader-a-{suffix}", tmp_path)
        processes.append(old)
        await wait_holder(client, ns, old, logs_of(processes))
        new = ManagerProcess(cluster, ns, LEASE, f"standby-b-{suffix}", tmp_path)
        processes.append(new)
        await wait_ready(new)  # its caches are warm: a standby syncs informers too
        assert await holder(client, ns) == old.identity

        for name in names:
            await client.create(DEPLOYMENTS, deployment(name, REPLICAS), namespace=ns)
        await wait_all_complete(client, ns, names, logs_of(processes))

        async with NamespaceHistory(client, ns) as history:
            tail = AuditTail(audit_log, ns)
            retemplated = datetime.now(UTC)
            for name in names:
                await client.patch(DEPLOYMENTS, name, retemplate(2), namespace=ns)
            # The fault comes while the leader works through the rollouts' first steps, so
            # it has syncs in flight and writes waiting (on its client's rate limiter).
            await wait_for_writes(
                tail, old.user_agent, retemplated, FAULT_AFTER, ("replicasets",), ("create",)
            )
            at_fault = await deployments(client, ns)
            incomplete = [name for name in names if not complete(at_fault[name])]
            assert incomplete, "every rollout finished before the fault: nothing was tested"

            await inject(fault, client, ns, old, new, tail, logs_of(processes))
            final = await wait_all_complete(client, ns, names, logs_of(processes))
            # Any write still in flight when a manager stopped has landed by now.
            await asyncio.sleep(1.0)

        assert new.running(), logs_of(processes)
        assert await holder(client, ns) == new.identity

        # The bounds held in every state the pods and ReplicaSets passed through.
        bounds = {
            name: Bounds(max_total=REPLICAS + MAX_SURGE, min_ready=REPLICAS - MAX_UNAVAILABLE)
            for name in names
        }
        report = history.check(bounds)
        assert history.events > 0
        assert report.violations == [], report.violations[:20]
        assert max(report.max_replicas.values()) == REPLICAS + MAX_SURGE, report.max_replicas

        # Every Deployment converged once, on one new ReplicaSet.
        for name in names:
            d = final[name]
            assert d["status"]["observedGeneration"] == d["metadata"]["generation"], name
            assert d["metadata"]["annotations"][REVISION] == "2", name
            assert "collisionCount" not in d["status"], (name, d["status"])
            owned = await replicasets(client, ns, name)
            revisions = [rs["metadata"]["annotations"][REVISION] for rs in owned]
            assert revisions == ["1", "2"], (name, [rs["metadata"]["name"] for rs in owned])
            assert [rs["spec"]["replicas"] for rs in owned] == [0, REPLICAS], name
            hashes = {rs["metadata"]["labels"][HASH] for rs in owned}
            assert len(hashes) == 2, (name, hashes)

        events = read_audit_log(audit_log, ns)
        writes = successful_writes(events)
        acquired = acquisition(events, ns, new.user_agent)

        # No write of the old leader landed after the new one acquired: each one was
        # answered before the acquiring Lease write even reached the apiserver.
        by_old = [w for w in writes if sent_by(w, old.user_agent)]
        stale = [w for w in by_old if w.completed >= acquired.received]
        assert stale == [], (
            f"{old.identity} wrote after {new.identity} acquired at "
            f"{acquired.received.isoformat()}:\n{describe(stale)}"
        )
        last_old = max(w.completed for w in by_old)
        print(
            f"{fault}: {len(incomplete)}/{COUNT} rollouts under way at the fault; "
            f"{history.events} pod/ReplicaSet events; most active pods "
            f"{max(report.max_active_pods.values())}, {report.pod_surge_states} states above "
            f"replicas + maxSurge in pods; fewest ready {min(report.min_ready_pods.values())}; "
            f"old leader's last write {(acquired.received - last_old).total_seconds():.3f} s "
            f"before the new leader's acquiring request"
        )
        # The standby wrote nothing before it acquired.
        by_new = [w for w in writes if sent_by(w, new.user_agent)]
        early = [w for w in by_new if w.received < acquired.received]
        assert early == [], f"{new.identity} wrote before acquiring:\n{describe(early)}"
        # The fault hit mid-rollout: both leaders wrote rollout steps.
        rollout = ("pods", "replicasets")
        assert any(w.resource in rollout and w.completed > retemplated for w in by_old), (
            f"{old.identity} wrote no rollout step"
        )
        assert any(w.resource in rollout for w in by_new), f"{new.identity} wrote no rollout step"

        # Nothing was done twice across the hand-over.
        rs_creates = [w for w in writes if w.resource == "replicasets" and w.verb == "create"]
        rs_deletes = [w for w in writes if w.resource == "replicasets" and w.verb == "delete"]
        pod_creates = [w for w in writes if w.resource == "pods" and w.verb == "create"]
        assert len(rs_creates) == 2 * COUNT, describe(rs_creates, limit=50)
        assert rs_deletes == [], describe(rs_deletes)
        assert len(pod_creates) == 2 * COUNT * REPLICAS, len(pod_creates)
        # ... and by the controller whose job it is, of one of the two managers.
        leaders = (old.user_agent, new.user_agent)
        rs_writers = {w.user_agent for w in rs_creates}
        pod_writers = {w.user_agent for w in pod_creates}
        assert rs_writers <= {f"{a}/deployment-controller" for a in leaders}, rs_writers
        assert pod_writers <= {f"{a}/replicaset-controller" for a in leaders}, pod_writers
