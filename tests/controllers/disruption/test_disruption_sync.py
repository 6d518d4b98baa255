"""One PDB's sync on the fake client: upstream's disruption_test.go cases (TestNoSelector,
TestUnavailable, TestIntegerMaxUnavailable..., TestTwoControllers, TestUpdateDisruptedPods,
TestInvalidSelectors, TestUpdatePDBStatusRetries) as the status each sync leaves, plus the
write being skipped when nothing changed and the fail-safe."""

from __future__ import annotations

from datetime import timedelta

import pytest
from disruption_fixtures import (
    NOW,
    Fixture,
    allowed_condition,
    new_deployment,
    new_pdb,
    new_pod,
    new_rc,
    new_rs,
    new_sts,
    ts,
)

from kcontrol.client import PODDISRUPTIONBUDGETS, PODS, Object
from kcontrol.errors import Conflict
from kcontrol.testing import Action


def status_writes(f: Fixture) -> list[Action]:
    return [a for a in f.client.actions_for("update", PODDISRUPTIONBUDGETS)]


async def test_no_selector_matches_every_pod() -> None:
    """TestNoSelector: an empty selector selects every pod of the namespace."""
    f = Fixture()
    key = f.add_pdb(new_pdb(min_available=3, selector={}))
    await f.sync(key)
    f.verify(0, 0, 3, 0)
    f.cache(new_pod("yo-yo-yo", labels={"other": "x"}))
    await f.sync(key)
    f.verify(0, 1, 3, 1)


async def test_missing_selector_matches_no_pod() -> None:
    """A PDB without a selector (``LabelSelectorAsSelector(nil)``) selects nothing."""
    f = Fixture()
    pdb = new_pdb(min_available=1)
    del pdb["spec"]["selector"]
    key = f.add_pdb(pdb)
    f.cache(new_pod("p"))
    await f.sync(key)
    f.verify(0, 0, 1, 0)


async def test_unavailable() -> None:
    """TestUnavailable: counts rise with each ready pod; an unready one lowers them."""
    f = Fixture()
    key = f.add_pdb(new_pdb(min_available=3))
    await f.sync(key)
    pods = []
    for i in range(4):
        f.verify(0, i, 3, i)
        pods.append(f.cache(new_pod(f"yo-yo-yo {i}")))
        await f.sync(key)
    f.verify(1, 4, 3, 4)
    f.cache(new_pod("yo-yo-yo 0", ready=False))
    await f.sync(key)
    f.verify(0, 3, 3, 4)


async def test_integer_max_unavailable_with_naked_pod() -> None:
    """TestIntegerMaxUnavailable: no pods -> 0; an unmanaged pod -> 0 and UnmanagedPods."""
    f = Fixture()
    key = f.add_pdb(new_pdb(max_unavailable=1))
    await f.sync(key)
    assert f.status()[0] == 0
    f.cache(new_pod("naked"))
    await f.sync(key)
    assert f.status()[0] == 0
    assert f.events("UnmanagedPods")


@pytest.mark.parametrize(
    ("max_unavailable", "before", "after"),
    [
        pytest.param(2, (0, 1, 5, 7), (0, 1, 3, 5), id="integer"),
        pytest.param("30%", (0, 1, 4, 7), (0, 1, 2, 3), id="percentage"),
        pytest.param(10, (1, 1, 0, 7), (1, 1, 0, 5), id="more-than-the-scale"),
    ],
)
async def test_max_unavailable_with_scaling(
    max_unavailable: int | str, before: tuple[int, int, int, int], after: tuple[int, int, int, int]
) -> None:
    """TestIntegerMaxUnavailableWithScaling / TestPercentageMaxUnavailableWithScaling:
    the expected count follows the ReplicaSet's replicas (7, then 5 or 3)."""
    f = Fixture()
    key = f.add_pdb(new_pdb(max_unavailable=max_unavailable))
    rs = f.cache(new_rs(7))
    f.cache(new_pod("pod", owner=rs))
    await f.sync(key)
    f.verify(*before)
    f.cache(new_rs(after[3]))
    await f.sync(key)
    f.verify(*after)


