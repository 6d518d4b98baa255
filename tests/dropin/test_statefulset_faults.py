"""Ordering and identity under faults (issue 36): an ``OrderedReady`` StatefulSet with claims
keeps its ordinal guarantees while its controller is SIGKILLed and restarted, and while it
is handed from kube-controller-manager's controller to kcontrol's and back mid-rollout.

The set: pods ``web-<i>`` with a claim ``data-web-<i>`` each (bound at once to a volume made
for it), ``persistentVolumeClaimRetentionPolicy`` Retain/Retain, pods Ready 1 s after they
start and Terminating 1 s after their deletion (kwok's delete delay: a window in which a
premature create would show).

- Faults: kcontrol-manager (``--controllers=statefulset-controller``, KCM's switched off)
  scales the set from 0 to 10, rolls it to a new template and scales it down to 3; in each of
  the three steps, once the leader has written a few pods, it is SIGKILLed and a new process
  takes over (after the 4 s lease).
- Takeover: KCM's controller makes the set and starts rolling it; mid-rollout kcontrol's takes
  over, mid-rollout KCM's takes it back and finishes; then, at rest, kcontrol's takes over and
  KCM's takes back again without a template change. And mid scale-down: kcontrol's makes the
  set (its template holding ``<``, ``>`` and ``&``, which Go escapes) and scales it from 6 to
  1; KCM's takes over after two deletes, kcontrol's takes back after KCM's first, and KCM's
  takes over at rest.

Checked in the apiserver's audit log (:data:`~tests.dropin.dropin_helpers.WORKLOAD_POLICY`:
pod creates and kwok's status writes with their bodies, so each pod's UID and every write
that left it Running and Ready are known, on the apiserver's clock), with any tolerance only
in the direction that cannot hide a violation (:func:`ordering_violations` says why each
check is sound):

- no pod was created before every lower ordinal was Running and Ready;
- no pod was deleted in a scale-down while a higher ordinal still existed, and none deleted
  in a rolling update before every higher ordinal was Running and Ready again;
- no pod was created (not even attempted) while its predecessor of the same name was
  terminating;
- no claim was ever deleted;
- the takeovers replaced no pod: each ordinal was created once per template, the pods at the
  update revision at a hand-over kept their UIDs, exactly one ControllerRevision per
  template; across the hand-overs at rest (kcontrol leading and synced, then KCM back) pods
  kept their UIDs and nobody wrote anything in the namespace - no pod, claim, revision, nor
  the set's status: kcontrol computes the status KCM wrote.

Pod readiness is read from the audit log rather than from a watch the test keeps: a watch
event's time of receipt comes after the write it reports by an unknown delay, while the
audited write's ``requestReceivedTimestamp`` is a lower bound of its commit on the same clock
as the creates it is compared with.
"""

from __future__ import annotations

import asyncio
import json
import signal
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kcontrol.client import (
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    STATEFULSETS,
    ApiClient,
    Object,
)
from kcontrol.envtest.cluster import DELETE_DELAY_ANNOTATION, READY_DELAY_ANNOTATION, Cluster
from kcontrol_controllers.statefulset import NAME
from tests.controllers.cluster_helpers import active, is_ready, pods_of
from tests.dropin.dropin_helpers import (
    WORKLOAD_POLICY,
    WRITE_VERBS,
    AuditEvent,
    AuditTail,
    ManagerProcess,
    describe,
    manager_processes,
    read_audit_log,
    sent_by,
    sent_by_kcm,
    start_audited_cluster,
    successful_writes,
)
from tests.dropin.test_leadership_rollout import (
    LEASE,
    logs_of,
    wait_for_writes,
    wait_holder,
    wait_ready,
)
from tests.integration.helpers import poll

pytestmark = [pytest.mark.slow, pytest.mark.integration]

SET = "web"
WITHIN = 120.0
QUIET = 3.0
"""Seconds a hand-over at rest is watched for writes (an observation window)."""
KWOK_AGENT = "kwok/"
REVISION = "controller-revision-hash"


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    """This module's cluster, auditing pod bodies and the StatefulSet's other objects."""
    cluster, log = start_audited_cluster(
        tmp_path_factory.mktemp("audit"), policy_text=WORKLOAD_POLICY
    )
    try:
        yield cluster, log
    finally:
        cluster.stop()


# -- the audit log's pod writes --------------------------------------------------------------


