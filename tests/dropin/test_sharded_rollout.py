"""kcontrol-manager sharded over three replicas (issue 24), on a kwok cluster whose apiserver
filters lists and watches by shard (feature gate ShardedListAndWatch) and audits every write
with the Leases' bodies.

Three ``kcontrol-manager --shards=3`` processes (deployment and replicaset controllers, a 4 s
lease) share the three shards one each. Deployments in namespaces of every shard are created
and complete; each replica's caches hold only its shard's Deployments. All are re-templated;
mid-rollout the holder of one shard is SIGKILLed and the holder of another SIGSTOPped; the
third takes both shards over and finishes every rollout; the stopped one, resumed, finds its
member Lease lost and exits 1, as a deposed kube-controller-manager does.

Checked in the audit log: every write of a replica to a namespace's pods, ReplicaSets or
Deployments was received while the latest write of that namespace's shard Lease was the
replica's own, naming itself holder, less than a lease duration before - no shard was ever
written by two replicas, nor by one that had let it go; nothing was done twice (one
ReplicaSet per revision, three pods per ReplicaSet, none deleted).
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import Collection, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kcontrol.client import (
    DEPLOYMENTS,
    LEASES,
    NAMESPACES,
    REPLICASETS,
    ApiClient,
    Object,
    shard_of,
)
from kcontrol.envtest.cluster import Cluster
from kcontrol.errors import NotFound
from kcontrol.leaderelection import shard_lease_name
from tests.controllers.cluster_helpers import REVISION, complete, deployment, replicasets
from tests.dropin.dropin_helpers import (
    LEASE_BODIES_POLICY,
    LEASE_DURATION,
    AuditEvent,
    AuditTail,
    ManagerProcess,
    describe,
    manager_processes,
    read_audit_log,
    sent_by,
    start_audited_cluster,
    successful_writes,
)
from tests.dropin.test_leadership_rollout import logs_of, retemplate, wait_for_writes
from tests.integration.helpers import poll

pytestmark = [pytest.mark.slow, pytest.mark.integration]

SHARDS = 3
PER_SHARD = 2
"""Namespaces per shard."""
PER_NAMESPACE = 2
"""Deployments per namespace."""
REPLICAS = 3
WITHIN = 180.0
ROLLOUT = ("pods", "replicasets", "deployments")
POLICY = LEASE_BODIES_POLICY.replace(
    "- level: None\n",
    """- level: Metadata
  verbs: ["list"]
  resources:
  - group: ""
    resources: ["pods"]
- level: None
""",
)
"""The drop-in policy with the Leases' bodies, and the pod LISTs (their resourceVersion)."""
SCALE_STEP = 2
"""Pods each ReplicaSet of the hand-over test grows by, every half second at most (three of
them: at most 12 pod creates a second, within the controller's 20 writes a second)."""
SCALE_LIMIT = 600
"""Where that scaling would stop: 300 steps the controllers kept up with, well after both
hand-overs."""


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    """This module's cluster: the shard selectors served, the Leases' bodies audited."""
    cluster, log = start_audited_cluster(
        tmp_path_factory.mktemp("audit"),
        policy_text=POLICY,
        extra_apiserver_args=["--feature-gates=ShardedListAndWatch=true"],
    )
    try:
        yield cluster, log
    finally:
        cluster.stop()


def spread_names(suffix: str) -> list[str]:
    """``PER_SHARD`` namespace names in each of the ``SHARDS`` shards."""
    chosen: dict[int, list[str]] = {k: [] for k in range(SHARDS)}
    i = 0
    while any(len(names) < PER_SHARD for names in chosen.values()):
        name = f"s-{suffix}-{i}"
        group = chosen[shard_of(name, SHARDS)]
        if len(group) < PER_SHARD:
            group.append(name)
        i += 1
    return [name for names in chosen.values() for name in names]


async def spread_namespaces(
    cluster: Cluster, client: ApiClient, suffix: str
) -> tuple[str, list[str]]:
    """A namespace for the Leases and :func:`spread_names`, created, each of the latter with
    its default ServiceAccount."""
    lease_namespace = f"leases-{suffix}"
    names = spread_names(suffix)
    for name in (lease_namespace, *names):
        await client.create(NAMESPACES, {"metadata": {"name": name}})
    for name in names:
        await cluster.wait_for_service_account(name)
    return lease_namespace, names