async def test_naked_pod_with_percentage() -> None:
    """TestNakedPod / TestStatusForUnmanagedPod / TestTotalUnmanagedPods: a percentage over
    an unmanaged pod allows nothing, warns UnmanagedPods, and is no sync failure."""
    f = Fixture()
    key = f.add_pdb(new_pdb(min_available="28%"))
    await f.sync(key)
    assert f.status()[0] == 0
    pod = f.cache(new_pod("unmanaged"))
    await f.sync(key)
    assert f.status()[0] == 0
    assert len(f.events("UnmanagedPods")) == 1
    condition = allowed_condition(f.pdb())
    assert condition is not None and condition["reason"] == "InsufficientPods"
    _, unmanaged = await f.controller.pdb_syncer.expected_scale([pod])
    assert unmanaged == ["unmanaged"]


async def test_unsupported_controller_pod() -> None:
    """TestUnsupportedControllerPod: a controller no finder knows fails the sync: the event
    CalculateExpectedPodCountFailed, and the fail-safe's SyncFailed condition."""
    f = Fixture()
    key = f.add_pdb(new_pdb(min_available="28%"))
    await f.sync(key)
    pod = new_pod("naked")
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps.test.io/v1",
            "kind": "TestWorkload",
            "name": "fake-controller",
            "uid": "b7329742",
            "controller": True,
        }
    ]
    f.cache(pod)
    await f.sync(key)
    assert f.status()[0] == 0
    assert f.events("CalculateExpectedPodCountFailed") == [
        "Warning CalculateExpectedPodCountFailed Failed to calculate the number of expected "
        'pods: found no controllers for pod "naked"'
    ]
    condition = allowed_condition(f.pdb())
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "SyncFailed")
    assert condition["message"] == 'found no controllers for pod "naked"'


async def test_fail_safe_zeroes_an_allowed_disruption() -> None:
    """A budget that allowed a disruption refuses every one once its sync fails."""
    f = Fixture()
    key = f.add_pdb(new_pdb(min_available="50%"))
    rs = f.cache(new_rs(2))
    f.cache(new_pod("a", owner=rs))
    f.cache(new_pod("b", owner=rs))
    await f.sync(key)
    f.verify(1, 2, 1, 2)
    pod = new_pod("c")
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "x.io/v1", "kind": "Thing", "name": "t", "uid": "u", "controller": True}
    ]
    f.cache(pod)
    await f.sync(key)
    assert f.status() == (0, 2, 1, 2)
    condition = allowed_condition(f.pdb())
    assert condition is not None and condition["reason"] == "SyncFailed"


async def test_replica_set_without_deployment() -> None:
    """TestReplicaSet: a ReplicaSet with no Deployment counts its own replicas."""
    f = Fixture()
    key = f.add_pdb(new_pdb(min_available="20%"))
    rs = f.cache(new_rs(10))
    f.cache(new_pod("pod", owner=rs))
    await f.sync(key)
    f.verify(0, 1, 2, 10)


async def test_multiple_controllers() -> None:
    """TestMultipleControllers: no controller -> 0; one RC of 1 with two ready pods -> 1."""
    f = Fixture()
    key = f.add_pdb(new_pdb(min_available="1%"))
    for i in range(2):
        f.cache(new_pod(f"pod {i}"))
    await f.sync(key)
    assert f.status()[0] == 0
    rc = f.cache(new_rc(1, "rc 1"))
    for i in range(2):
        f.cache(new_pod(f"pod {i}", owner=rc))
    await f.sync(key)
    assert f.status()[0] == 1


@pytest.mark.parametrize(
    "workload",
    [
        pytest.param(new_rc(3), id="replication-controller"),
        pytest.param(new_sts(3), id="statefulset"),
    ],
)
async def test_percentage_of_a_controller(workload: Object) -> None:
    """TestReplicationController / TestStatefulSetController: 34% of 3 rounds up to 2; a
    rogue pod (no controller) adds to the healthy count."""
    labels = {"foo": "bar", "baz": "quux"}
    f = Fixture()
    key = f.add_pdb(new_pdb(min_available="34%"))
    owner = f.cache(workload)
    await f.sync(key)
    f.verify(0, 0, 0, 0)
    for i in range(3):
        f.cache(new_pod(f"foobar {i}", owner=owner, labels=labels))
        await f.sync(key)
        if i < 2:
            f.verify(0, i + 1, 2, 3)
        else:
            f.verify(1, 3, 2, 3)
    f.cache(new_pod("rogue"))
    await f.sync(key)
    assert f.status()[0] == 2


