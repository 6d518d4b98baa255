"""Takeover (issue 11, section 2): kcontrol's controllers take over Deployments that
kube-controller-manager's own controllers (same Kubernetes release) created and rolled, and
hand them back.

20 Deployments of 3 replicas, in every state a takeover meets:

========================  =====  ===========================================================
kind                      count  state at the switch
========================  =====  ===========================================================
``rolling``               5      RollingUpdate, complete after one more rollout
``recreate``              3      Recreate, complete after one more rollout
``rollback``              2      RollingUpdate, rolled forward then back to the template
                                 before (its old ReplicaSet reused, revision bumped)
``paused``                3      paused, with a template change pending (no ReplicaSet for it)
``paused-mid``            1      paused in the middle of a rollout (new pods never ready)
``stuck``                 4      RollingUpdate mid-rollout: new pods never become ready, so
                                 it rests at 2 old + 2 new pods
``recreate-stuck``        2      Recreate mid-rollout: old scaled to 0, 3 new pods never ready
========================  =====  ===========================================================

KCM (all its controllers) creates them and brings them there; its deployment and replicaset
controllers stop; kcontrol's start (in process, as kcontrol-manager runs them: one manager, or
three replicas of ``kcontrol-manager --shards=3`` - issue 24 - which share the shards as they
come up, so the namespace's shard may change hands while they sync). Checked
across the switch, from a snapshot just before the old controllers stop to one after the new
ones have synced (a sentinel Deployment elsewhere has completed, every Deployment and
ReplicaSet key has gone through kcontrol's queues) and the namespace has been quiet:

- not one pod UID changed, and the apiserver's audit log shows no pod or ReplicaSet created or
  deleted in the namespace in that window;
- every ReplicaSet (UID, replicas, revision annotations, status) and every Deployment
  (generation, revision, paused, status counts, each condition with its reason, message and
  times) is exactly as the old controllers left it: revisions and conditions continue. (In
  practice neither side writes anything at all in that window.)

Then the new controllers roll every Deployment once more (a new template; the paused ones are
resumed, the stuck ones given ready pods): all complete, each on exactly one new ReplicaSet
created by the new controllers with the next revision (old revision + 1), nothing deleted,
no ReplicaSet, pod or Deployment status written by anyone else, and the Available condition
of every RollingUpdate Deployment still carries the lastTransitionTime KCM gave it when the
Deployment first completed. kcontrol then brings the Deployments into the same mix of
states, and the same checks run for the way back: kcontrol stops, KCM's controllers start
and roll once more.

The namespace is the takeover's whole world: writes are read from the apiserver's audit log
(:mod:`tests.dropin.dropin_helpers`), where KCM's controllers and kcontrol-manager are told
apart by user agent. The module's apiserver serves shard selectors (feature gate
ShardedListAndWatch), so the sharded replicas' caches hold their shards only.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kcontrol.client import DEPLOYMENTS, NAMESPACES, PODS, REPLICASETS, ApiClient, Object
from kcontrol.envtest.cluster import (
    ALL_CONTROLLERS,
    BEHAVIOR_LABEL,
    BEHAVIOR_NEVER_READY,
    WITHOUT_WORKLOAD_CONTROLLERS,
    Cluster,
)
from kcontrol.errors import KcontrolError
from kcontrol.manager import Manager
from kcontrol_controllers.deployment import SPEC as DEPLOYMENT_SPEC
from kcontrol_controllers.replicaset import SPEC as REPLICASET_SPEC
from tests.controllers.cluster_helpers import (
    REVISION,
    active,
    complete,
    condition,
    deployment,
    is_ready,
    running_managers,
)
from tests.dropin.dropin_helpers import (
    KCM_DEPLOYMENT_AGENT,
    KCM_REPLICASET_AGENT,
    NO_SECURE_SERVING,
    AuditEvent,
    describe,
    kcontrol_agent,
    read_audit_log,
    sent_by,
    start_audited_cluster,
    successful_writes,
)
from tests.integration.helpers import poll

pytestmark = [pytest.mark.slow, pytest.mark.integration]

REPLICAS = 3
KINDS = {
    "rolling": 5,
    "recreate": 3,
    "rollback": 2,
    "paused": 3,
    "paused-mid": 1,
    "stuck": 4,
    "recreate-stuck": 2,
}
RECREATE = {"type": "Recreate"}
WITHIN = 150.0
"""Seconds any convergence gets: generous, two shared cores run other people's tests too."""
QUIET = 3.0
"""Seconds a namespace must stay unchanged to count as settled (an observation window, not
a bound on anything)."""
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
STUCK_RECREATE_REASONS = ("ReplicaSetUpdated", "NewReplicaSetAvailable")
RS_ANNOTATIONS = (
    REVISION,
    REVISION_HISTORY,
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
)


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    """This module's cluster (audited), its apiserver filtering by shard."""
    cluster, log = start_audited_cluster(
        tmp_path_factory.mktemp("audit"),
        extra_apiserver_args=["--feature-gates=ShardedListAndWatch=true"],
    )
    try:
        yield cluster, log
    finally:
        cluster.stop()


