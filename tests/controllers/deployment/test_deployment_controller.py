"""Wiring, handlers and syncDeployment (upstream deployment_controller_test.go)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from deployment_fixtures import (
    NAMESPACE,
    Fixture,
    controller_ref,
    new_deployment,
    new_replica_set,
    pod_of,
)

from kcontrol.client import DEPLOYMENTS, REPLICASETS, Object, Resource
from kcontrol.errors import ClaimError, Conflict, Forbidden, StaleCache
from kcontrol.informers import DeletedFinalStateUnknown
from kcontrol.labels import Selector, selector_from_label_selector
from kcontrol.testing import Action
from kcontrol_controllers.deployment import QUEUE_NAME, compute_hash
from kcontrol_controllers.deployment._writes import update_deployment_status

HASH = "pod-template-hash"


def key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def bumped(obj: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    new["metadata"]["resourceVersion"] = str(int(obj["metadata"].get("resourceVersion") or 0) + 1)
    return new


# -- syncDeployment ----------------------------------------------------------------------------


async def test_sync_deployment_creates_replica_set() -> None:
    f = Fixture()
    (d,) = f.seed(new_deployment("foo", 1))

    assert await f.sync(d) is None

    assert f.summary() == [
        "create replicasets",
        "update deployments/status",
        "update deployments/status",
    ]
    created = f.writes()[0].object
    assert created is not None
    pod_template_hash = compute_hash(d["spec"]["template"], None)
    assert created["metadata"]["name"] == f"foo-{pod_template_hash}"
    assert created["metadata"]["labels"] == {"foo": "bar", HASH: pod_template_hash}
    assert created["metadata"]["ownerReferences"] == [controller_ref(d)]
    assert created["metadata"]["annotations"] == {
        "deployment.kubernetes.io/revision": "1",
        "deployment.kubernetes.io/desired-replicas": "1",
        "deployment.kubernetes.io/max-replicas": "1",
    }
    assert created["spec"]["replicas"] == 1
    assert created["spec"]["selector"] == {"matchLabels": {"foo": "bar", HASH: pod_template_hash}}
    assert created["spec"]["template"]["metadata"]["labels"] == {
        "foo": "bar",
        HASH: pod_template_hash,
    }
    assert created["spec"]["template"]["spec"] == d["spec"]["template"]["spec"]
    # the revision reaches the Deployment through its status write
    first_status = f.writes()[1].object
    assert first_status is not None
    assert first_status["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert f.recorder.events == [
        f"Normal ScalingReplicaSet Scaled up replica set foo-{pod_template_hash} from 0 to 1"
    ]


async def test_sync_deployment_dont_do_anything_during_deletion() -> None:
    f = Fixture()
    d = new_deployment("foo", 1)
    d["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    d["metadata"]["finalizers"] = ["example.com/hold"]
    f.seed(d)

    await f.sync(d)

    assert f.summary() == ["update deployments/status"]


async def test_sync_deployment_deletion_race() -> None:
    f = Fixture()
    d = new_deployment("foo", 1)
    # The cache says not deleted; the server says it is (and is more up to date).
    live = copy.deepcopy(d)
    live["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    live["metadata"]["finalizers"] = ["example.com/hold"]
    f.seed(d, server=False)
    f.seed(live, cache=False)
    # The recheck only happens when there is a matching orphan to adopt.
    orphan = new_replica_set(d, "rs1", 1, owned=False)
    f.seed(orphan)

    with pytest.raises(ClaimError):
        await f.sync(d)

    assert f.summary() == ["get deployments"]  # only the recheck; nothing adopted or created


async def test_dont_sync_deployments_with_empty_pod_selector() -> None:
    f = Fixture()
    d = new_deployment("foo", 1)
    d["spec"]["selector"] = {}
    d["metadata"]["generation"] = 2
    (d,) = f.seed(d)

    await f.sync(d)

    assert f.summary() == ["update deployments/status"]
    written = f.writes()[0].object
    assert written is not None
    assert written["status"] == {"observedGeneration": 2}
    assert f.recorder.events == [
        "Warning SelectingAll This deployment is selecting all pods. A non-empty selector is "
        "required."
    ]

    # once observed, only the event
    f2 = Fixture()
    d["status"] = {"observedGeneration": 2}
    (d,) = f2.seed(d)
    await f2.sync(d)
    assert f2.summary() == []
    assert len(f2.recorder.events) == 1


async def test_reentrant_rollback() -> None:
    f = Fixture()
    d = new_deployment("foo", 1)
    d["metadata"]["annotations"] = {
        "deployment.kubernetes.io/revision": "2",
        "deprecated.deployment.rollback.to": "0",
    }
    rs1 = new_replica_set(d, "deploymentrs-old", 0, revision=1)
    rs1["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
    rs1["spec"]["selector"]["matchLabels"][HASH] = "hash"
    rs2 = new_replica_set(d, "deploymentrs-new", 1, revision=2)
    rs2["spec"]["selector"]["matchLabels"][HASH] = "hash"
    d, _, _ = f.seed(d, rs1, rs2)

    await f.sync(d)

    # Rollback is done here; no update on replica sets though.
    assert f.summary() == ["update deployments"]
    updated = f.writes()[0].object
    assert updated is not None
    assert "deprecated.deployment.rollback.to" not in updated["metadata"]["annotations"]
    assert updated["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 1


async def test_sync_of_a_deleted_deployment_does_nothing() -> None:
    f = Fixture()
    assert await f.dc.sync(f"{NAMESPACE}/gone") is None
    assert f.summary() == []


async def test_conflict_is_an_error_that_counts_toward_max_retries() -> None:
    # upstream handleErr: a 409 from a write is retried like any error, and after 15 retries
    # the key is dropped until its next event.
    f = Fixture()
    d = new_deployment("foo", 1)
    f.seed(d, new_replica_set(d, "foo-new", 1))

    def conflict(action: Action) -> None:
        if action.verb not in ("get", "list", "watch"):
            raise Conflict("the object has been modified")

    f.client.prepend_reactor("*", "*", conflict)
    with pytest.raises(Conflict):
        await f.sync(d)

    queue = f.dc.controller.queue
    for retries in range(1, 16):
        await f.dc.controller._process(key(d))
        assert queue.num_requeues(key(d)) == retries
    await f.dc.controller._process(key(d))
    assert queue.num_requeues(key(d)) == 0  # dropped (forgotten) after the 15th retry


async def test_no_write_over_the_controllers_own_last_write() -> None:
    """A sync on a cache that has not yet seen the controller's own last write of the
    Deployment sends no write the server would refuse with 409: it ends quietly (no error,
    no retry), and the sync that the informer's event for that write triggers goes on."""
    f = Fixture()
    (d,) = f.seed(new_deployment("foo", 1))
    assert await f.sync(d) is None
    assert f.summary()[0] == "create replicasets"
    assert "update deployments/status" in f.summary()
    for replica_set in f.client.tracker.list(REPLICASETS, namespace=NAMESPACE)["items"]:
        f.informers.for_resource(REPLICASETS).indexer.update(replica_set)
    f.client.clear_actions()

    assert await f.sync(d) is None  # the cache still holds the Deployment as it was
    assert f.writes() == []
    assert f.dc.controller.queue.num_requeues(key(d)) == 0

    stored = f.client.tracker.get(DEPLOYMENTS, "foo", namespace=NAMESPACE)
    f.informers.for_resource(DEPLOYMENTS).indexer.update(copy.deepcopy(stored))
    f.dc.update_deployment(d, stored)
    assert await f.queued() == [key(d)]  # the event of the own write syncs it again
    assert await f.sync(d) is None  # on the current version: any write goes through