async def start_one_per_shard(
    cluster: Cluster,
    client: ApiClient,
    processes: list[ManagerProcess],
    lease: tuple[str, str],
    suffix: str,
    log_dir: Path,
    controllers: tuple[str, ...] = ("deployment-controller", "replicaset-controller"),
) -> None:
    """Three ``kcontrol-manager --shards=SHARDS`` processes (``a-``, ``b-``, ``c-<suffix>``)
    electing on the Lease ``lease`` (namespace, name), appended to ``processes``; returns once
    each holds one shard (fails at once if one exits)."""
    lease_namespace, lease_name = lease
    for letter in "abc":
        processes.append(
            ManagerProcess(
                cluster,
                lease_namespace,
                lease_name,
                f"{letter}-{suffix}",
                log_dir,
                extra_args=[f"--shards={SHARDS}"],
                controllers=controllers,
            )
        )
    identities = {p.identity for p in processes}

    async def one_each() -> bool:
        for process in processes:
            if not process.running():
                raise AssertionError(f"{process.identity} exited\n{logs_of(processes)}")
        return set((await holders(client, lease_namespace, lease_name)).values()) == identities

    await poll(one_each, within=WITHIN, message=lambda: f"no 1:1:1 split\n{logs_of(processes)}")


async def holders(client: ApiClient, namespace: str, lease: str) -> dict[int, str]:
    found = {}
    for index in range(SHARDS):
        try:
            got = await client.get(
                LEASES, shard_lease_name(lease, index, SHARDS), namespace=namespace
            )
        except NotFound:
            found[index] = ""
            continue
        found[index] = (got.get("spec") or {}).get("holderIdentity") or ""
    return found


async def cached_objects(process: ManagerProcess, resource: str) -> float | None:
    """``kcontrol_informer_cached_objects`` of ``resource`` (a plural) on the process's
    /metrics; None while it does not answer."""
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session,
            session.get(f"http://127.0.0.1:{process.port}/metrics") as response,
        ):
            text = await response.text()
    except (aiohttp.ClientError, TimeoutError):
        return None
    for line in text.splitlines():
        name, _, _ = line.partition("{")
        if name == "kcontrol_informer_cached_objects" and f'resource="{resource}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def outside_holds(
    events: list[AuditEvent],
    processes: list[ManagerProcess],
    lease: str,
    *,
    resources: Collection[str] = ROLLOUT,
) -> list[str]:
    """The writes of ``processes`` to a namespace's ``resources`` (pods, ReplicaSets or
    Deployments) that were not received while the latest write of the namespace's shard Lease
    was the writer's own, naming itself, less than a lease duration before (module
    docstring)."""
    lease_writes: dict[int, list[AuditEvent]] = {k: [] for k in range(SHARDS)}
    index_of = {shard_lease_name(lease, k, SHARDS): k for k in range(SHARDS)}
    for event in successful_writes(events):
        if event.resource == "leases" and event.name in index_of:
            lease_writes[index_of[event.name]].append(event)
    for writes in lease_writes.values():
        writes.sort(key=lambda e: e.completed)
    found = []
    for event in successful_writes(events):
        if event.resource not in resources or not event.namespace:
            continue
        writer = next((p for p in processes if sent_by(event, p.user_agent)), None)
        if writer is None:
            continue  # kwok, the scheduler, the test itself
        shard = shard_of(event.namespace, SHARDS)
        before = [w for w in lease_writes[shard] if w.completed <= event.received]
        last = before[-1] if before else None
        if (
            last is None
            or not sent_by(last, writer.user_agent)
            or last.holder != writer.identity
            or (event.received - last.completed).total_seconds() >= LEASE_DURATION
        ):
            held = "none" if last is None else f"{last.describe()} holder={last.holder!r}"
            found.append(f"{event.describe()} (shard {shard}; last Lease write: {held})")
    return found