@pytest.fixture
async def sentinel_namespace(cluster: Cluster, client: ApiClient) -> AsyncIterator[str]:
    """A second namespace, for Deployments that prove a controller is up and synced."""
    name = f"s-{uuid.uuid4().hex[:10]}"
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    await client.create(NAMESPACES, body)
    await cluster.wait_for_service_account(name)
    yield name
    with contextlib.suppress(KcontrolError):
        await client.delete(NAMESPACES, name)


# -- the Deployments -----------------------------------------------------------------------------


@dataclass
class Tracked:
    """One Deployment, the template version the test gave it last and the highest it ever
    gave it (a new version is always a template the Deployment has never had)."""

    name: str
    kind: str
    version: int = 1
    highest: int = 1
    available_since: str = ""
    """lastTransitionTime of the Available condition KCM set when the Deployment first
    completed: with maxUnavailable 1 a RollingUpdate Deployment never becomes unavailable,
    so whoever controls it must keep that condition, time included."""

    def new_version(self) -> int:
        self.highest += 1
        self.version = self.highest
        return self.version

    @property
    def recreate(self) -> bool:
        return self.kind.startswith("recreate")

    def manifest(self) -> Object:
        strategy = RECREATE if self.recreate else None
        return deployment(self.name, REPLICAS, strategy=strategy, image=image(self.version))


def image(version: int) -> str:
    return f"registry.example/app:{version}"


def template(version: int, *, ready: bool = True) -> Object:
    """A template patch: ``version``'s image; pods that never become ready unless ``ready``."""
    labels = {BEHAVIOR_LABEL: None if ready else BEHAVIOR_NEVER_READY}
    return {
        "spec": {
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": image(version)}]},
            }
        }
    }


def paused(value: bool) -> Object:
    return {"spec": {"paused": value}}


def tracked_deployments() -> list[Tracked]:
    return [
        Tracked(f"{kind}-{index}", kind) for kind, count in KINDS.items() for index in range(count)
    ]


# -- reading the namespace -----------------------------------------------------------------------


@dataclass
class State:
    """The namespace's Deployments, ReplicaSets and pods at one moment."""

    deployments: dict[str, Object]
    replicasets: dict[str, Object]
    pods: dict[str, Object]
    taken: float = field(default_factory=time.monotonic)

    def owned(self, name: str) -> list[Object]:
        """Deployment ``name``'s ReplicaSets, oldest revision first."""
        uid = self.deployments[name]["metadata"]["uid"]
        sets = [
            rs
            for rs in self.replicasets.values()
            if any(
                ref.get("controller") and ref["uid"] == uid
                for ref in rs["metadata"].get("ownerReferences") or []
            )
        ]
        return sorted(sets, key=lambda rs: int(rs["metadata"]["annotations"].get(REVISION, "0")))

    def revision(self, name: str) -> int:
        return int(self.deployments[name]["metadata"].get("annotations", {}).get(REVISION, "0"))

    def summary(self) -> dict[str, Any]:
        """Everything a takeover must leave alone, in comparable form."""
        result: dict[str, Any] = {}
        for name, d in sorted(self.deployments.items()):
            status = dict(d.get("status") or {})
            conditions = status.pop("conditions", [])
            result[f"deployment {name}"] = {
                "uid": d["metadata"]["uid"],
                "generation": d["metadata"]["generation"],
                "revision": d["metadata"].get("annotations", {}).get(REVISION),
                "paused": d["spec"].get("paused", False),
                "status": status,
                "conditions": {c["type"]: c for c in conditions},
            }
        for rs in self.replicasets.values():
            annotations = rs["metadata"].get("annotations") or {}
            result[f"replicaset {rs['metadata']['name']}"] = {
                "uid": rs["metadata"]["uid"],
                "generation": rs["metadata"]["generation"],
                "replicas": rs["spec"].get("replicas"),
                "annotations": {key: annotations.get(key) for key in RS_ANNOTATIONS},
                "status": rs.get("status") or {},
            }
        result["pods"] = sorted(
            (pod["metadata"]["uid"], pod["metadata"]["name"], is_ready(pod))
            for pod in self.pods.values()
        )
        return result