@dataclass(frozen=True)
class PodWrite:
    """One audited write to a pod (its status included): the pod's UID and whether the write
    left it Running and Ready come from the response, for creates, updates and patches."""

    verb: str
    subresource: str
    name: str
    code: int
    received: datetime
    completed: datetime
    user_agent: str
    uid: str = ""
    ready: bool = False

    @property
    def succeeded(self) -> bool:
        return 200 <= self.code < 300

    @property
    def by_kwok(self) -> bool:
        return self.user_agent.startswith(KWOK_AGENT)

    def describe(self) -> str:
        target = "pods" + (f"/{self.subresource}" if self.subresource else "")
        return (
            f"{self.received.isoformat()} {self.verb} {target} {self.name} -> {self.code} "
            f"by {self.user_agent!r}"
        )


def running_and_ready(pod: Object) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and is_ready(pod)


def read_pod_writes(path: Path, namespace: str) -> list[PodWrite]:
    """The ResponseComplete pod writes of ``namespace`` in the audit log at ``path``."""
    writes = []
    with path.open("rb") as lines:
        for line in lines:
            try:
                raw = json.loads(line)
            except ValueError:
                continue  # the line being written
            ref = raw.get("objectRef") or {}
            if (
                raw.get("stage") != "ResponseComplete"
                or ref.get("resource") != "pods"
                or ref.get("namespace") != namespace
                or raw.get("verb") not in WRITE_VERBS
            ):
                continue
            response = raw.get("responseObject") or {}
            pod = response if response.get("kind") == "Pod" else {}
            writes.append(
                PodWrite(
                    verb=raw["verb"],
                    subresource=ref.get("subresource", ""),
                    name=ref.get("name", ""),
                    code=int((raw.get("responseStatus") or {}).get("code", 0)),
                    received=datetime.fromisoformat(raw["requestReceivedTimestamp"]),
                    completed=datetime.fromisoformat(raw["stageTimestamp"]),
                    user_agent=raw.get("userAgent", ""),
                    uid=(pod.get("metadata") or {}).get("uid", ""),
                    ready=running_and_ready(pod),
                )
            )
    return writes


# -- each pod's lives --------------------------------------------------------------------------


@dataclass
class Incarnation:
    """One pod (one UID) of a name: its create, the writes that left it Running and Ready,
    and its successful deletes (the first starts its termination - or removes it at once -,
    the last removes it: the log must be read once no pod is terminating any more)."""

    created: PodWrite
    ready: list[PodWrite] = field(default_factory=list)
    deletes: list[PodWrite] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.created.name

    def ready_before(self, moment: datetime) -> bool:
        """Whether a write that left it Running and Ready was received before ``moment``."""
        return any(w.received < moment for w in self.ready)

    def deleted_before(self, moment: datetime) -> bool:
        """Whether its deletion surely took effect before ``moment`` (answered before)."""
        return bool(self.deletes) and self.deletes[0].completed < moment

    def removal_received_before(self, moment: datetime) -> bool:
        return bool(self.deletes) and self.deletes[-1].received < moment

    def terminating_at(self, moment: datetime) -> bool:
        """Surely terminating at ``moment``: deleted before it, its removal received after."""
        return self.deleted_before(moment) and not self.removal_received_before(moment)


def incarnations(writes: Iterable[PodWrite]) -> dict[str, list[Incarnation]]:
    """Every pod of every name, oldest first."""
    by_name: dict[str, list[Incarnation]] = {}
    by_uid: dict[str, Incarnation] = {}
    done = sorted((w for w in writes if w.succeeded), key=lambda w: w.received)
    for write in done:
        if write.verb == "create" and not write.subresource:
            life = Incarnation(write)
            by_name.setdefault(write.name, []).append(life)
            by_uid[write.uid] = life
    for write in done:
        if write.verb == "delete" and not write.subresource:
            earlier = [
                life
                for life in by_name.get(write.name, [])
                if life.created.received < write.received
            ]
            if earlier:
                earlier[-1].deletes.append(write)
        elif write.ready and write.uid in by_uid:
            by_uid[write.uid].ready.append(write)
    return by_name


def ordinal(name: str, set_name: str) -> int | None:
    prefix, _, number = name.rpartition("-")
    return int(number) if prefix == set_name and number.isdigit() else None


def ready_at(lives: dict[str, list[Incarnation]], name: str, moment: datetime) -> bool:
    """Whether pod ``name`` may have been Running and Ready (and not terminating) at
    ``moment`` as a controller saw it: one of its incarnations was created, and left Running
    and Ready by a write received, before ``moment``, and was not surely deleted by then."""
    return any(
        life.created.received < moment
        and life.ready_before(moment)
        and not life.deleted_before(moment)
        for life in lives.get(name, [])
    )