@pytest.mark.timeout(900)
async def test_three_sharded_replicas_split_roll_out_and_survive_a_kill_and_a_stop(
    cluster: Cluster, client: ApiClient, audit_log: Path, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:6]
    lease = f"kcontrol-sharded-{suffix}"
    lease_namespace, names = await spread_namespaces(cluster, client, suffix)
    deployments = [(ns, f"web-{i}") for ns in names for i in range(PER_NAMESPACE)]

    with manager_processes() as processes:
        await start_one_per_shard(
            cluster, client, processes, (lease_namespace, lease), suffix, tmp_path
        )

        for ns, name in deployments:
            await client.create(DEPLOYMENTS, deployment(name, REPLICAS), namespace=ns)

        async def all_complete() -> bool:
            for ns, name in deployments:
                if not complete(await client.get(DEPLOYMENTS, name, namespace=ns)):
                    return False
            return True

        await poll(all_complete, within=WITHIN, message=lambda: logs_of(processes))

        # Each replica caches its own shard's Deployments, and only those.
        held = await holders(client, lease_namespace, lease)
        for process in processes:
            (shard,) = [k for k, who in held.items() if who == process.identity]
            share = sum(1 for ns, _ in deployments if shard_of(ns, SHARDS) == shard)

            async def cached(process: ManagerProcess = process, share: int = share) -> bool:
                return await cached_objects(process, "deployments") == share

            await poll(cached, within=30, message=f"{process.identity} caches {share}")

        # Re-template everything; mid-rollout, kill one shard's holder and stop another's.
        tail = AuditTail(audit_log, None)
        retemplated = datetime.now(UTC)
        for ns, name in deployments:
            await client.patch(DEPLOYMENTS, name, retemplate(2), namespace=ns)
        killed, stopped, survivor = (
            next(p for p in processes if p.identity == held[k]) for k in range(SHARDS)
        )
        for victim in (killed, stopped):
            await wait_for_writes(
                tail, victim.user_agent, retemplated, 1, ("replicasets",), ("create",)
            )
        under_way = [
            (ns, name)
            for ns, name in deployments
            if not complete(await client.get(DEPLOYMENTS, name, namespace=ns))
        ]
        assert under_way, "every rollout finished before the faults: nothing was tested"
        killed.signal(signal.SIGKILL)
        stopped.signal(signal.SIGSTOP)
        faulted = datetime.now(UTC)

        async def survivor_holds_all() -> bool:
            return set((await holders(client, lease_namespace, lease)).values()) == {
                survivor.identity
            }

        await poll(
            survivor_holds_all, within=WITHIN, message=lambda: f"no takeover\n{logs_of(processes)}"
        )
        await wait_for_writes(tail, survivor.user_agent, faulted)
        stopped.signal(signal.SIGCONT)
        code = await stopped.wait(WITHIN)
        assert code == 1, f"the resumed replica exited {code}\n{stopped.log()[-3000:]}"
        await poll(all_complete, within=WITHIN, message=lambda: logs_of(processes))
        await asyncio.sleep(1.0)  # any write still in flight has landed
        assert survivor.running(), logs_of(processes)

    for ns, name in deployments:
        d: Object = await client.get(DEPLOYMENTS, name, namespace=ns)
        assert d["metadata"]["annotations"][REVISION] == "2", (ns, name)
        owned = await replicasets(client, ns, name)
        assert [rs["metadata"]["annotations"][REVISION] for rs in owned] == ["1", "2"], (ns, name)

    events = [e for e in read_audit_log(audit_log) if e.namespace in {lease_namespace, *names}]
    violations = outside_holds(events, processes, lease)
    assert violations == [], "\n".join(violations[:20])
    writes = successful_writes(events)
    by_victims = [
        w
        for w in writes
        if w.resource in ROLLOUT
        and w.completed > retemplated
        and (sent_by(w, killed.user_agent) or sent_by(w, stopped.user_agent))
    ]
    assert by_victims, "the faulted replicas wrote no rollout step"
    taken_over = {
        shard_of(w.namespace, SHARDS)
        for w in writes
        if w.resource in ROLLOUT and w.received > faulted and sent_by(w, survivor.user_agent)
    }
    assert taken_over >= {0, 1}, f"the survivor wrote in shards {taken_over} after the faults"
    rs_creates = [w for w in writes if w.resource == "replicasets" and w.verb == "create"]
    rs_deletes = [w for w in writes if w.resource == "replicasets" and w.verb == "delete"]
    pod_creates = [w for w in writes if w.resource == "pods" and w.verb == "create"]
    assert len(rs_creates) == 2 * len(deployments), describe(rs_creates, limit=50)
    assert rs_deletes == [], describe(rs_deletes)
    assert len(pod_creates) == 2 * len(deployments) * REPLICAS, len(pod_creates)