async def read_state(client: ApiClient, namespace: str) -> State:
    deployments = await client.list(DEPLOYMENTS, namespace=namespace)
    replicasets = await client.list(REPLICASETS, namespace=namespace)
    pods = await client.list(PODS, namespace=namespace)
    return State(
        {d["metadata"]["name"]: d for d in deployments["items"]},
        {rs["metadata"]["name"]: rs for rs in replicasets["items"]},
        {pod["metadata"]["name"]: pod for pod in pods["items"]},
    )


def observed(d: Object) -> bool:
    seen: int = (d.get("status") or {}).get("observedGeneration", 0)
    generation: int = d["metadata"]["generation"]
    return seen >= generation


def resting_mid_rollout(d: Object, *, recreate: bool) -> bool:
    """Where a rollout to pods that never become ready stops: RollingUpdate with maxSurge 1
    and maxUnavailable 1 at 2 old + 2 new pods, Recreate at 0 old + 3 new."""
    status = d.get("status") or {}
    if recreate:
        expected = {"replicas": 3, "updatedReplicas": 3, "availableReplicas": 0}
    else:
        expected = {"replicas": 4, "updatedReplicas": 2, "availableReplicas": 2}
    return observed(d) and all(status.get(k, 0) == v for k, v in expected.items())


def settled(state: State) -> bool:
    """Every object observed by its controller and every ReplicaSet at its size."""
    if not all(observed(d) for d in state.deployments.values()):
        return False
    for rs in state.replicasets.values():
        status = rs.get("status") or {}
        if status.get("observedGeneration") != rs["metadata"]["generation"]:
            return False
        if status.get("replicas", 0) != rs["spec"].get("replicas"):
            return False
    live = active(list(state.pods.values()))
    return len(live) == len(state.pods)  # nothing terminating


async def wait_until(
    client: ApiClient,
    namespace: str,
    what: str,
    predicate: Callable[[State], bool],
) -> State:
    latest: dict[str, State] = {}

    async def check() -> bool:
        latest["state"] = await read_state(client, namespace)
        return predicate(latest["state"])

    def why() -> str:
        state = latest.get("state")
        if state is None:
            return what
        statuses = {name: d.get("status") for name, d in state.deployments.items()}
        return f"{what}; Deployments: {statuses}"

    await poll(check, within=WITHIN, interval=0.5, message=why)
    return latest["state"]


async def wait_quiet(client: ApiClient, namespace: str) -> State:
    """Until the namespace is settled and unchanged for :data:`QUIET` seconds."""
    previous: dict[str, Any] = {}

    async def quiet() -> bool:
        state = await read_state(client, namespace)
        if not settled(state):
            previous.clear()
            return False
        summary = state.summary()
        if previous.get("summary") != summary:
            previous.update(summary=summary, since=state.taken, state=state)
            return False
        since: float = previous["since"]
        return state.taken - since >= QUIET

    await poll(quiet, within=WITHIN, interval=0.5, message="the namespace never settled")
    result: State = previous["state"]
    return result


# -- the controllers -----------------------------------------------------------------------------