async def test_no_replica_set_patch_over_the_controllers_own_last_scale() -> None:
    """The same for a ReplicaSet: a sync on a cache that has not yet seen the controller's
    own last scale of the ReplicaSet sends no patch the server would refuse with 409 (the
    sync ends quietly), and the informer's event for that scale syncs the Deployment again,
    which then scales it."""
    f = Fixture()
    (d,) = f.seed(new_deployment("foo", 1))

    def deliver(resource: Resource) -> None:
        for obj in f.client.tracker.list(resource, namespace=NAMESPACE)["items"]:
            f.informers.for_resource(resource).indexer.update(copy.deepcopy(obj))

    def scale_to(replicas: int) -> Object:
        stored = f.client.tracker.get(DEPLOYMENTS, "foo", namespace=NAMESPACE)
        stored["spec"]["replicas"] = replicas
        f.client.tracker.update(DEPLOYMENTS, stored)
        deliver(DEPLOYMENTS)
        return f.client.tracker.get(DEPLOYMENTS, "foo", namespace=NAMESPACE)

    assert await f.sync(d) is None  # creates the ReplicaSet
    deliver(REPLICASETS)
    d = scale_to(3)
    f.client.clear_actions()
    assert await f.sync(d) is None
    assert "patch replicasets" in f.summary()  # scaled to 3; the cache has not seen it
    (stale,) = f.informers.lister(REPLICASETS).list()
    assert stale["spec"]["replicas"] == 1

    d = scale_to(5)
    f.client.clear_actions()
    assert await f.sync(d) is None
    assert [a for a in f.writes() if a.resource == REPLICASETS] == []
    assert f.dc.controller.queue.num_requeues(key(d)) == 0

    deliver(REPLICASETS)
    (current,) = f.informers.lister(REPLICASETS).list()
    f.dc.update_replica_set(stale, current)
    assert await f.queued() == [key(d)]  # the event of the own scale syncs it again
    deliver(DEPLOYMENTS)
    f.client.clear_actions()
    assert await f.sync(d) is None
    assert "patch replicasets" in f.summary()
    (scaled,) = f.client.tracker.list(REPLICASETS, namespace=NAMESPACE)["items"]
    assert scaled["spec"]["replicas"] == 5


