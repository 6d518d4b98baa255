"""Updates, after upstream update_test.go and the history cases of daemon_controller_test.go:
rolling with maxUnavailable and with maxSurge, OnDelete, ControllerRevisions (creation,
rollback renumbering, duplicates, cleanup), and the status counts."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from daemonset_fixtures import (
    NOW,
    Fixture,
    new_daemon_set,
    new_node,
    node_of,
    on_delete,
    rolling_update,
    surge,
)

from kcontrol.client import CONTROLLERREVISIONS, DAEMONSETS, PODS
from kcontrol.errors import AlreadyExists
from kcontrol.metatime import format_time
from kcontrol_controllers.daemonset._history import get_patch


def ready_all(fx: Fixture, since: Any = None) -> None:
    """Bind every live pod to its node and make it ready (``since``, default long ago), on
    the server; then observe."""
    since = since if since is not None else NOW - timedelta(hours=1)
    for pod in fx.server_pods():
        if pod["metadata"].get("deletionTimestamp") or pod.get("status", {}).get("conditions"):
            continue  # going, or ready already
        pod["spec"]["nodeName"] = node_of(pod)
        bound = fx.update_server(PODS, pod)
        bound["status"] = {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": format_time(since)}
            ],
        }
        fx.client.tracker.update(PODS, bound, subresource="status")
    fx.observe()


def change_template(fx: Fixture, image: str, name: str = "foo") -> None:
    ds = fx.server_ds(name)
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = image
    fx.update_server(DAEMONSETS, ds)
    fx.observe()


def hashes(fx: Fixture) -> dict[str, str]:
    """Each node's pods' hashes, ``,``-joined in name order."""
    by_node: dict[str, list[str]] = {}
    for pod in sorted(fx.server_pods(), key=lambda p: p["metadata"]["name"]):
        by_node.setdefault(node_of(pod), []).append(
            pod["metadata"]["labels"]["controller-revision-hash"]
        )
    return {node: ",".join(h) for node, h in by_node.items()}


async def settle(fx: Fixture, rounds: int = 20) -> None:
    """Sync, observe and make pods ready until nothing changes."""
    for _ in range(rounds):
        ready_all(fx)
        fx.reset()
        await fx.sync_and_observe()
        if not fx.created_pods() and not fx.deleted_pods():
            return
    raise AssertionError("did not settle")


async def started(fx: Fixture, nodes: int, strategy: dict[str, Any]) -> str:
    """``nodes`` nodes running ready pods of a DaemonSet with ``strategy``; its hash."""
    fx.add_nodes(nodes)
    fx.add_ds(new_daemon_set(strategy=strategy))
    await settle(fx)
    (only,) = set(hashes(fx).values())
    return only


# -- rolling update, maxUnavailable ------------------------------------------------------------


async def test_rolling_update_deletes_max_unavailable_old_pods() -> None:
    fx = Fixture()
    old = await started(fx, 5, rolling_update(2))
    change_template(fx, "foo/bar:2")
    fx.reset()
    await fx.sync_and_observe()
    assert len(fx.deleted_pods()) == 2
    assert fx.created_pods() == []
    fx.reset()
    await fx.sync_and_observe()  # manage creates the two replacements
    assert len(fx.created_pods()) == 2 and fx.deleted_pods() == []
    fx.reset()
    await fx.sync_and_observe()  # the new pods are not available: nothing more goes
    assert fx.deleted_pods() == []
    await settle(fx)
    (new,) = set(hashes(fx).values())
    assert new != old
    assert fx.last_status()["updatedNumberScheduled"] == 5


async def test_rolling_update_percentage_rounds_up() -> None:
    fx = Fixture()
    await started(fx, 3, rolling_update("50%"))
    change_template(fx, "foo/bar:2")
    fx.reset()
    await fx.sync()
    assert len(fx.deleted_pods()) == 2  # 50% of 3, rounded up


async def test_rolling_update_replaces_unavailable_old_pods_beyond_the_limit() -> None:
    fx = Fixture()
    await started(fx, 3, rolling_update(1))
    for pod in fx.server_pods():  # every old pod goes unready
        pod["status"]["conditions"][0]["status"] = "False"
        fx.client.tracker.update(PODS, pod, subresource="status")
    fx.observe()
    change_template(fx, "foo/bar:2")
    fx.reset()
    await fx.sync()
    assert len(fx.deleted_pods()) == 3


async def test_rolling_update_min_ready_seconds_holds_the_next_step() -> None:
    fx = Fixture()
    fx.add_nodes(2)
    ds = new_daemon_set(strategy=rolling_update(1))
    ds["spec"]["minReadySeconds"] = 30
    fx.add_ds(ds)
    await settle(fx)
    change_template(fx, "foo/bar:2")
    fx.reset()
    await fx.sync_and_observe()
    assert len(fx.deleted_pods()) == 1
    fx.reset()
    await fx.sync_and_observe()  # the replacement is created
    ready_all(fx, since=NOW)  # ready just now: available only after 30 s
    fx.reset()
    result = await fx.sync()
    assert fx.deleted_pods() == []
    assert result is not None and result.requeue_after == 30.0
    fx.clock.step(31)
    await fx.sync()
    assert len(fx.deleted_pods()) == 1


# -- rolling update, maxSurge ------------------------------------------------------------------


async def test_surge_creates_new_pods_beside_old_ones() -> None:
    fx = Fixture()
    old = await started(fx, 4, surge(2))
    change_template(fx, "foo/bar:2")
    fx.reset()
    await fx.sync_and_observe()
    assert fx.deleted_pods() == []
    assert len(fx.created_pods()) == 2
    doubled = [node for node, h in hashes(fx).items() if "," in h]
    assert len(doubled) == 2
    fx.reset()
    await fx.sync_and_observe()  # new pods not ready: no more surge, nothing deleted
    assert fx.created_pods() == [] and fx.deleted_pods() == []
    ready_all(fx)
    fx.reset()
    await fx.sync_and_observe()  # the new pods are available: their old pods go
    assert len(fx.deleted_pods()) == 2
    await settle(fx)
    assert all(h != old and "," not in h for h in hashes(fx).values())


async def test_surge_replaces_unavailable_old_pod_at_once() -> None:
    fx = Fixture()
    await started(fx, 3, surge(1))
    (first, *_) = sorted(fx.server_pods(), key=lambda p: p["metadata"]["name"])
    first["status"]["conditions"][0]["status"] = "False"
    fx.client.tracker.update(PODS, first, subresource="status")
    fx.observe()
    change_template(fx, "foo/bar:2")
    fx.reset()
    await fx.sync()
    # The unavailable node's replacement is allowed on top of the one surge candidate.
    assert len(fx.created_pods()) == 2
    assert node_of(first) in fx.created_nodes()


# -- OnDelete ----------------------------------------------------------------------------------


async def test_on_delete_waits_for_the_user() -> None:
    fx = Fixture()
    old = await started(fx, 2, on_delete())
    change_template(fx, "foo/bar:2")
    fx.reset()
    await fx.sync_and_observe()
    assert fx.deleted_pods() == [] and fx.created_pods() == []
    assert fx.last_status()["updatedNumberScheduled"] == 0
    victim = fx.server_pods()[0]
    fx.client.tracker.delete(PODS, victim["metadata"]["name"], namespace="default")
    fx.observe()
    fx.reset()
    await fx.sync_and_observe()
    (created,) = fx.created_pods()
    assert created["metadata"]["labels"]["controller-revision-hash"] != old
    assert node_of(created) == node_of(victim)


# -- history -----------------------------------------------------------------------------------


async def test_first_sync_records_revision_one() -> None:
    fx = Fixture()
    fx.add_nodes(1)
    fx.add_ds(new_daemon_set())
    await fx.sync()
    (revision,) = fx.server_revisions()
    assert revision["revision"] == 1
    hash_ = revision["metadata"]["labels"]["controller-revision-hash"]
    assert revision["metadata"]["name"] == f"foo-{hash_}"
    assert revision["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    template = fx.server_ds()["spec"]["template"]
    assert revision["data"] == {"spec": {"template": {**template, "$patch": "replace"}}}
    (pod,) = fx.created_pods()
    assert pod["metadata"]["labels"]["controller-revision-hash"] == hash_


async def test_template_change_records_a_new_revision_and_rollback_renumbers() -> None:
    fx = Fixture()
    first = await started(fx, 1, rolling_update(1))
    change_template(fx, "foo/bar:2")
    await settle(fx)
    assert sorted(r["revision"] for r in fx.server_revisions()) == [1, 2]
    change_template(fx, "foo/bar")  # back to the first template
    await settle(fx)
    revisions = {
        r["metadata"]["labels"]["controller-revision-hash"]: r["revision"]
        for r in fx.server_revisions()
    }
    assert len(revisions) == 2  # no third revision: the first is reused...
    assert revisions[first] == 3  # ...renumbered past the second
    assert set(hashes(fx).values()) == {first}


async def test_revision_without_hash_label_gets_its_name() -> None:
    fx = Fixture()
    ds = fx.add_ds(new_daemon_set())
    fx.add_revision(
        {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": "foo-legacy",
                "namespace": "default",
                "labels": {"name": "simple-daemon", "type": "production"},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "DaemonSet",
                        "name": "foo",
                        "uid": ds["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "data": get_patch(ds),
            "revision": 1,
        }
    )
    await fx.sync()
    (update,) = fx.client.actions_for("update", CONTROLLERREVISIONS)
    assert update.object is not None
    assert update.object["metadata"]["labels"]["controller-revision-hash"] == "foo-legacy"
    assert fx.client.actions_for("create", CONTROLLERREVISIONS) == []


async def test_kube_controller_managers_revision_is_recognised() -> None:
    """Go wrote ``creationTimestamp: null`` into the template's metadata."""
    fx = Fixture()
    ds = fx.add_ds(new_daemon_set())
    data = get_patch(ds)
    data["spec"]["template"]["metadata"]["creationTimestamp"] = None
    fx.add_revision(
        {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": "foo-kcm",
                "namespace": "default",
                "labels": {
                    "name": "simple-daemon",
                    "type": "production",
                    "controller-revision-hash": "kcmhash",
                },
            },
            "data": data,
            "revision": 1,
        }
    )
    await fx.sync()
    assert fx.client.actions_for("create", CONTROLLERREVISIONS) == []
    assert [a.name for a in fx.client.actions_for("patch", CONTROLLERREVISIONS)] == ["foo-kcm"]


