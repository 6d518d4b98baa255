"""Recreate (upstream recreate_test.go: TestScaleDownOldReplicaSets, TestOldPodsRunning) and
whole Recreate syncs."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from deployment_fixtures import Fixture, new_deployment, new_replica_set, pod_of

from kcontrol.client import REPLICASETS
from kcontrol_controllers.deployment._recreate import (
    old_pods_running,
    scale_down_old_replica_sets_for_recreate,
)


def rs_with_uid(uid: str, status_replicas: int = 0) -> dict[str, Any]:
    return {
        "metadata": {"name": f"rs-{uid}", "uid": uid},
        "spec": {"replicas": 0},
        "status": {"replicas": status_replicas},
    }


def pods(*phases: str) -> list[dict[str, Any]]:
    return [{"status": {"phase": phase}} for phase in phases]


@pytest.mark.parametrize(
    ("new_rs", "old_rss", "pod_map", "expected"),
    [
        pytest.param(None, [], {}, False, id="no old RSs"),
        pytest.param(
            None,
            [rs_with_uid("some-uid"), rs_with_uid("other-uid")],
            {"some-uid": pods("Running"), "other-uid": pods("Running")},
            True,
            id="old RSs with running pods",
        ),
        pytest.param(
            None, [rs_with_uid("uid-1", 1)], {}, True, id="no pods but non-zero status replicas"
        ),
        pytest.param(None, [rs_with_uid("uid-1")], {}, False, id="no pods, zero status replicas"),
        pytest.param(
            None,
            [rs_with_uid("uid-1")],
            {"uid-1": pods("Failed", "Succeeded")},
            False,
            id="terminal pods only",
        ),
        pytest.param(
            None,
            [rs_with_uid("uid-1")],
            {"uid-1": pods("Unknown")},
            True,
            id="pod in unknown phase",
        ),
        pytest.param(
            None, [rs_with_uid("uid-1")], {"uid-1": pods("Pending")}, True, id="pending pod"
        ),
        pytest.param(
            None, [rs_with_uid("uid-1")], {"uid-1": pods("Running")}, True, id="running pod"
        ),
        pytest.param(
            None,
            [rs_with_uid("uid-1")],
            {"uid-1": pods("Failed", "Unknown")},
            True,
            id="terminal and unknown",
        ),
        pytest.param(
            rs_with_uid("new"),
            [rs_with_uid("uid-1")],
            {"new": pods("Running")},
            False,
            id="pods of the new RS are ignored",
        ),
    ],
)
def test_old_pods_running(
    new_rs: dict[str, Any] | None,
    old_rss: list[dict[str, Any]],
    pod_map: dict[str, list[dict[str, Any]]],
    expected: bool,
) -> None:
    assert old_pods_running(new_rs, old_rss, pod_map) is expected


async def test_scale_down_old_replica_sets() -> None:
    f = Fixture()
    d = new_deployment("foo", 3, strategy="Recreate")
    (old,) = f.seed(new_replica_set(d, "foo-0", 3))
    before = copy.deepcopy(old)

    assert await scale_down_old_replica_sets_for_recreate(f.ctx, [old], d) is True

    (patch,) = f.client.actions_for("patch", REPLICASETS)
    assert patch.patch["spec"] == {"replicas": 0}
    assert old == before  # the given object is not mutated
    assert f.recorder.events == [
        "Normal ScalingReplicaSet Scaled down replica set foo-0 from 3 to 0"
    ]


def recreate_fixture(
    old_size: int, old_status: int, *old_pods: str
) -> tuple[Fixture, dict[str, Any], dict[str, Any]]:
    f = Fixture()
    d = new_deployment("foo", 3, strategy="Recreate")
    d["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    old = new_replica_set(d, "foo-old", old_size, revision=1)
    old["spec"]["template"]["spec"]["containers"][0]["image"] = "foo/old"
    old["status"] = {"replicas": old_status, "observedGeneration": 1}
    f.seed(d, old)
    for i, phase in enumerate(old_pods):
        f.seed(pod_of(old, f"old-{i}", phase))
    return f, d, old


async def test_recreate_scales_old_replica_sets_down_first() -> None:
    f, d, _ = recreate_fixture(3, 3, "Running", "Running", "Running")
    await f.sync(d)
    assert [a.verb for a in f.client.actions_for("*", REPLICASETS)] == ["patch"]
    assert f.summary()[-1] == "update deployments/status"


@pytest.mark.parametrize(
    ("old_status", "phases"),
    [
        pytest.param(1, (), id="old replica set still reports a replica"),
        pytest.param(0, ("Running",), id="an old pod still runs"),
    ],
)
async def test_recreate_waits_for_old_pods(old_status: int, phases: tuple[str, ...]) -> None:
    f, d, _ = recreate_fixture(0, old_status, *phases)
    await f.sync(d)
    assert f.client.actions_for("*", REPLICASETS) == []  # nothing created yet


async def test_recreate_waits_for_a_relabelled_pod_its_old_replica_set_still_owns() -> None:
    # upstream's pod map is built by ownership alone (FilterPodsByOwner): a pod relabelled out
    # of the selector but still controlled by the old ReplicaSet runs old code.
    f, d, old = recreate_fixture(0, 0)
    pod = pod_of(old, "old-relabelled", "Running")
    pod["metadata"]["labels"] = {"moved": "away"}
    f.seed(pod)
    await f.sync(d)
    assert f.client.actions_for("*", REPLICASETS) == []  # nothing created yet


async def test_recreate_creates_the_new_replica_set_once_old_pods_are_gone() -> None:
    f, d, _ = recreate_fixture(0, 0, "Failed")
    await f.sync(d)
    (create,) = f.client.actions_for("create", REPLICASETS)
    assert create.object is not None and create.object["spec"]["replicas"] == 3
    assert f.client.actions_for("patch", REPLICASETS) == []  # created at full size
    name = create.object["metadata"]["name"]
    assert f.recorder.events == [
        f"Normal ScalingReplicaSet Scaled up replica set {name} from 0 to 3"
    ]


async def test_recreate_scales_an_existing_new_replica_set_up() -> None:
    f, d, _ = recreate_fixture(0, 0)
    new = new_replica_set(d, "foo-new", 0, revision=2)
    f.seed(new)
    await f.sync(d)
    patches = [a for a in f.client.actions_for("patch", REPLICASETS) if "spec" in a.patch]
    assert [(a.name, a.patch["spec"]["replicas"]) for a in patches] == [("foo-new", 3)]