async def test_a_status_the_next_sync_supersedes_is_not_written() -> None:
    """The status a sync ends with is left out when the Deployment was queued again while
    the sync ran (the sync that follows at once computes a newer one from the newer event),
    but never twice in a row: under a stream of events every other status is written. The
    syncs run as the runner's workers run them, which tells a sync whether its key was queued
    again (kcontrol.controller.superseded)."""
    f = Fixture()
    (d,) = f.seed(new_deployment("foo", 1))

    def refresh() -> dict[str, Any]:
        for resource in (REPLICASETS, DEPLOYMENTS):
            for obj in f.client.tracker.list(resource, namespace=NAMESPACE)["items"]:
                f.informers.for_resource(resource).indexer.update(obj)
        return f.client.tracker.get(DEPLOYMENTS, "foo", namespace=NAMESPACE)

    assert await f.sync(d) is None  # creates its ReplicaSet (and says so in its status)
    d = refresh()
    # The API server's status strategy keeps the revision annotation the status write
    # carried; the fake server's does not.
    d["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/revision"] = "1"
    f.client.tracker.update(DEPLOYMENTS, d)
    (rs,) = f.client.tracker.list(REPLICASETS, namespace=NAMESPACE)["items"]
    rs["status"] = {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}
    f.client.tracker.update(REPLICASETS, rs, subresource="status")
    d = refresh()
    f.client.clear_actions()

    queue = f.dc.controller.queue
    queue.add(key(d))
    assert await queue.get() == key(d)
    queue.add(key(d))  # an event arrives while the sync runs
    await f.dc.controller._process(key(d))  # as a worker syncs it: superseded() is known
    assert f.writes() == [], "the new counts are left to the sync that follows"
    queue.done(key(d))

    assert await queue.get() == key(d)  # the round that follows
    queue.add(key(d))  # and another event during it
    await f.dc.controller._process(key(d))  # as a worker syncs it: superseded() is known
    assert f.summary() == ["update deployments/status"], "not left out twice in a row"
    assert refresh()["status"]["availableReplicas"] == 1
    queue.done(key(d))

    f.client.clear_actions()
    assert await queue.get() == key(d)
    await f.dc.controller._process(key(d))  # as a worker syncs it: superseded() is known
    assert f.writes() == [], "the status written is current"