async def test_duplicate_current_revisions_are_deduplicated() -> None:
    fx = Fixture()
    ds = fx.add_ds(new_daemon_set())
    for name, number in (("foo-a", 1), ("foo-b", 2)):
        fx.add_revision(
            {
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": {
                    "name": name,
                    "namespace": "default",
                    "labels": {
                        **ds["spec"]["selector"]["matchLabels"],
                        "controller-revision-hash": name,
                    },
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "DaemonSet",
                            "name": "foo",
                            "uid": ds["metadata"]["uid"],
                            "controller": True,
                        }
                    ],
                },
                "data": get_patch(ds),
                "revision": number,
            }
        )
    fx.add_node(new_node("n"))
    await fx.sync()
    assert [a.name for a in fx.client.actions_for("delete", CONTROLLERREVISIONS)] == ["foo-a"]
    (pod,) = fx.created_pods()
    assert pod["metadata"]["labels"]["controller-revision-hash"] == "foo-b"


async def test_history_cleaned_up_past_the_limit_but_live_hashes_kept() -> None:
    fx = Fixture()
    await started(fx, 2, on_delete())  # revisionHistoryLimit 2
    for image in ("v2", "v3", "v4"):
        change_template(fx, f"foo/bar:{image}")
        await settle(fx)
    # OnDelete: every pod still runs the first revision, which must stay.
    revisions = sorted(r["revision"] for r in fx.server_revisions())
    assert revisions == [1, 3, 4]
    (live,) = set(hashes(fx).values())
    assert any(
        r["metadata"]["labels"]["controller-revision-hash"] == live and r["revision"] == 1
        for r in fx.server_revisions()
    )


