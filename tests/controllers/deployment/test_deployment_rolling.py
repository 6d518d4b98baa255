"""RollingUpdate (upstream rolling_test.go: reconcileNewReplicaSet, reconcileOldReplicaSets,
cleanupUnhealthyReplicas, scaleDownOldReplicaSetsForRollingUpdate) and whole rolling syncs."""

from __future__ import annotations

from typing import Any

import pytest
from deployment_fixtures import Fixture, new_deployment, new_replica_set

from kcontrol.client import REPLICASETS
from kcontrol.errors import Conflict
from kcontrol.testing import Action
from kcontrol_controllers.deployment._annotations import set_replicas_annotations
from kcontrol_controllers.deployment._rolling import (
    cleanup_unhealthy_replicas,
    reconcile_new_replica_set,
    reconcile_old_replica_sets,
    scale_down_old_replica_sets_for_rolling_update,
)


def rs(
    name: str, replicas: int, available: int = 0, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels or {}}, "template": {}},
        "status": {"availableReplicas": available},
    }


def sizes(f: Fixture) -> list[tuple[str, int]]:
    """(name, new size) of every resize patch, in order."""
    return [
        (a.name, a.patch["spec"]["replicas"])
        for a in f.client.actions_for("patch", REPLICASETS)
        if "replicas" in a.patch.get("spec", {})
    ]


@pytest.mark.parametrize(
    ("replicas", "surge", "old_replicas", "new_replicas", "expected"),
    [
        pytest.param(10, 0, 10, 0, None, id="should not scale up"),
        pytest.param(10, 2, 10, 0, 2, id="scale up by the surge"),
        pytest.param(10, 2, 5, 0, 7, id="scale up into the room left"),
        pytest.param(10, 2, 10, 2, None, id="surge used up"),
        pytest.param(2, 2, 2, 4, 2, id="should scale down"),
    ],
)
async def test_reconcile_new_replica_set(
    replicas: int, surge: int, old_replicas: int, new_replicas: int, expected: int | None
) -> None:
    f = Fixture()
    new, old = f.seed(rs("foo-v2", new_replicas), rs("foo-v1", old_replicas))
    d = new_deployment("foo", replicas, max_surge=surge, max_unavailable=0)

    scaled = await reconcile_new_replica_set(f.ctx, [new, old], new, d)

    assert scaled is (expected is not None)
    assert sizes(f) == ([] if expected is None else [("foo-v2", expected)])


@pytest.mark.parametrize(
    (
        "replicas",
        "unavailable",
        "old_replicas",
        "new_replicas",
        "ready_old",
        "ready_new",
        "expected",
    ),
    [
        pytest.param(10, 0, 10, 0, 10, 0, [("foo-old", 9)], id="maxUnavailable 0 resolves to 1"),
        pytest.param(10, 2, 10, 0, 10, 0, [("foo-old", 8)], id="scale down by maxUnavailable"),
        pytest.param(10, 2, 10, 0, 8, 0, [("foo-old", 8)], id="unhealthy old replicas cleaned up"),
        pytest.param(
            10,
            2,
            10,
            0,
            9,
            0,
            [("foo-old", 9), ("foo-old", 8)],
            id="one unhealthy cleaned, one ready scaled down",
        ),
        pytest.param(10, 2, 8, 2, 8, 0, [], id="unavailable new pods block further scale down"),
        pytest.param(10, 2, 0, 10, 0, 8, [], id="no old pods"),
    ],
)
async def test_reconcile_old_replica_sets(
    replicas: int,
    unavailable: int,
    old_replicas: int,
    new_replicas: int,
    ready_old: int,
    ready_new: int,
    expected: list[tuple[str, int]],
) -> None:
    f = Fixture()
    new, old = f.seed(
        rs("foo-new", new_replicas, ready_new, {"foo": "new"}),
        rs("foo-old", old_replicas, ready_old, {"foo": "old"}),
    )
    d = new_deployment(
        "foo", replicas, max_surge=0, max_unavailable=unavailable, selector={"foo": "new"}
    )

    scaled = await reconcile_old_replica_sets(f.ctx, [old, new], [old], new, d)

    assert scaled is bool(expected)
    assert sizes(f) == expected


@pytest.mark.parametrize(
    ("ready_old", "attempted"),
    [
        # every old replica available: the scale-down step writes, and fails
        pytest.param(10, [("foo-old", 8)], id="scale down fails"),
        # one unavailable: the clean-up step writes, fails, and the step ends there (no
        # scale-down of the one replica beyond minAvailable)
        pytest.param(9, [("foo-old", 9)], id="clean-up fails"),
    ],
)
async def test_reconcile_old_replica_sets_swallows_write_errors(
    ready_old: int, attempted: list[tuple[str, int]]
) -> None:
    f = Fixture()
    new, old = f.seed(rs("foo-new", 0), rs("foo-old", 10, ready_old))
    d = new_deployment("foo", 10, max_surge=0, max_unavailable=2)

    def conflict(action: Action) -> None:
        raise Conflict("stale")

    f.client.prepend_reactor("patch", REPLICASETS, conflict)
    assert await reconcile_old_replica_sets(f.ctx, [old, new], [old], new, d) is False
    assert sizes(f) == attempted  # the write was tried, its error swallowed
    assert f.recorder.events == []