async def test_a_write_that_changed_nothing_holds_no_sync_back() -> None:
    """The server keeps the resourceVersion of an update that changes nothing, so the cache
    is as new as that write and the next sync goes on; a write that changed the Deployment
    holds the next sync back (nothing sent) until the cache has it."""
    f = Fixture()
    (d,) = f.seed(new_deployment("foo", 1))
    ctx = f.dc_ctx
    same = copy.deepcopy(d)
    with ctx.consistency.recording(key(d)):  # as a sync records its writes
        await update_deployment_status(ctx, same)
    assert same["metadata"]["resourceVersion"] == d["metadata"]["resourceVersion"]
    ctx.consistency.ensure_ready(key(d))  # the cache holds that version: nothing to wait for
    changed = copy.deepcopy(d)
    changed["status"] = {"observedGeneration": 1}
    with ctx.consistency.recording(key(d)):
        await update_deployment_status(ctx, changed)
        with pytest.raises(StaleCache):  # and no write from the older copy in the same sync
            await update_deployment_status(ctx, copy.deepcopy(d))
    assert changed["metadata"]["resourceVersion"] != d["metadata"]["resourceVersion"]
    with pytest.raises(StaleCache):
        ctx.consistency.ensure_ready(key(d))
    assert await f.sync(d) is None  # held back: no write from the stale copy
    assert f.summary() == ["update deployments/status", "update deployments/status"]


async def test_namespace_terminating_drops_the_key() -> None:
    f = Fixture()
    (d,) = f.seed(new_deployment("foo", 1))

    def refuse(action: Action) -> None:
        raise Forbidden(
            "namespace default is being terminated",
            details={"causes": [{"reason": "NamespaceTerminating"}]},
        )

    f.client.prepend_reactor("create", REPLICASETS, refuse)
    assert await f.sync(d) is None
    assert f.recorder.events == []  # not reported as a ReplicaSetCreateError


async def test_unknown_strategy_is_an_error() -> None:
    f = Fixture()
    d = new_deployment("foo", 1)
    d["spec"]["strategy"] = {"type": "Canary"}
    f.seed(d)
    with pytest.raises(ValueError, match="unexpected deployment strategy type: Canary"):
        await f.sync(d)


async def test_sync_never_mutates_the_cache() -> None:
    f = Fixture()
    d = new_deployment("foo", 3, max_surge=1, max_unavailable=0, progress_deadline_seconds=600)
    old = new_replica_set(d, "old", 3, revision=1, available=3)
    old["spec"]["template"]["spec"]["containers"][0]["image"] = "foo/old"
    f.seed(d, old)
    before = [copy.deepcopy(o) for o in f.informers.lister(DEPLOYMENTS).list()] + [
        copy.deepcopy(o) for o in f.informers.lister(REPLICASETS).list()
    ]
    await f.sync(d)
    after = f.informers.lister(DEPLOYMENTS).list() + f.informers.lister(REPLICASETS).list()
    assert after == before
    assert f.summary()  # it did act