# -- status ------------------------------------------------------------------------------------


async def test_status_counts() -> None:
    fx = Fixture()
    fx.add_nodes(3)
    fx.add_node(new_node("blue", {"color": "blue"}))
    ds = new_daemon_set(strategy=on_delete())
    ds["spec"]["minReadySeconds"] = 60
    fx.add_ds(ds)
    await settle(fx)
    # One pod just became ready (not yet available); the selector now excludes node-0.
    pods = sorted(fx.server_pods(), key=node_of)[1:]  # node-0, node-1, node-2
    pods[1]["status"]["conditions"][0]["lastTransitionTime"] = format_time(NOW)
    fx.client.tracker.update(PODS, pods[1], subresource="status")
    stored = fx.server_ds()
    stored["spec"]["template"]["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "NotIn", "values": ["node-0"]}
                        ]
                    }
                ]
            }
        }
    }
    fx.update_server(DAEMONSETS, stored)
    fx.observe()
    ds_now = fx.server_ds()
    ds_now_generation = ds_now["metadata"]["generation"]
    fx.reset()
    await fx.sync()
    status = fx.last_status()
    assert fx.deleted_pods() == [pods[0]["metadata"]["name"]]
    assert {k: status[k] for k in status if k != "observedGeneration"} == {
        "desiredNumberScheduled": 3,
        "currentNumberScheduled": 3,
        "numberMisscheduled": 1,
        "numberReady": 3,
        "numberAvailable": 2,
        "updatedNumberScheduled": 0,
        "numberUnavailable": 1,
    }
    assert status["observedGeneration"] == ds_now_generation == 2