def replicaset(name: str, replicas: int) -> Object:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


@pytest.mark.timeout(600)
async def test_a_replica_coming_and_going_while_replicasets_scale_creates_no_extra_pod(
    cluster: Cluster, client: ApiClient, audit_log: Path, tmp_path: Path
) -> None:
    """Issue 35.1: a replica alone holds every shard while one ReplicaSet per shard keeps
    scaling up (a few pods every half second, each step a sync that creates them); a second
    replica starts, takes a shard, creates pods there, and stops. Each hand-over rebuilds the
    first replica's controllers and informers; a cache that missed the pods created just
    before it (a list from the watch cache; the expectations stayed with the old controllers)
    would create them again and then delete the surplus. The audit log shows every
    ReplicaSet's pods created exactly once and none deleted, both replicas creating, and every
    pod LIST of the replicas a consistent read (no ``resourceVersion=0``)."""
    suffix = uuid.uuid4().hex[:6]
    lease = f"kcontrol-scale-{suffix}"
    lease_namespace = f"leases-{suffix}"
    names = [
        next(n for n in spread_names(suffix) if shard_of(n, SHARDS) == k) for k in range(SHARDS)
    ]
    for name in (lease_namespace, *names):
        await client.create(NAMESPACES, {"metadata": {"name": name}})
    for name in names:
        await cluster.wait_for_service_account(name)
    shards = [f"--shards={SHARDS}"]

    with manager_processes() as processes:
        first = ManagerProcess(cluster, lease_namespace, lease, f"a-{suffix}", tmp_path, shards)
        processes.append(first)

        async def held_by(*identities: str) -> bool:
            for process in processes:
                if process.identity in identities and not process.running():
                    raise AssertionError(f"{process.identity} exited\n{logs_of(processes)}")
            return set((await holders(client, lease_namespace, lease)).values()) == set(identities)

        await poll(
            lambda: held_by(first.identity),
            within=WITHIN,
            message=lambda: f"a never held every shard\n{logs_of(processes)}",
        )
        for ns in names:
            await client.create(REPLICASETS, replicaset("rs", 0), namespace=ns)
        tail = AuditTail(audit_log, None)
        started = datetime.now(UTC)
        replicas = 0
        scaling = True

        async def caught_up() -> bool:
            for ns in names:
                rs = await client.get(REPLICASETS, "rs", namespace=ns)
                if (rs.get("status") or {}).get("replicas") != replicas:
                    return False
            return True

        async def scale() -> None:
            # A step once the last one's pods exist: the ReplicaSets grow only as fast as the
            # controllers create (and pause while shards change hands), so a slow machine
            # does not run out of steps before the hand-overs.
            nonlocal replicas
            while scaling and replicas < SCALE_LIMIT:
                replicas += SCALE_STEP
                for ns in names:
                    body = {"spec": {"replicas": replicas}}
                    await client.patch(REPLICASETS, "rs", body, namespace=ns)
                await asyncio.sleep(0.5)
                await poll(caught_up, within=WITHIN, interval=0.1, message="pods not created")

        scaler = asyncio.create_task(scale())
        try:
            await wait_for_writes(tail, first.user_agent, started, 1, ("pods",), ("create",))
            second = ManagerProcess(
                cluster, lease_namespace, lease, f"b-{suffix}", tmp_path, shards
            )
            processes.append(second)
            await poll(
                lambda: held_by(first.identity, second.identity),
                within=WITHIN,
                message=lambda: f"b took no shard\n{logs_of(processes)}",
            )
            took = datetime.now(UTC)
            await wait_for_writes(tail, second.user_agent, took, 1, ("pods",), ("create",))
            await wait_for_writes(tail, first.user_agent, took, 1, ("pods",), ("create",))
            second.signal(signal.SIGTERM)
            code = await second.wait(WITHIN)
            assert code == 0, f"b exited {code}\n{second.log()[-3000:]}"
            await poll(
                lambda: held_by(first.identity),
                within=WITHIN,
                message=lambda: f"a never took the shards back\n{logs_of(processes)}",
            )
            back = datetime.now(UTC)
            await wait_for_writes(tail, first.user_agent, back, SHARDS, ("pods",), ("create",))
        finally:
            scaling = False
            await scaler
        assert replicas < SCALE_LIMIT, "the ReplicaSets stopped scaling before the hand-overs"

        async def all_created() -> bool:
            for ns in names:
                rs = await client.get(REPLICASETS, "rs", namespace=ns)
                if (rs.get("status") or {}).get("replicas") != replicas:
                    return False
            return True

        await poll(all_created, within=WITHIN, message=lambda: logs_of(processes))
        await asyncio.sleep(2.0)  # a surplus create or a delete would have landed by now
        assert first.running(), logs_of(processes)

    events = [e for e in read_audit_log(audit_log) if e.namespace in names or not e.namespace]
    writes = successful_writes(events)
    for ns in names:
        pods = [w for w in writes if w.namespace == ns and w.resource == "pods"]
        creates = [w for w in pods if w.verb == "create"]
        deletes = [w for w in pods if w.verb == "delete"]
        assert len(creates) == replicas, (ns, replicas, describe(creates[-5:]))
        assert deletes == [], describe(deletes)
    pod_creates = [w for w in writes if (w.resource, w.verb) == ("pods", "create")]
    for process in processes:
        assert any(sent_by(w, process.user_agent) for w in pod_creates), process.identity
    lists = [
        e
        for e in events
        if (e.verb, e.resource) == ("list", "pods")
        and any(sent_by(e, p.user_agent) for p in processes)
    ]
    assert len(lists) >= 3, "fewer pod LISTs than informer sets audited: nothing was checked"
    at_rv0 = [e.uri for e in lists if "resourceVersion=0" in e.uri.partition("?")[2].split("&")]
    assert at_rv0 == [], at_rv0