@pytest.mark.parametrize("new_rs_annotated", [False, True], ids=["patched", "up-to-date"])
async def test_sync_with_an_existing_new_replica_set_never_mutates_the_cache(
    new_rs_annotated: bool,
) -> None:
    # The new ReplicaSet a sync finds is copied only as far as its annotations (the rest is
    # shared with the cache): mid-rollout syncs - annotations patched or not, old scaled
    # down, new scaled up, status written - leave every cached object as it was.
    f = Fixture()
    d = new_deployment("foo", 3, max_surge=1, max_unavailable=1, progress_deadline_seconds=600)
    d["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "2"}
    old = new_replica_set(d, "old", 3, revision=1, available=3)
    old["spec"]["template"]["spec"]["containers"][0]["image"] = "foo/old"
    new = new_replica_set(d, "new", 1, revision=2 if new_rs_annotated else 1, available=1)
    new["metadata"]["annotations"].update(
        {
            "deployment.kubernetes.io/desired-replicas": "3" if new_rs_annotated else "2",
            "deployment.kubernetes.io/max-replicas": "4",
        }
    )
    f.seed(d, old, new)
    cached = f.informers.lister(DEPLOYMENTS).list() + f.informers.lister(REPLICASETS).list()
    before = copy.deepcopy(cached)
    for _ in range(3):
        await f.sync(d)
    assert cached == before
    assert f.writes()  # it did act


# -- claiming ----------------------------------------------------------------------------------


async def test_get_replica_sets_for_deployment() -> None:
    f = Fixture()
    d1 = new_deployment("foo", 1)
    d2 = new_deployment("bar", 1)
    rs1 = new_replica_set(d1, "rs1", 1)
    rs2 = new_replica_set(d2, "rs2", 1)
    rs3 = new_replica_set(d1, "rs3", 1, owned=False)
    d1, d2, *_ = f.seed(d1, d2, rs1, rs2, rs3)

    claimed = await f.dc._claim_replica_sets(d1, _selector(d1))
    assert sorted(rs["metadata"]["name"] for rs in claimed) == ["rs1", "rs3"]
    for rs in claimed:  # the informer would deliver the adoption
        f.informers.for_resource(REPLICASETS).indexer.update(rs)
    claimed = await f.dc._claim_replica_sets(d2, _selector(d2))
    assert [rs["metadata"]["name"] for rs in claimed] == ["rs2"]


async def test_get_replica_sets_for_deployment_adopt_release() -> None:
    f = Fixture()
    d = new_deployment("foo", 1)
    rs_adopt = new_replica_set(d, "rsAdopt", 1, owned=False)
    rs_release = new_replica_set(d, "rsRelease", 1)
    rs_release["metadata"]["labels"] = {"foo": "notbar"}
    d, *_ = f.seed(d, rs_adopt, rs_release)

    claimed = await f.dc._claim_replica_sets(d, _selector(d))

    assert [rs["metadata"]["name"] for rs in claimed] == ["rsAdopt"]
    patches = {a.name: a.patch for a in f.client.actions_for("patch", REPLICASETS)}
    assert patches["rsAdopt"]["metadata"]["ownerReferences"] == [controller_ref(d)]
    assert patches["rsRelease"]["metadata"]["ownerReferences"] == [
        {"$patch": "delete", "uid": d["metadata"]["uid"]}
    ]
    # one live recheck, before the adoption (the release needs none); cache order is arbitrary
    names = [f"{a.verb} {a.name}" for a in f.client.actions]
    assert sorted(names) == ["get foo", "patch rsAdopt", "patch rsRelease"]
    assert names.index("get foo") < names.index("patch rsAdopt")


async def test_get_pod_map_for_replica_sets() -> None:
    f = Fixture()
    d = new_deployment("foo", 1)
    rs1 = new_replica_set(d, "rs1", 1)
    rs2 = new_replica_set(d, "rs2", 1)
    pod1 = pod_of(rs1, "rs1-pod")
    pod2 = pod_of(rs2, "rs2-pod")
    pod3 = pod_of(rs1, "pod3")  # matching labels, no controller
    del pod3["metadata"]["ownerReferences"]
    pod4 = pod_of(rs1, "pod4", phase="Failed")  # inactive pods count too
    other = pod_of(new_replica_set(new_deployment("x", 1), "other", 1), "not-ours")
    # still controlled by rs1 though no longer selected: counted, as upstream's map is built
    # by ownership alone (FilterPodsByOwner)
    relabelled = pod_of(rs1, "relabelled")
    relabelled["metadata"]["labels"] = {"foo": "notbar"}
    f.seed(d, rs1, rs2, pod1, pod2, pod3, pod4, other, relabelled)

    pod_map = f.dc._pod_map([rs1, rs2])

    assert set(pod_map) == {rs1["metadata"]["uid"], rs2["metadata"]["uid"]}
    assert sorted(p["metadata"]["name"] for p in pod_map[rs1["metadata"]["uid"]]) == [
        "pod4",
        "relabelled",
        "rs1-pod",
    ]
    assert [p["metadata"]["name"] for p in pod_map[rs2["metadata"]["uid"]]] == ["rs2-pod"]


def _selector(d: dict[str, Any]) -> Selector:
    return selector_from_label_selector(d["spec"]["selector"])


# -- ReplicaSet handlers -----------------------------------------------------------------------


def _two_deployments(f: Fixture) -> tuple[dict[str, Any], dict[str, Any]]:
    d1 = new_deployment("d1", 1)
    d2 = new_deployment("d2", 1)
    f.seed(d1, d2)
    return d1, d2


async def test_add_replica_set() -> None:
    f = Fixture()
    d1, d2 = _two_deployments(f)
    rs1 = new_replica_set(d1, "rs1", 1)
    rs2 = new_replica_set(d2, "rs2", 1)

    f.dc.add_replica_set(rs1)
    assert await f.queued() == [key(d1)]
    f.dc.add_replica_set(rs2)
    assert await f.queued() == [key(d2)]


async def test_add_replica_set_with_stale_controller_ref_wakes_nobody() -> None:
    f = Fixture()
    d1, _ = _two_deployments(f)
    rs = new_replica_set(d1, "rs1", 1)
    rs["metadata"]["ownerReferences"][0]["uid"] = "recreated"
    f.dc.add_replica_set(rs)
    rs = new_replica_set(d1, "rs2", 1)
    rs["metadata"]["ownerReferences"][0]["kind"] = "StatefulSet"
    f.dc.add_replica_set(rs)
    assert await f.queued() == []


async def test_add_replica_set_being_deleted_counts_as_delete() -> None:
    f = Fixture()
    d1, _ = _two_deployments(f)
    rs = new_replica_set(d1, "rs1", 1, owned=False)
    rs["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    f.dc.add_replica_set(rs)
    assert await f.queued() == []  # an orphan's deletion wakes nobody
    owned = new_replica_set(d1, "rs2", 1)
    owned["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    f.dc.add_replica_set(owned)
    assert await f.queued() == [key(d1)]


async def test_add_replica_set_orphan() -> None:
    f = Fixture()
    d1, d2 = _two_deployments(f)
    f.seed(new_deployment("d3", 1, selector={"foo": "notbar"}))
    rs = new_replica_set(d1, "rs1", 1, owned=False)

    f.dc.add_replica_set(rs)

    assert sorted(await f.queued()) == sorted([key(d1), key(d2)])


async def test_update_replica_set() -> None:
    f = Fixture()
    d1, d2 = _two_deployments(f)
    rs1 = new_replica_set(d1, "rs1", 1)
    rs2 = new_replica_set(d2, "rs2", 1)

    f.dc.update_replica_set(rs1, bumped(rs1))
    assert await f.queued() == [key(d1)]
    f.dc.update_replica_set(rs2, bumped(rs2))
    assert await f.queued() == [key(d2)]


async def test_update_replica_set_resync_is_ignored() -> None:
    f = Fixture()
    d1, _ = _two_deployments(f)
    rs1 = new_replica_set(d1, "rs1", 1)
    f.dc.update_replica_set(rs1, copy.deepcopy(rs1))
    assert await f.queued() == []


async def test_update_replica_set_orphan_with_new_labels() -> None:
    f = Fixture()
    d1, d2 = _two_deployments(f)
    rs = new_replica_set(d1, "rs1", 1, owned=False)
    prev = copy.deepcopy(rs)
    prev["metadata"]["labels"] = {"foo": "notbar"}

    f.dc.update_replica_set(prev, bumped(rs))

    assert sorted(await f.queued()) == sorted([key(d1), key(d2)])


async def test_update_replica_set_orphan_without_changes_wakes_nobody() -> None:
    f = Fixture()
    d1, _ = _two_deployments(f)
    rs = new_replica_set(d1, "rs1", 1, owned=False)
    f.dc.update_replica_set(rs, bumped(rs))
    assert await f.queued() == []


async def test_update_replica_set_change_controller_ref() -> None:
    f = Fixture()
    d1, d2 = _two_deployments(f)
    rs = new_replica_set(d1, "rs1", 1)
    prev = copy.deepcopy(rs)
    prev["metadata"]["ownerReferences"] = [controller_ref(d2)]

    f.dc.update_replica_set(prev, bumped(rs))

    assert sorted(await f.queued()) == sorted([key(d1), key(d2)])


async def test_update_replica_set_release() -> None:
    f = Fixture()
    d1, d2 = _two_deployments(f)
    rs = new_replica_set(d1, "rs1", 1)
    released = bumped(rs)
    del released["metadata"]["ownerReferences"]

    f.dc.update_replica_set(rs, released)

    assert sorted(await f.queued()) == sorted([key(d1), key(d2)])


async def test_delete_replica_set() -> None:
    f = Fixture()
    d1, d2 = _two_deployments(f)
    rs1 = new_replica_set(d1, "rs1", 1)
    rs2 = new_replica_set(d2, "rs2", 1)

    f.dc.delete_replica_set(rs1)
    assert await f.queued() == [key(d1)]
    f.dc.delete_replica_set(DeletedFinalStateUnknown(key(rs2), rs2))  # a tombstone
    assert await f.queued() == [key(d2)]


async def test_delete_replica_set_orphan() -> None:
    f = Fixture()
    d1, _ = _two_deployments(f)
    rs = new_replica_set(d1, "rs1", 1, owned=False)
    f.dc.delete_replica_set(rs)
    assert await f.queued() == []


# -- Deployment handlers -----------------------------------------------------------------------


async def test_deployment_handlers_enqueue_including_tombstones() -> None:
    f = Fixture()
    d = new_deployment("foo", 1)
    f.dc.add_deployment(d)
    assert await f.queued() == [key(d)]
    f.dc.update_deployment(d, bumped(d))
    assert await f.queued() == [key(d)]
    f.dc.delete_deployment(d)
    assert await f.queued() == [key(d)]
    f.dc.delete_deployment(DeletedFinalStateUnknown(key(d), d))
    assert await f.queued() == [key(d)]
    f.dc.delete_deployment(DeletedFinalStateUnknown(key(d), "garbage"))  # type: ignore[arg-type]
    assert await f.queued() == []


# -- Pod deletion (Recreate) -------------------------------------------------------------------


def _recreate(name: str = "foo") -> dict[str, Any]:
    return new_deployment(name, 1, strategy="Recreate")


async def test_pod_deletion_enqueues_recreate_deployment() -> None:
    f = Fixture()
    foo = _recreate()
    rs = new_replica_set(foo, "foo-1", 1)
    f.seed(foo, rs)

    f.dc.delete_pod(pod_of(rs, "foo-1-pod"))

    assert await f.queued() == [key(foo)]


async def test_pod_deletion_tombstone_enqueues_recreate_deployment() -> None:
    f = Fixture()
    foo = _recreate()
    rs = new_replica_set(foo, "foo-1", 1)
    f.seed(foo, rs)
    pod = pod_of(rs, "foo-1-pod")

    f.dc.delete_pod(DeletedFinalStateUnknown(key(pod), pod))

    assert await f.queued() == [key(foo)]


async def test_pod_deletion_doesnt_enqueue_recreate_deployment() -> None:
    f = Fixture()
    foo = _recreate()
    rs1 = new_replica_set(foo, "foo-1", 1)
    rs2 = new_replica_set(foo, "foo-2", 1)
    pod1 = pod_of(rs1, "pod1")
    pod2 = pod_of(rs2, "pod2")
    f.seed(foo, rs1, rs2, pod2)  # pod1 is gone from the cache, pod2 still there

    f.dc.delete_pod(pod1)

    assert await f.queued() == []


async def test_pod_deletion_of_rolling_deployment_enqueues_nothing() -> None:
    f = Fixture()
    foo = new_deployment("foo", 1)
    rs = new_replica_set(foo, "foo-1", 1)
    f.seed(foo, rs)
    f.dc.delete_pod(pod_of(rs, "pod"))
    assert await f.queued() == []


async def test_pod_deletion_partial_replica_set_ownership_enqueues_recreate_deployment() -> None:
    f = Fixture()
    foo = _recreate()
    rs1 = new_replica_set(foo, "foo-1", 1)
    rs2 = new_replica_set(foo, "foo-2", 1, owned=False)
    f.seed(foo, rs1, rs2)

    f.dc.delete_pod(pod_of(rs1, "pod"))

    assert await f.queued() == [key(foo)]


async def test_pod_deletion_partial_replica_set_ownership_doesnt_enqueue() -> None:
    f = Fixture()
    foo = _recreate()
    rs1 = new_replica_set(foo, "foo-1", 1)
    rs2 = new_replica_set(foo, "foo-2", 2, owned=False)
    pod = pod_of(rs1, "pod")
    f.seed(foo, rs1, rs2, pod)  # the deleted pod is still in the cache

    f.dc.delete_pod(pod)

    assert await f.queued() == []


# -- wiring ------------------------------------------------------------------------------------


def test_queue_and_runner_are_named_deployment() -> None:
    f = Fixture()
    assert QUEUE_NAME == "deployment"
    assert f.dc.controller.name == "deployment"
    assert f.dc.controller.queue.name == "deployment"


async def test_paused_deployment_scales_and_cleans_up_but_does_not_roll_out() -> None:
    f = Fixture()
    d = new_deployment("foo", 4, max_surge=1, max_unavailable=0, revision_history_limit=0)
    d["spec"]["paused"] = True
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "foo/new"  # a pending rollout
    current = new_replica_set(d, "foo-current", 2, revision=2)
    current["spec"]["template"]["spec"]["containers"][0]["image"] = "foo/current"
    current["metadata"]["annotations"].update(
        {
            "deployment.kubernetes.io/desired-replicas": "2",
            "deployment.kubernetes.io/max-replicas": "3",
        }
    )
    retired = new_replica_set(d, "foo-retired", 0, revision=1)
    retired["spec"]["template"]["spec"]["containers"][0]["image"] = "foo/retired"
    d, *_ = f.seed(d, current, retired)

    await f.sync(d)

    assert f.client.actions_for("create", REPLICASETS) == []  # no rollout while paused
    resized = [a for a in f.client.actions_for("patch", REPLICASETS) if "spec" in a.patch]
    assert [(a.name, a.patch["spec"]["replicas"]) for a in resized] == [("foo-current", 4)]
    assert [a.name for a in f.client.actions_for("delete", REPLICASETS)] == ["foo-retired"]


async def test_scaling_event_resizes_without_rolling_forward() -> None:
    f = Fixture()
    d = new_deployment("foo", 10, max_surge=0, max_unavailable=1)
    d["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "2"}
    new = new_replica_set(d, "foo-new", 2, revision=2, available=2)
    old = new_replica_set(d, "foo-old", 3, revision=1, available=3)
    old["spec"]["template"]["spec"]["containers"][0]["image"] = "foo/old"
    for rs in (new, old):  # both sized when the Deployment had 5 replicas
        rs["metadata"]["annotations"].update(
            {
                "deployment.kubernetes.io/desired-replicas": "5",
                "deployment.kubernetes.io/max-replicas": "5",
            }
        )
    d, *_ = f.seed(d, new, old)

    await f.sync(d)

    resized = {
        a.name: a.patch["spec"]["replicas"]
        for a in f.client.actions_for("patch", REPLICASETS)
        if "spec" in a.patch
    }
    assert resized == {"foo-new": 4, "foo-old": 6}  # doubled, both; not a rollout step
    assert "Normal ScalingReplicaSet Scaled up replica set foo-old from 3 to 6" in f.recorder.events