def ordering_violations(
    writes: list[PodWrite],
    set_name: str,
    *,
    updates: tuple[datetime, datetime, int] | None = None,
    scale_down_since: datetime | None = None,
) -> list[str]:
    """The ordering guarantees of an ``OrderedReady`` set broken in ``writes``.

    Sound on the apiserver's clock (every timestamp is the apiserver's): a controller acts on
    a cache that only ever holds what was written before, so a create received at ``T`` on a
    correct controller's decision that pod ``j`` was Running and Ready means the write that
    made it so was received before ``T``; a delete waiting for a pod's removal comes after
    the removal was received; a create of a name after its predecessor's removal was
    received. Writes whose timing is ambiguous (answered after ``T``) count in the
    controller's favour. The one assumption: a controller never acts on a view older than a
    pod deletion that took effect before it decided (the controllers here only delete pods
    themselves, and a new process lists afresh).

    - every pod create: each lower ordinal was Running and Ready (:func:`ready_at`);
    - ``updates`` ``(start, end, replicas)``: every controller delete received in
      ``[start, end)`` (a rolling update, from the highest ordinal down) came once every
      higher ordinal below ``replicas`` was Running and Ready;
    - ``scale_down_since``: no controller delete received after it while a higher ordinal
      had been created and its removal not yet received;
    - no create of a name, even refused, while a pod of that name was terminating.
    """
    lives = incarnations(writes)
    found: list[str] = []
    for name, pods in lives.items():
        i = ordinal(name, set_name)
        if i is None:
            continue
        for life in pods:
            moment = life.created.received
            late = [j for j in range(i) if not ready_at(lives, f"{set_name}-{j}", moment)]
            if late:
                found.append(
                    f"created before {set_name}-{late[0]} was Running and Ready: "
                    f"{life.created.describe()}"
                )
    deletes = [
        w
        for w in writes
        if w.verb == "delete" and w.succeeded and not w.by_kwok and not w.subresource
    ]
    for delete in deletes:
        j = ordinal(delete.name, set_name)
        if j is None:
            continue
        moment = delete.received
        if updates is not None and updates[0] <= moment < updates[1]:
            unready = [
                i
                for i in range(j + 1, updates[2])
                if not ready_at(lives, f"{set_name}-{i}", moment)
            ]
            if unready:
                found.append(
                    f"updated before {set_name}-{unready[0]} was Running and Ready: "
                    f"{delete.describe()}"
                )
        if scale_down_since is not None and moment > scale_down_since:
            higher = [
                life
                for name, pods in lives.items()
                if (i := ordinal(name, set_name)) is not None and i > j
                for life in pods
                if life.created.completed < moment and not life.removal_received_before(moment)
            ]
            if higher:
                found.append(f"scaled down while {higher[0].name} existed: {delete.describe()}")
    for write in writes:
        if write.verb != "create" or write.subresource:
            continue
        busy = [life for life in lives.get(write.name, []) if life.terminating_at(write.received)]
        if busy:
            found.append(f"created while its predecessor was terminating: {write.describe()}")
    return found


def claim_deletes(log: Path, namespace: str) -> list[str]:
    """Every delete of a claim in ``namespace``, refused or not."""
    return [
        e.describe()
        for e in read_audit_log(log, namespace)
        if e.resource == "persistentvolumeclaims" and e.verb in ("delete", "deletecollection")
    ]


# -- the set ----------------------------------------------------------------------------------


def stateful_set(replicas: int) -> Object:
    labels = {"app": SET}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": SET},
        "spec": {
            "replicas": replicas,
            "serviceName": SET,
            "podManagementPolicy": "OrderedReady",
            "selector": {"matchLabels": labels},
            "persistentVolumeClaimRetentionPolicy": {
                "whenScaled": "Retain",
                "whenDeleted": "Retain",
            },
            "template": {
                "metadata": {
                    "labels": labels,
                    "annotations": {DELETE_DELAY_ANNOTATION: "1s"},
                },
                "spec": {"containers": [{"name": "app", "image": "registry.example/db:1"}]},
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }


def retemplate(version: int, ready_delay: str = "1s") -> Object:
    return {
        "spec": {
            "template": {
                "metadata": {"annotations": {READY_DELAY_ANNOTATION: ready_delay}},
                "spec": {
                    "containers": [{"name": "app", "image": f"registry.example/db:{version}"}]
                },
            }
        }
    }


async def make_volumes(client: ApiClient, namespace: str, count: int) -> None:
    """A volume bound in advance to each of the claims ``data-web-<i>``, ``i < count`` (no
    provisioner here: an unbound claim keeps its pod from being scheduled)."""
    for i in range(count):
        claim = f"data-{SET}-{i}"
        await client.create(
            PERSISTENTVOLUMES,
            {
                "metadata": {"name": f"{namespace}-{claim}"},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "hostPath": {"path": f"/tmp/{namespace}/{claim}"},
                    "persistentVolumeReclaimPolicy": "Retain",
                    "claimRef": {"namespace": namespace, "name": claim},
                },
            },
        )