def test_the_audit_check_flags_writes_outside_the_writers_hold(tmp_path: Path) -> None:
    """The check itself, on a made-up audit log: a's write while a renews its shard passes;
    a's write after b acquired the shard, after a released it, or long after a's last
    renewal is flagged; so is a write to a shard whose Lease a never wrote."""

    class Writer:
        def __init__(self, identity: str) -> None:
            self.identity = identity
            self.user_agent = f"kcontrol-manager/{identity}"

    def at(seconds: float) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)

    def event(
        verb: str, resource: str, ns: str, name: str, who: str, t: float, **kw: Any
    ) -> AuditEvent:
        return AuditEvent(
            verb=verb,
            resource=resource,
            subresource="",
            namespace=ns,
            name=name,
            user_agent=f"kcontrol-manager/{who}/deployment-controller",
            username="admin",
            code=200,
            received=at(t),
            completed=at(t),
            **kw,
        )

    ns = next(f"ns-{i}" for i in range(100) if shard_of(f"ns-{i}", SHARDS) == 0)
    other = next(f"ns-{i}" for i in range(100) if shard_of(f"ns-{i}", SHARDS) == 1)
    shard0 = shard_lease_name("l", 0, SHARDS)
    log = [
        event("update", "leases", "leases", shard0, "a", 0.0, holder="a"),
        event("create", "pods", ns, "ok", "a", 1.0),
        event("update", "leases", "leases", shard0, "a", 2.0, holder=""),  # released
        event("create", "pods", ns, "after-release", "a", 2.5),
        event("update", "leases", "leases", shard0, "b", 3.0, holder="b"),
        event("create", "pods", ns, "after-b", "a", 3.5),
        event("create", "pods", ns, "late", "b", 3.0 + LEASE_DURATION + 0.1),
        event("create", "pods", other, "never-held", "a", 4.0),
    ]
    found = outside_holds(log, [Writer("a"), Writer("b")], "l")  # type: ignore[list-item]
    flagged = sorted(line.split(" ", 3)[3].split(" ", 1)[0] for line in found)
    assert flagged == sorted(
        [f"{ns}/after-release", f"{ns}/after-b", f"{ns}/late", f"{other}/never-held"]
    ), found