async def test_status_not_written_when_unchanged() -> None:
    fx = Fixture()
    await started(fx, 2, on_delete())
    fx.reset()
    await fx.sync()
    assert fx.status_updates() == []


async def test_rolling_update_without_template_change_deletes_nothing() -> None:
    fx = Fixture()
    await started(fx, 3, rolling_update(3))
    fx.reset()
    await fx.sync()
    assert fx.deleted_pods() == [] and fx.created_pods() == []


async def test_name_taken_by_other_data_bumps_the_collision_count() -> None:
    fx = Fixture()
    ds = fx.add_ds(new_daemon_set())
    fx.add_node(new_node("n"))
    await fx.sync()
    (revision,) = fx.server_revisions()
    name = revision["metadata"]["name"]
    # Another template's revision under that name (and nothing of ours).
    fx.client.tracker.delete(CONTROLLERREVISIONS, name, namespace="default")
    revision["data"] = {"spec": {"template": {"other": True}}}
    for key in ("uid", "resourceVersion", "ownerReferences"):
        revision["metadata"].pop(key, None)
    revision["metadata"]["labels"] = {"unrelated": "x"}
    fx.client.tracker.add(revision)
    fx.observe()
    fx.history_informer.indexer.delete(
        next(r for r in fx.history_informer.indexer.list() if r["metadata"]["name"] == name)
    )
    with pytest.raises(AlreadyExists):
        await fx.sync()
    assert fx.server_ds()["status"]["collisionCount"] == 1
    fx.observe()
    fx.history_informer.indexer.delete(
        next(r for r in fx.history_informer.indexer.list() if r["metadata"]["name"] == name)
    )
    fx.reset()
    await fx.sync()
    (created,) = fx.client.actions_for("create", CONTROLLERREVISIONS)
    assert created.object is not None and created.object["metadata"]["name"] != name
    assert ds["metadata"]["name"] == "foo"


async def test_revision_that_stopped_matching_is_released() -> None:
    fx = Fixture()
    await started(fx, 1, on_delete())
    (revision,) = fx.server_revisions()
    revision["metadata"]["labels"] = {"name": "someone-else"}
    fx.update_server(CONTROLLERREVISIONS, revision)
    fx.observe()
    fx.reset()
    await fx.sync()
    (patch,) = fx.client.actions_for("patch", CONTROLLERREVISIONS)
    assert patch.patch["metadata"]["ownerReferences"][0]["$patch"] == "delete"
    assert len(fx.client.actions_for("create", CONTROLLERREVISIONS)) == 1  # a new current one