async def wait_settled(
    client: ApiClient, namespace: str, replicas: int, logs: Callable[[], str]
) -> Object:
    """Until the set has exactly ``replicas`` pods, none terminating, all Running and Ready
    at its update revision, and its status says so for its generation; returns the set."""
    seen: dict[str, Any] = {}

    async def done() -> bool:
        set_ = await client.get(STATEFULSETS, SET, namespace=namespace)
        pods = await pods_of(client, namespace, f"app={SET}")
        status = set_.get("status") or {}
        seen.update(pods=sorted(p["metadata"]["name"] for p in pods), status=status)
        update = status.get("updateRevision")
        return (
            len(pods) == replicas
            and len(active(pods)) == replicas
            and all(map(running_and_ready, pods))
            and all(p["metadata"]["labels"].get(REVISION) == update for p in pods)
            and status.get("observedGeneration") == set_["metadata"]["generation"]
            and status.get("readyReplicas") == replicas
            and status.get("updatedReplicas") == replicas
            and status.get("currentRevision") == update
        )

    await poll(done, within=WITHIN, interval=0.3, message=lambda: f"not settled: {seen}\n{logs()}")
    return await client.get(STATEFULSETS, SET, namespace=namespace)


async def pods_by_name(client: ApiClient, namespace: str) -> dict[str, Object]:
    return {p["metadata"]["name"]: p for p in await pods_of(client, namespace, f"app={SET}")}


async def check_claims(client: ApiClient, namespace: str, count: int, log: Path) -> None:
    deletes = claim_deletes(log, namespace)
    assert deletes == [], deletes
    claims = (await client.list(PERSISTENTVOLUMECLAIMS, namespace=namespace))["items"]
    names = sorted(
        c["metadata"]["name"] for c in claims if not c["metadata"].get("deletionTimestamp")
    )
    assert names == sorted(f"data-{SET}-{i}" for i in range(count)), names


def pod_creates_after(log: Path, namespace: str, after: datetime) -> list[str]:
    return [
        e.name
        for e in successful_writes(read_audit_log(log, namespace))
        if (e.resource, e.subresource, e.verb) == ("pods", "", "create") and e.received > after
    ]


async def reconciled(process: ManagerProcess, controller: str) -> float:
    """``controller_runtime_reconcile_total`` of ``controller``'s successful syncs on the
    process's /metrics (0 while it does not answer)."""
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session,
            session.get(f"http://127.0.0.1:{process.port}/metrics") as response,
        ):
            text = await response.text()
    except (aiohttp.ClientError, TimeoutError):
        return 0.0
    wanted = (f'controller="{controller}"', 'result="success"')
    for line in text.splitlines():
        name, _, _ = line.partition("{")
        if name == "controller_runtime_reconcile_total" and all(w in line for w in wanted):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def wait_synced(process: ManagerProcess, controller: str, logs: Callable[[], str]) -> None:
    """Until ``process`` leads, its caches are synced and ``controller`` has synced once."""

    async def synced() -> bool:
        if not process.running():
            raise AssertionError(f"{process.identity} exited\n{logs()}")
        return await reconciled(process, controller) >= 1

    await wait_ready(process)
    await poll(synced, within=WITHIN, interval=0.2, message=lambda: f"no sync\n{logs()}")


# -- faults -----------------------------------------------------------------------------------