async def test_two_controllers() -> None:
    """TestTwoControllers: an RC of 11 and a Deployment's ReplicaSet of 11 under 28%."""
    rc_labels = {"foo": "bar", "baz": "quux"}
    d_labels = {"foo": "bar", "baz": "quuux"}
    size, minimum_one, minimum_two = 11, 4, 7
    f = Fixture()
    key = f.add_pdb(new_pdb(min_available="28%"))
    rc = f.cache(new_rc(size))
    await f.sync(key)
    f.verify(0, 0, 0, 0)
    unavailable = size - minimum_one - 1
    for i in range(1, size + 1):
        f.cache(new_pod(f"quux {i}", owner=rc, labels=rc_labels, ready=i > unavailable))
        await f.sync(key)
        if i <= unavailable:
            f.verify(0, 0, minimum_one, size)
        elif i - unavailable <= minimum_one:
            f.verify(0, i - unavailable, minimum_one, size)
        else:
            f.verify(1, i - unavailable, minimum_one, size)
    deployment = f.cache(new_deployment(size))
    await f.sync(key)
    f.verify(1, minimum_one + 1, minimum_one, size)
    rs = f.cache(new_rs(size, owner=deployment))
    await f.sync(key)
    f.verify(1, minimum_one + 1, minimum_one, size)
    unavailable = 2 * size - (minimum_two + 2) - unavailable
    pods = []
    for i in range(1, size + 1):
        pod = f.cache(new_pod(f"quuux {i}", owner=rs, labels=d_labels, ready=i > unavailable))
        pods.append(pod)
        await f.sync(key)
        if i <= unavailable:
            f.verify(0, minimum_one + 1, minimum_two, 2 * size)
        elif i - unavailable <= minimum_two - (minimum_one + 1):
            f.verify(0, minimum_one + 1 + i - unavailable, minimum_two, 2 * size)
        else:
            f.verify(
                i - unavailable - (minimum_two - (minimum_one + 1)),
                minimum_one + 1 + i - unavailable,
                minimum_two,
                2 * size,
            )
    f.verify(2, 2 + minimum_two, minimum_two, 2 * size)
    f.cache(new_pod("quuux 11", owner=rs, labels=d_labels, ready=False))
    await f.sync(key)
    f.verify(1, 1 + minimum_two, minimum_two, 2 * size)
    f.cache(new_pod("quuux 10", owner=rs, labels=d_labels, ready=False))
    await f.sync(key)
    f.verify(0, minimum_two, minimum_two, 2 * size)
    f.cache(new_pod("quuux 11", owner=rs, labels=d_labels))
    await f.sync(key)
    f.verify(1, 1 + minimum_two, minimum_two, 2 * size)


async def test_pdb_not_exist() -> None:
    """TestPDBNotExist: a key with no PDB is done, without a write."""
    f = Fixture()
    f.add_pdb(new_pdb(min_available="67%"))
    assert await f.controller.sync("default/notExist") is None
    assert status_writes(f) == []


async def test_update_disrupted_pods() -> None:
    """TestUpdateDisruptedPods: entries of deleted, terminating and expired pods go; the
    one of an untouched pod stays, does not count as healthy, and brings a recheck when
    it expires."""
    f = Fixture()
    pdb = new_pdb(min_available=1)
    pdb["status"] = {
        "disruptedPods": {
            "p1": ts(NOW),  # pod being deleted
            "p2": ts(NOW - timedelta(minutes=3)),  # expired
            "p3": ts(NOW - timedelta(minutes=1)),  # kept
            "notthere": ts(NOW),  # pod gone
        }
    }
    key = f.add_pdb(pdb)
    f.cache(new_pod("p1", deleting=True))
    f.cache(new_pod("p2"))
    f.cache(new_pod("p3"))
    result = await f.sync(key)
    f.verify(0, 1, 1, 3, {"p3": ts(NOW - timedelta(minutes=1))})
    assert f.events("NotDeleted") == [
        "Warning NotDeleted Pod was expected by PDB default/foobar to be deleted but it wasn't"
    ]
    assert result is not None and result.requeue_after == pytest.approx(60.0)