class Controllers:
    """Whose deployment and replicaset controllers run: KCM's or kcontrol's (in process, one
    manager or ``shards`` replicas of a sharded one)."""

    def __init__(self, cluster: Cluster, shards: int) -> None:
        self.cluster = cluster
        self.shards = shards
        self._stack: contextlib.AsyncExitStack | None = None
        self.managers: list[Manager] = []
        self.name = "nobody"

    def wrote(self, event: AuditEvent) -> bool:
        """Whether the controllers running now sent this request."""
        agent = event.user_agent
        if self.managers:
            return any(sent_by(event, kcontrol_agent(m.identity)) for m in self.managers)
        return agent.startswith("kube-controller-manager/") and agent.endswith(
            (KCM_DEPLOYMENT_AGENT, KCM_REPLICASET_AGENT)
        )

    async def start_kcm(self) -> None:
        await self.cluster.set_controller_manager_controllers(ALL_CONTROLLERS)
        self.name = "kube-controller-manager"

    async def stop_kcm(self) -> None:
        await self.cluster.set_controller_manager_controllers(WITHOUT_WORKLOAD_CONTROLLERS)
        self.name = "nobody"

    async def start_kcontrol(self) -> None:
        stack = contextlib.AsyncExitStack()
        self.managers = await stack.enter_async_context(
            running_managers(
                self.cluster,
                DEPLOYMENT_SPEC,
                REPLICASET_SPEC,
                shards=self.shards,
                **NO_SECURE_SERVING,
            )
        )
        self._stack = stack
        self.name = "kcontrol" if self.shards == 1 else f"kcontrol ({self.shards} shards)"

    async def stop_kcontrol(self) -> None:
        if self._stack is not None:
            stack, self._stack, self.managers = self._stack, None, []
            await stack.aclose()
        self.name = "nobody"

    async def wait_synced(
        self, client: ApiClient, sentinel_namespace: str, keys: dict[str, int]
    ) -> None:
        """Until the controllers are up and have synced: a new Deployment in the sentinel
        namespace completes, and (kcontrol) at least ``keys[queue]`` keys went through each
        queue, now empty in every replica that runs it (sharded, the namespaces fall in
        shards any replica may hold, so the keys are counted over all of them)."""
        name = f"sentinel-{uuid.uuid4().hex[:6]}"
        await client.create(DEPLOYMENTS, deployment(name, 1), namespace=sentinel_namespace)

        async def sentinel_complete() -> bool:
            d = await client.get(DEPLOYMENTS, name, namespace=sentinel_namespace)
            return complete(d)

        await poll(
            sentinel_complete,
            within=WITHIN,
            interval=0.3,
            message=f"{self.name} never completed the sentinel Deployment",
        )
        if not self.managers:
            return
        registries = [manager.registry for manager in self.managers]

        def drained() -> bool:
            for queue, count in keys.items():
                labels = {"name": queue}
                adds = sum(
                    r.get_sample_value("workqueue_adds_total", labels) or 0 for r in registries
                )
                depths = [r.get_sample_value("workqueue_depth", labels) for r in registries]
                running = [depth for depth in depths if depth is not None]
                if adds < count or not running or any(running):
                    return False
            return True

        await poll(drained, within=WITHIN, interval=0.2, message="kcontrol's queues never drained")


# -- phases --------------------------------------------------------------------------------------


def stamp() -> datetime:
    return datetime.now(UTC)


def window(events: list[AuditEvent], start: datetime, end: datetime) -> list[AuditEvent]:
    return [event for event in successful_writes(events) if start <= event.received <= end]


async def arrange(client: ApiClient, namespace: str, tracked: list[Tracked]) -> State:
    """Bring every Deployment into its kind's state (module docstring) with whichever
    controllers run, and wait until the namespace is quiet."""
    previous = {t.name: t.version for t in tracked}
    for t in tracked:
        t.new_version()
        if t.kind in ("rolling", "recreate", "rollback"):
            await client.patch(DEPLOYMENTS, t.name, template(t.version), namespace=namespace)
        elif t.kind == "paused":
            await client.patch(DEPLOYMENTS, t.name, paused(True), namespace=namespace)
        else:  # paused-mid, stuck, recreate-stuck
            body = template(t.version, ready=False)
            await client.patch(DEPLOYMENTS, t.name, body, namespace=namespace)

    def first(state: State) -> bool:
        for t in tracked:
            d = state.deployments[t.name]
            if t.kind in ("rolling", "recreate", "rollback"):
                ok = complete(d)
            elif t.kind == "paused":
                ok = observed(d)
            else:
                ok = resting_mid_rollout(d, recreate=t.recreate)
            if not ok:
                return False
        return True

    await wait_until(client, namespace, "first steps never done", first)
    for t in tracked:
        if t.kind == "rollback":  # back to the template before: its ReplicaSet comes back
            t.version = previous[t.name]
            await client.patch(DEPLOYMENTS, t.name, template(t.version), namespace=namespace)
        elif t.kind == "paused":  # a change that waits for the resume
            await client.patch(DEPLOYMENTS, t.name, template(t.version), namespace=namespace)
        elif t.kind == "paused-mid":
            await client.patch(DEPLOYMENTS, t.name, paused(True), namespace=namespace)

    def second(state: State) -> bool:
        for t in tracked:
            d = state.deployments[t.name]
            if t.kind == "rollback" and not complete(d):
                return False
            if t.kind.startswith("paused") and not observed(d):
                return False
        return True

    await wait_until(client, namespace, "second steps never done", second)
    state = await wait_quiet(client, namespace)
    check_arranged(state, tracked)
    return state