@pytest.mark.parametrize(
    ("old_replicas", "ready", "max_cleanup", "expected"),
    [
        pytest.param(10, 8, 1, 1, id="limited by max cleanup count"),
        pytest.param(10, 8, 3, 2, id="all unhealthy"),
        pytest.param(10, 8, 0, 0, id="nothing allowed"),
        pytest.param(10, 10, 3, 0, id="nothing unhealthy"),
    ],
)
async def test_cleanup_unhealthy_replicas(
    old_replicas: int, ready: int, max_cleanup: int, expected: int
) -> None:
    f = Fixture()
    (old,) = f.seed(rs("foo-v2", old_replicas, ready))
    d = new_deployment("foo", 10, max_surge=2, max_unavailable=2)

    updated, count = await cleanup_unhealthy_replicas(f.ctx, [old], d, max_cleanup)

    assert count == expected
    assert sizes(f) == ([] if expected == 0 else [("foo-v2", old_replicas - expected)])
    assert updated[0]["spec"]["replicas"] == old_replicas - expected


async def test_cleanup_unhealthy_replicas_oldest_first() -> None:
    f = Fixture()
    d = new_deployment("foo", 10)
    newer = new_replica_set(d, "newer", 3, created=20)
    older = new_replica_set(d, "older", 3, created=10)
    for r in (newer, older):
        r["status"]["availableReplicas"] = 1
    newer, older = f.seed(newer, older)

    _, count = await cleanup_unhealthy_replicas(f.ctx, [newer, older], d, 3)

    assert count == 3
    assert sizes(f) == [("older", 1), ("newer", 2)]


@pytest.mark.parametrize(
    ("replicas", "unavailable", "ready", "old_replicas", "expected"),
    [
        pytest.param(10, 0, 10, 10, 9, id="maxUnavailable 0 resolves to 1"),
        pytest.param(10, 2, 10, 10, 8, id="by maxUnavailable"),
        pytest.param(10, 2, 8, 10, None, id="no available pods to spare"),
        pytest.param(10, 2, 10, 0, None, id="nothing to scale down"),
        pytest.param(10, 2, 1, 10, None, id="far below minimum"),
    ],
)
async def test_scale_down_old_replica_sets_for_rolling_update(
    replicas: int, unavailable: int, ready: int, old_replicas: int, expected: int | None
) -> None:
    f = Fixture()
    (old,) = f.seed(rs("foo-v2", old_replicas, ready))
    d = new_deployment("foo", replicas, max_surge=0, max_unavailable=unavailable)

    count = await scale_down_old_replica_sets_for_rolling_update(f.ctx, [old], [old], d)

    assert sizes(f) == ([] if expected is None else [("foo-v2", expected)])
    assert count == (0 if expected is None else old_replicas - expected)


# -- whole syncs -------------------------------------------------------------------------------


def rolling_fixture(
    new_size: int,
    new_available: int,
    old_size: int,
    old_available: int,
    *,
    limit: int | None = None,
    status: dict[str, Any] | None = None,
) -> tuple[Fixture, dict[str, Any]]:
    """A Deployment of 4 (surge 1, unavailable 0) rolling from revision 1 to 2."""
    f = Fixture()
    d = new_deployment("web", 4, max_surge=1, max_unavailable=0, revision_history_limit=limit)
    d["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "2"}
    d["status"] = status or {}
    old = new_replica_set(d, "web-old", old_size, revision=1, created=1)
    old["spec"]["template"]["spec"]["containers"][0]["image"] = "foo/old"
    new = new_replica_set(d, "web-new", new_size, revision=2, created=2)
    for r, available in ((old, old_available), (new, new_available)):
        set_replicas_annotations(r, 4, 5)
        r["status"] = {
            "replicas": r["spec"]["replicas"],
            "readyReplicas": available,
            "availableReplicas": available,
            "observedGeneration": 1,
            "terminatingReplicas": 0,
        }
    f.seed(d, old, new)
    return f, d


async def test_rolling_sync_scales_up_first() -> None:
    f, d = rolling_fixture(new_size=0, new_available=0, old_size=4, old_available=4)
    await f.sync(d)
    assert sizes(f) == [("web-new", 1)]
    assert f.recorder.events == [
        "Normal ScalingReplicaSet Scaled up replica set web-new from 0 to 1"
    ]
    assert f.summary()[-1] == "update deployments/status"


async def test_rolling_sync_scales_down_once_new_pods_are_available() -> None:
    f, d = rolling_fixture(new_size=1, new_available=1, old_size=4, old_available=4)
    await f.sync(d)
    assert sizes(f) == [("web-old", 3)]
    assert f.recorder.events == [
        "Normal ScalingReplicaSet Scaled down replica set web-old from 4 to 3"
    ]


async def test_rolling_sync_waits_while_new_pods_are_unavailable() -> None:
    f, d = rolling_fixture(new_size=1, new_available=0, old_size=4, old_available=4)
    await f.sync(d)
    assert sizes(f) == []  # surge used up; nothing may go down


async def test_completed_rollout_cleans_up_history() -> None:
    complete = {
        "observedGeneration": 1,
        "replicas": 4,
        "updatedReplicas": 4,
        "availableReplicas": 4,
    }
    f, d = rolling_fixture(4, 4, 0, 0, limit=0, status=complete)
    await f.sync(d)
    assert [str(a) for a in f.client.actions_for("delete", REPLICASETS)] == [
        "delete replicasets default/web-old"
    ]


async def test_incomplete_rollout_keeps_history() -> None:
    f, d = rolling_fixture(4, 4, 0, 0, limit=0)  # status not complete yet
    await f.sync(d)
    assert f.client.actions_for("delete", REPLICASETS) == []