@pytest.mark.timeout(420)
async def test_ordered_ready_set_keeps_its_order_through_three_sigkills(
    cluster: Cluster, cluster_namespace: str, client: ApiClient, audit_log: Path, tmp_path: Path
) -> None:
    ns = cluster_namespace
    lease = "kcontrol-statefulset"
    suffix = uuid.uuid4().hex[:6]
    original = cluster.controllers
    await make_volumes(client, ns, 10)
    tail = AuditTail(audit_log, ns)
    await cluster.set_controller_manager_controllers((*original, f"-{NAME}"))
    try:
        with manager_processes() as processes:

            def start(step: str) -> ManagerProcess:
                process = ManagerProcess(
                    cluster, ns, lease, f"{step}-{suffix}", tmp_path, controllers=[NAME]
                )
                processes.append(process)
                return process

            def logs() -> str:
                return logs_of(processes)

            async def kill_after(
                victim: ManagerProcess, after: datetime, count: int, verb: str, next_step: str
            ) -> ManagerProcess:
                await wait_for_writes(tail, victim.user_agent, after, count, ("pods",), (verb,))
                victim.signal(signal.SIGKILL)
                assert await victim.wait(30) == -signal.SIGKILL
                return start(next_step)

            leader = start("a")
            await client.create(STATEFULSETS, stateful_set(0), namespace=ns)

            # 0 -> 10, the leader killed after three pods.
            scaled_up = datetime.now(UTC)
            await client.patch(STATEFULSETS, SET, {"spec": {"replicas": 10}}, namespace=ns)
            leader = await kill_after(leader, scaled_up, 3, "create", "b")
            await wait_settled(client, ns, 10, logs)

            # A new template, the leader killed after replacing three pods.
            rolled = datetime.now(UTC)
            await client.patch(STATEFULSETS, SET, retemplate(2), namespace=ns)
            leader = await kill_after(leader, rolled, 3, "delete", "c")
            await wait_settled(client, ns, 10, logs)
            rolled_out = datetime.now(UTC)

            # 10 -> 3, the leader killed after two deletes.
            scaled_down = datetime.now(UTC)
            await client.patch(STATEFULSETS, SET, {"spec": {"replicas": 3}}, namespace=ns)
            leader = await kill_after(leader, scaled_down, 2, "delete", "d")
            await wait_settled(client, ns, 3, logs)
            await asyncio.sleep(1.0)  # any write still in flight has landed
            assert leader.running(), logs()
            killed = processes[:-1]
    finally:
        await cluster.set_controller_manager_controllers(original)

    writes = read_pod_writes(audit_log, ns)
    violations = ordering_violations(
        writes,
        SET,
        updates=(rolled, rolled_out, 10),
        scale_down_since=scaled_down,
    )
    assert violations == [], "\n".join(violations[:20])
    attempts = [w for w in writes if w.verb == "create" and not w.subresource]
    creates = [w for w in attempts if w.succeeded]
    assert sorted(w.name for w in creates) == sorted([f"{SET}-{i}" for i in range(10)] * 2), (
        "a pod was created more or less than once per template"
    )
    ready = incarnations(writes)
    assert all(life.ready for lives in ready.values() for life in lives), "readiness unaudited"
    for process in processes:
        assert any(
            sent_by(w, process.user_agent)
            for w in successful_writes(tail.refresh())
            if w.resource == "pods"
        ), f"{process.identity} wrote no pod"
    await check_claims(client, ns, 10, audit_log)
    refused = [w.describe() for w in attempts if not w.succeeded]
    print(
        f"{len(killed)} SIGKILLs; {len(creates)} pod creates, {len(refused)} refused; "
        f"{sum(w.verb == 'delete' and not w.by_kwok for w in writes)} controller deletes"
    )


# -- takeover ---------------------------------------------------------------------------------


def by_kcm(event: AuditEvent) -> bool:
    return sent_by_kcm(event, NAME)


def writes_in(log: Path, namespace: str, start: datetime, end: datetime) -> list[AuditEvent]:
    """Every successful write in ``namespace`` but the Leases' received in [start, end]: to
    pods (their status included), claims, StatefulSets (status included), DaemonSets,
    ControllerRevisions."""
    return [
        e
        for e in successful_writes(read_audit_log(log, namespace))
        if e.resource != "leases" and start <= e.received <= end
    ]


async def uids_and_update_revision(client: ApiClient, ns: str) -> tuple[dict[str, str], set[str]]:
    """The pods' UIDs by name, and the names of those at the set's update revision."""
    update = ((await client.get(STATEFULSETS, SET, namespace=ns)).get("status") or {}).get(
        "updateRevision"
    )
    pods = await pods_by_name(client, ns)
    at_update = {n for n, p in pods.items() if p["metadata"]["labels"].get(REVISION) == update}
    return {n: p["metadata"]["uid"] for n, p in pods.items()}, at_update