def check_arranged(state: State, tracked: list[Tracked]) -> None:
    """The mix really is what the module docstring promises (the switch is tested on it)."""
    for t in tracked:
        d = state.deployments[t.name]
        status = d.get("status") or {}
        progressing = condition(d, "Progressing") or {}
        if t.kind in ("rolling", "recreate", "rollback"):
            assert complete(d), (t.name, status)
            assert progressing.get("reason") == "NewReplicaSetAvailable", (t.name, progressing)
        elif t.kind == "paused":
            assert d["spec"]["paused"], t.name
            assert status.get("updatedReplicas", 0) == 0, (t.name, status)  # change pending
            assert progressing.get("reason") == "DeploymentPaused", (t.name, progressing)
        else:
            assert resting_mid_rollout(d, recreate=t.recreate), (t.name, status)
            if t.kind == "paused-mid":
                assert d["spec"]["paused"], t.name
                assert progressing.get("reason") == "DeploymentPaused", (t.name, progressing)
            elif t.kind == "stuck":
                assert progressing.get("reason") == "ReplicaSetUpdated", (t.name, progressing)
            else:
                # Upstream's syncRolloutStatus updates Progressing only while status.replicas
                # differs from updatedReplicas or the condition is not NewReplicaSetAvailable
                # yet. A Recreate rollout passes through replicas == updatedReplicas (0 == 0
                # once the old pods are gone, 3 == 3 after), so whether the condition moved to
                # ReplicaSetUpdated depends on whether a sync saw the old pods half gone -
                # timing, in KCM as in kcontrol. Either way the switch must keep it as is.
                assert progressing.get("reason") in STUCK_RECREATE_REASONS, (t.name, progressing)
        if t.kind == "rollback":
            owned = state.owned(t.name)
            newest = owned[-1]["metadata"]["annotations"]
            assert REVISION_HISTORY in newest, (t.name, newest)  # an old ReplicaSet came back


async def switch(
    client: ApiClient,
    namespace: str,
    sentinel_namespace: str,
    audit_log: Path,
    controllers: Controllers,
    stop: Callable[[], Any],
    start: Callable[[], Any],
) -> State:
    """Stop the running controllers, start the others, wait until they have synced and the
    namespace is quiet; check that nothing changed."""
    started = stamp()
    before = await read_state(client, namespace)
    await stop()
    await start()
    keys = {"deployment": len(before.deployments), "replicaset": len(before.replicasets)}
    await controllers.wait_synced(client, sentinel_namespace, keys)
    after = await wait_quiet(client, namespace)
    ended = stamp()

    writes = window(read_audit_log(audit_log, namespace), started, ended)
    churn = [
        w
        for w in writes
        if w.resource in ("pods", "replicasets")
        and not w.subresource
        and w.verb in ("create", "delete", "deletecollection")
    ]
    assert churn == [], (
        f"pods or ReplicaSets created or deleted when {controllers.name} took over:\n"
        f"{describe(churn)}"
    )
    assert uids(after) == uids(before), "pod UIDs changed"
    print(
        f"{controllers.name} took over {len(before.deployments)} Deployments, "
        f"{len(before.replicasets)} ReplicaSets, {len(before.pods)} pods; writes meanwhile:\n"
        f"{describe(writes)}"
    )
    changed = diff(before.summary(), after.summary())
    assert changed == [], (
        f"{controllers.name} changed what it took over:\n" + "\n".join(changed) + "\n"
        f"writes in the window:\n{describe(writes)}"
    )
    return after


def uids(state: State) -> set[str]:
    return {pod["metadata"]["uid"] for pod in state.pods.values()}