async def test_disrupted_pod_expires_after_the_recheck() -> None:
    """Once the clock passes the kept entry's timeout, the next sync drops it and counts
    the pod as healthy again."""
    f = Fixture()
    pdb = new_pdb(min_available=1)
    pdb["status"] = {"disruptedPods": {"p3": ts(NOW - timedelta(minutes=1))}}
    key = f.add_pdb(pdb)
    f.cache(new_pod("p3"))
    result = await f.sync(key)
    f.verify(0, 0, 1, 1, {"p3": ts(NOW - timedelta(minutes=1))})
    assert result is not None
    f.clock.step(result.requeue_after + 1)
    assert await f.sync(key) is None
    f.verify(0, 1, 1, 1)


@pytest.mark.parametrize(
    "selector",
    [
        pytest.param({"matchLabels": {"k8s.io/too/many/slashes": "value"}}, id="illegal-key"),
        pytest.param(
            {"matchExpressions": [{"key": "foo", "operator": "illegal", "values": ["bar"]}]},
            id="illegal-operator",
        ),
    ],
)
async def test_invalid_selectors(selector: dict[str, object]) -> None:
    """TestInvalidSelectors: the fail-safe - 0 allowed, DisruptionAllowed False/SyncFailed."""
    f = Fixture()
    key = f.add_pdb(new_pdb(min_available=3, selector=selector))
    await f.sync(key)
    assert f.status() == (0, 0, 0, 0)
    condition = allowed_condition(f.pdb())
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "SyncFailed")
    assert len(f.events("NoPods")) == 1


async def test_no_write_when_the_status_is_current() -> None:
    """A second sync over the same pods sends nothing; a new generation is written."""
    f = Fixture()
    key = f.add_pdb(new_pdb(min_available=1))
    f.cache(new_pod("p"))
    await f.sync(key)
    assert len(status_writes(f)) == 1
    await f.sync(key)
    assert len(status_writes(f)) == 1
    pdb = f.pdb()
    pdb["metadata"]["generation"] = 2
    f.cache(pdb)
    await f.sync(key)
    assert len(status_writes(f)) == 2
    assert f.pdb()["status"]["observedGeneration"] == 2


async def test_condition_transitions_keep_time_while_status_holds() -> None:
    """DisruptionAllowed moves its lastTransitionTime only when its status changes."""
    f = Fixture()
    key = f.add_pdb(new_pdb(min_available=1))
    f.cache(new_pod("a"))
    await f.sync(key)
    first = allowed_condition(f.pdb())
    assert first is not None and first["lastTransitionTime"] == ts(NOW)
    f.clock.step(30)
    f.cache(new_pod("b"))
    await f.sync(key)
    second = allowed_condition(f.pdb())
    assert second is not None and second["status"] == "True"
    assert second["lastTransitionTime"] == ts(NOW + timedelta(seconds=30))
    f.clock.step(30)
    f.cache(new_pod("c"))
    await f.sync(key)
    third = allowed_condition(f.pdb())
    assert third == second


async def test_conflict_is_retried_without_fail_safe() -> None:
    """TestUpdatePDBStatusRetries: a Conflict on the status write (an eviction changed the
    PDB meanwhile) is raised for a retry, and no stale value is written over the
    eviction's."""
    f = Fixture()
    key = f.add_pdb(new_pdb(min_available=1))
    for name in ("moe", "larry", "curly"):
        f.cache(new_pod(name))
    await f.sync(key)
    assert f.status()[0] == 2

    def refuse(action: Action) -> None:
        raise Conflict("the object has been modified")

    f.client.prepend_reactor("update", PODDISRUPTIONBUDGETS, refuse)
    f.informers.for_resource(PODS).indexer.delete(new_pod("moe"))
    with pytest.raises(Conflict):
        await f.controller.sync(key)
    assert len(status_writes(f)) == 2  # the refused write, and no fail-safe after it
    assert f.status()[0] == 2


async def test_fail_safe_write_failure_is_raised() -> None:
    """When even the fail-safe cannot be written, the error reaches the runner (retried)."""
    f = Fixture()
    key = f.add_pdb(new_pdb(min_available=1, selector={"matchLabels": {"a/b/c": "x"}}))

    def refuse(action: Action) -> None:
        raise RuntimeError("apiserver down")

    f.client.prepend_reactor("update", PODDISRUPTIONBUDGETS, refuse)
    with pytest.raises(RuntimeError):
        await f.controller.sync(key)