@pytest.mark.timeout(420)
async def test_takeover_from_kcm_and_back_mid_rollout_replaces_no_pod(
    cluster: Cluster, cluster_namespace: str, client: ApiClient, audit_log: Path, tmp_path: Path
) -> None:
    ns = cluster_namespace
    replicas = 6
    suffix = uuid.uuid4().hex[:6]
    original = cluster.controllers
    assert f"-{NAME}" not in original, "KCM's statefulset-controller runs at first"
    without_kcm = (*original, f"-{NAME}")
    tail = AuditTail(audit_log, ns)
    await make_volumes(client, ns, replicas)
    await client.create(STATEFULSETS, stateful_set(replicas), namespace=ns)
    await wait_settled(client, ns, replicas, lambda: "")  # by KCM
    kept: dict[str, str] = {}
    """Pods at the update revision at a hand-over: they must live to the end."""

    def creates_by(agent: Callable[[AuditEvent], bool], after: datetime) -> int:
        return sum(
            1
            for e in successful_writes(tail.refresh())
            if (e.resource, e.subresource, e.verb) == ("pods", "", "create")
            and e.received > after
            and agent(e)
        )

    try:
        with manager_processes() as processes:

            def logs() -> str:
                return logs_of(processes)

            # KCM starts rolling (new pods ready after 2 s); mid-rollout, kcontrol takes over.
            retemplated = datetime.now(UTC)
            await client.patch(STATEFULSETS, SET, retemplate(2, "2s"), namespace=ns)
            await poll(
                lambda: creates_by(by_kcm, retemplated) >= 2,
                within=WITHIN,
                interval=0.05,
                message="KCM never replaced a pod",
            )
            await cluster.set_controller_manager_controllers(without_kcm)
            uids, at_update = await uids_and_update_revision(client, ns)
            assert len(at_update) < replicas, "the rollout ended before the hand-over"
            kept.update({n: uids[n] for n in at_update})
            first = ManagerProcess(cluster, ns, LEASE, f"a-{suffix}", tmp_path, controllers=[NAME])
            processes.append(first)
            taken = datetime.now(UTC)

            # Mid-rollout again, KCM takes it back and finishes.
            await poll(
                lambda: creates_by(lambda e: sent_by(e, first.user_agent), taken) >= 2,
                within=WITHIN,
                interval=0.05,
                message=lambda: f"kcontrol never replaced a pod\n{logs()}",
            )
            first.signal(signal.SIGTERM)
            assert await first.wait(WITHIN) == 0, first.log()[-3000:]
            uids, at_update = await uids_and_update_revision(client, ns)
            assert len(at_update) < replicas, "the rollout ended before the hand-back"
            kept.update({n: uids[n] for n in at_update})
            await cluster.set_controller_manager_controllers(original)
            given_back = datetime.now(UTC)
            await wait_settled(client, ns, replicas, logs)
            rolled_out = datetime.now(UTC)

            # At rest, no template change: kcontrol takes over and KCM takes back; nobody
            # writes anything.
            settled, _ = await uids_and_update_revision(client, ns)
            quiet_from = datetime.now(UTC)
            await cluster.set_controller_manager_controllers(without_kcm)
            second = ManagerProcess(cluster, ns, LEASE, f"b-{suffix}", tmp_path, controllers=[NAME])
            processes.append(second)
            await wait_holder(client, ns, second, logs())
            await wait_synced(second, "statefulset", logs)
            await asyncio.sleep(QUIET)
            assert (await uids_and_update_revision(client, ns))[0] == settled
            second.signal(signal.SIGTERM)
            assert await second.wait(WITHIN) == 0, second.log()[-3000:]
            await cluster.set_controller_manager_controllers(original)
            await asyncio.sleep(QUIET)
            quiet_to = datetime.now(UTC)
            final, _ = await uids_and_update_revision(client, ns)
            assert final == settled, "a pod was replaced in a hand-over at rest"
    finally:
        if cluster.controllers != original:
            await cluster.set_controller_manager_controllers(original)

    writes = read_pod_writes(audit_log, ns)
    violations = ordering_violations(writes, SET, updates=(retemplated, rolled_out, replicas))
    assert violations == [], "\n".join(violations[:20])
    names = [f"{SET}-{i}" for i in range(replicas)]
    creates = [w.name for w in writes if w.verb == "create" and w.succeeded]
    assert sorted(creates) == sorted(names * 2), "a pod was created more or less than once"
    lost = {n: uid for n, uid in kept.items() if final.get(n) != uid}
    assert lost == {}, f"pods at the update revision replaced after a hand-over: {lost}"
    touched = writes_in(audit_log, ns, quiet_from, quiet_to)
    assert touched == [], describe(touched)
    events = successful_writes(read_audit_log(audit_log, ns))
    revisions = [e for e in events if e.resource == "controllerrevisions"]
    assert [e.verb for e in revisions] == ["create", "create"], describe(revisions)
    ours = [e for e in events if e.resource == "pods" and sent_by(e, first.user_agent)]
    assert any(e.verb == "create" for e in ours), "kcontrol replaced no pod"
    kcm_after = [
        e for e in events if e.resource == "pods" and by_kcm(e) and e.received > given_back
    ]
    assert any(e.verb == "create" for e in kcm_after), "KCM replaced no pod after the hand-back"
    strangers = [
        e
        for e in events
        if e.resource == "pods"
        and e.verb in ("create", "delete")
        and not by_kcm(e)
        and not any(sent_by(e, p.user_agent) for p in processes)
        and not e.user_agent.startswith(KWOK_AGENT)
    ]
    assert strangers == [], describe(strangers)
    await check_claims(client, ns, replicas, audit_log)
    print(
        f"pods replaced by KCM {creates_by(by_kcm, retemplated)}, by kcontrol "
        f"{creates_by(lambda e: sent_by(e, first.user_agent), retemplated)}; "
        f"{len(kept)} pods at the update revision kept across the hand-overs"
    )