def diff(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    lines = []
    for key in sorted(before.keys() | after.keys()):
        if before.get(key) != after.get(key):
            lines.append(f"{key}:\n  before {before.get(key)}\n  after  {after.get(key)}")
    return lines


async def roll_once_more(
    client: ApiClient,
    namespace: str,
    audit_log: Path,
    controllers: Controllers,
    tracked: list[Tracked],
    before: State,
) -> State:
    """A new rollout of every Deployment, completed by the controllers now running: one new
    ReplicaSet each, at the next revision, created by them; nothing deleted."""
    started = stamp()
    for t in tracked:
        if t.kind == "paused":  # its pending change rolls out
            await client.patch(DEPLOYMENTS, t.name, paused(False), namespace=namespace)
            continue
        body = template(t.new_version())
        if t.kind == "paused-mid":
            body["spec"]["paused"] = False
        await client.patch(DEPLOYMENTS, t.name, body, namespace=namespace)

    def done(state: State) -> bool:
        return all(complete(state.deployments[t.name]) for t in tracked)

    await wait_until(client, namespace, f"{controllers.name} never completed the rollouts", done)
    after = await wait_quiet(client, namespace)
    ended = stamp()

    for t in tracked:
        d = after.deployments[t.name]
        assert after.revision(t.name) == before.revision(t.name) + 1, (
            t.name,
            before.revision(t.name),
            after.revision(t.name),
        )
        owned = after.owned(t.name)
        assert len(owned) == len(before.owned(t.name)) + 1, (t.name, [o["metadata"] for o in owned])
        newest = owned[-1]
        assert newest["metadata"]["annotations"][REVISION] == str(after.revision(t.name))
        assert [rs["spec"]["replicas"] for rs in owned] == [0] * (len(owned) - 1) + [REPLICAS]
        assert newest["spec"]["template"]["spec"]["containers"][0]["image"] == image(t.version)
        for kind, reason in (("Progressing", "NewReplicaSetAvailable"), ("Available", None)):
            got = condition(d, kind) or {}
            assert got.get("status") == "True", (t.name, kind, got)
            if reason:
                assert got.get("reason") == reason, (t.name, kind, got)
        assert "collisionCount" not in (d.get("status") or {}), (t.name, d["status"])
        if not t.recreate:
            available = condition(d, "Available") or {}
            assert available.get("lastTransitionTime") == t.available_since, (t.name, available)

    writes = window(read_audit_log(audit_log, namespace), started, ended)
    created = [w for w in writes if w.resource == "replicasets" and w.verb == "create"]
    assert len(created) == len(tracked), describe(created, limit=50)
    assert all(controllers.wrote(w) for w in created), describe(created)
    deleted = [w for w in writes if w.resource == "replicasets" and w.verb == "delete"]
    assert deleted == [], describe(deleted)
    controller_writes = [
        w
        for w in writes
        if w.resource == "replicasets"
        or (w.resource == "pods" and w.verb == "create")
        or (w.resource == "deployments" and w.subresource == "status")
    ]
    strangers = [w for w in controller_writes if not controllers.wrote(w)]
    assert strangers == [], f"writes by others than {controllers.name}:\n{describe(strangers)}"
    return after


# -- the test ------------------------------------------------------------------------------------


@pytest.mark.timeout(900)
@pytest.mark.parametrize("shards", [1, 3], ids=["single", "3-shards"])
async def test_takeover_from_kcm_and_back_changes_nothing_and_rollouts_continue(
    shards: int,
    cluster: Cluster,
    cluster_namespace: str,
    sentinel_namespace: str,
    client: ApiClient,
    audit_log: Path,
) -> None:
    ns = cluster_namespace
    tracked = tracked_deployments()
    assert len(tracked) == 20
    controllers = Controllers(cluster, shards)
    try:
        await controllers.start_kcm()
        for t in tracked:
            await client.create(DEPLOYMENTS, t.manifest(), namespace=ns)
        created = await wait_until(
            client,
            ns,
            "KCM never completed the Deployments",
            lambda state: all(complete(state.deployments[t.name]) for t in tracked),
        )
        for t in tracked:
            available = condition(created.deployments[t.name], "Available") or {}
            assert available.get("status") == "True", (t.name, available)
            t.available_since = available["lastTransitionTime"]

        # KCM -> kcontrol
        await arrange(client, ns, tracked)
        after = await switch(
            client,
            ns,
            sentinel_namespace,
            audit_log,
            controllers,
            stop=controllers.stop_kcm,
            start=controllers.start_kcontrol,
        )
        await roll_once_more(client, ns, audit_log, controllers, tracked, after)

        # kcontrol -> KCM
        await arrange(client, ns, tracked)
        after = await switch(
            client,
            ns,
            sentinel_namespace,
            audit_log,
            controllers,
            stop=controllers.stop_kcontrol,
            start=controllers.start_kcm,
        )
        await roll_once_more(client, ns, audit_log, controllers, tracked, after)
    finally:
        await controllers.stop_kcontrol()
        await cluster.set_controller_manager_controllers(WITHOUT_WORKLOAD_CONTROLLERS)