HTML_ANNOTATION = {"example.com/run": "start <db> && tail -f log > out"}
"""In the scale-down test's template: Go escapes ``<``, ``>`` and ``&`` in JSON, so the
revision kcontrol records must hold Go's bytes for KCM to take it as its own."""


@pytest.mark.timeout(420)
async def test_takeover_both_ways_mid_scale_down_keeps_the_order(
    cluster: Cluster, cluster_namespace: str, client: ApiClient, audit_log: Path, tmp_path: Path
) -> None:
    """kcontrol makes the set (6 pods) and scales it to 1; after its second delete KCM takes
    over, after KCM's first delete kcontrol takes back and finishes; then, at rest, KCM
    takes over once more. No pod is created after the scale-down starts, none is deleted
    while a higher ordinal exists, no claim is deleted, kcontrol's one ControllerRevision
    is the only one (KCM takes it as its own), and in the hand-over at rest nobody writes
    anything."""
    ns = cluster_namespace
    replicas = 6
    suffix = uuid.uuid4().hex[:6]
    original = cluster.controllers
    without_kcm = (*original, f"-{NAME}")
    tail = AuditTail(audit_log, ns)

    def deletes_by(agent: Callable[[AuditEvent], bool], after: datetime) -> int:
        return sum(
            1
            for e in successful_writes(tail.refresh())
            if (e.resource, e.subresource, e.verb) == ("pods", "", "delete")
            and e.received > after
            and agent(e)
        )

    await make_volumes(client, ns, replicas)
    set_ = stateful_set(replicas)
    set_["spec"]["template"]["metadata"]["annotations"].update(HTML_ANNOTATION)
    await cluster.set_controller_manager_controllers(without_kcm)
    try:
        with manager_processes() as processes:

            def logs() -> str:
                return logs_of(processes)

            first = ManagerProcess(cluster, ns, LEASE, f"a-{suffix}", tmp_path, controllers=[NAME])
            processes.append(first)
            await client.create(STATEFULSETS, set_, namespace=ns)
            made = await wait_settled(client, ns, replicas, logs)

            # kcontrol scales down; after two deletes, KCM takes over.
            scaled_down = datetime.now(UTC)
            await client.patch(STATEFULSETS, SET, {"spec": {"replicas": 1}}, namespace=ns)
            await poll(
                lambda: deletes_by(lambda e: sent_by(e, first.user_agent), scaled_down) >= 2,
                within=WITHIN,
                interval=0.05,
                message=lambda: f"kcontrol deleted no two pods\n{logs()}",
            )
            first.signal(signal.SIGTERM)
            assert await first.wait(WITHIN) == 0, first.log()[-3000:]
            await cluster.set_controller_manager_controllers(original)
            given = datetime.now(UTC)

            # After KCM's first delete, kcontrol takes back and finishes.
            await poll(
                lambda: deletes_by(by_kcm, given) >= 1,
                within=WITHIN,
                interval=0.05,
                message="KCM deleted no pod",
            )
            await cluster.set_controller_manager_controllers(without_kcm)
            second = ManagerProcess(cluster, ns, LEASE, f"b-{suffix}", tmp_path, controllers=[NAME])
            processes.append(second)
            await wait_settled(client, ns, 1, logs)
            assert deletes_by(lambda e: sent_by(e, second.user_agent), given) >= 1, logs()

            # At rest: KCM takes over; nobody writes anything.
            settled, _ = await uids_and_update_revision(client, ns)
            await wait_synced(second, "statefulset", logs)
            quiet_from = datetime.now(UTC)
            second.signal(signal.SIGTERM)
            assert await second.wait(WITHIN) == 0, second.log()[-3000:]
            await cluster.set_controller_manager_controllers(original)
            await asyncio.sleep(QUIET)
            quiet_to = datetime.now(UTC)
            final = await wait_settled(client, ns, 1, logs)
            assert (await uids_and_update_revision(client, ns))[0] == settled
    finally:
        if cluster.controllers != original:
            await cluster.set_controller_manager_controllers(original)

    writes = read_pod_writes(audit_log, ns)
    violations = ordering_violations(writes, SET, scale_down_since=scaled_down)
    assert violations == [], "\n".join(violations[:20])
    assert pod_creates_after(audit_log, ns, scaled_down) == []
    touched = writes_in(audit_log, ns, quiet_from, quiet_to)
    assert touched == [], describe(touched)
    events = successful_writes(read_audit_log(audit_log, ns))
    revisions = [e for e in events if e.resource == "controllerrevisions"]
    assert [e.verb for e in revisions] == ["create"], describe(revisions)
    assert sent_by(revisions[0], first.user_agent), describe(revisions)
    revision = made["status"]["updateRevision"]
    assert final["status"]["updateRevision"] == final["status"]["currentRevision"] == revision
    await check_claims(client, ns, replicas, audit_log)
    print(
        f"deletes by kcontrol {deletes_by(lambda e: sent_by(e, first.user_agent), scaled_down)}"
        f" + {deletes_by(lambda e: sent_by(e, second.user_agent), given)}, by KCM "
        f"{deletes_by(by_kcm, given)}; revision {revision} kept"
    )


# -- the checks themselves --------------------------------------------------------------------


def test_the_audit_checks_flag_each_ordering_violation(tmp_path: Path) -> None:
    """The checks on a made-up audit log of a set ``web`` (times in seconds): one violation
    of each kind is flagged, and writes whose timing is ambiguous (received while the write
    they depend on was being answered) are not."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    ns = "ns"
    lines: list[str] = []

    def write(
        t: float,
        verb: str,
        name: str,
        *,
        uid: str = "",
        ready: bool = False,
        code: int = 200,
        by: str = "kcontrol-manager/x/statefulset-controller",
        took: float = 0.01,
        resource: str = "pods",
    ) -> None:
        pod = {
            "kind": "Pod",
            "metadata": {"name": name, "uid": uid},
            "status": {
                "phase": "Running" if ready else "Pending",
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }
        stamp = (start + timedelta(seconds=t)).isoformat().replace("+00:00", "Z")
        done = (start + timedelta(seconds=t + took)).isoformat().replace("+00:00", "Z")
        status_write = verb == "patch"
        event: dict[str, Any] = {
            "stage": "ResponseComplete",
            "verb": verb,
            "objectRef": {
                "resource": resource,
                "namespace": ns,
                "name": name,
                **({"subresource": "status"} if status_write else {}),
            },
            "responseStatus": {"code": code},
            "requestReceivedTimestamp": stamp,
            "stageTimestamp": done,
            "userAgent": "kwok/v0.8.0" if status_write else by,
            "user": {"username": "admin"},
        }
        if uid and code < 300:
            event["responseObject"] = pod
        lines.append(json.dumps(event))

    def create(t: float, name: str, uid: str, code: int = 201) -> None:
        write(t, "create", name, uid=uid, code=code)

    def ready(t: float, name: str, uid: str, took: float = 0.01) -> None:
        write(t, "patch", name, uid=uid, ready=True, took=took)

    def delete(t: float, name: str, *, kwok: bool = False, took: float = 0.01) -> None:
        write(t, "delete", name, by="kwok/v0.8.0" if kwok else "kcm", took=took)

    # scale up to 4
    create(0, "web-0", "a0")
    ready(1, "web-0", "a0")
    create(2, "web-1", "a1")
    create(2.5, "web-2", "a2")  # FLAGGED: web-1 not ready yet
    ready(2.8, "web-2", "a2")
    ready(3.0, "web-1", "a1", took=0.3)
    create(3.1, "web-3", "a3")  # web-1's ready write was received before: not flagged
    ready(4, "web-3", "a3")
    # rolling update from the top, replicas 4
    delete(5, "web-3")
    delete(5.5, "web-3", kwok=True)
    create(6, "web-3", "b3")
    delete(6.2, "web-2")  # FLAGGED: web-3 (b3) not ready yet
    delete(6.7, "web-2", kwok=True)
    ready(7, "web-3", "b3")
    create(7.5, "web-2", "b2")
    ready(8, "web-2", "b2")
    # scale down to 1
    delete(10.5, "web-3")
    delete(11, "web-2")  # FLAGGED: web-3 not removed yet
    delete(11.5, "web-3", kwok=True)
    delete(11.7, "web-2", kwok=True)
    delete(12, "web-1")
    create(12.3, "web-1", "", code=409)  # FLAGGED: web-1 terminating
    delete(13, "web-1", kwok=True, took=0.2)
    create(13.1, "web-1", "c1")  # web-1's removal was received before: not flagged
    write(14, "delete", "data-web-1", resource="persistentvolumeclaims")  # FLAGGED
    log = tmp_path / "audit.log"
    log.write_text("\n".join(lines) + "\n")

    def at(t: float) -> datetime:
        return start + timedelta(seconds=t)

    found = ordering_violations(
        read_pod_writes(log, ns), "web", updates=(at(5), at(9), 4), scale_down_since=at(10)
    )
    flagged = sorted(
        (line.split(": ", 1)[0], line.split(": ", 1)[1].split(" ")[0]) for line in found
    )
    assert flagged == sorted(
        [
            ("created before web-1 was Running and Ready", at(2.5).isoformat()),
            ("updated before web-3 was Running and Ready", at(6.2).isoformat()),
            ("scaled down while web-3 existed", at(11).isoformat()),
            ("created while its predecessor was terminating", at(12.3).isoformat()),
        ]
    ), found
    assert len(claim_deletes(log, ns)) == 1
