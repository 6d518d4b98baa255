"""The pure decisions of a sync: replicas and condemned pods, OrderedReady waits, rolling
update deletions (upstream TestGetStatefulSetMaxUnavailable, and the first part of
updateStatefulSet that stateful_set_control_test drives through a fake client)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from statefulset_fixtures import NOW, make_running, new_stateful_set, obj, terminate

from kcontrol.client import Object
from kcontrol_controllers.intstr import IntOrPercentError
from kcontrol_controllers.statefulset._identity import get_ordinal
from kcontrol_controllers.statefulset._pods import (
    get_pod_revision,
    new_stateful_set_pod,
    set_pod_revision,
)
from kcontrol_controllers.statefulset._replicas import (
    CondemnedStep,
    OrdinalSplit,
    allows_burst,
    condemned_step,
    first_unavailable,
    get_stateful_set_max_unavailable,
    replica_wait_reason,
    rolling_update_deletions,
    split_by_ordinal,
)


@pytest.mark.parametrize(
    ("max_unavailable", "replicas", "expected"),
    [
        (None, 10, 1),
        (3, 10, 3),
        (3, 0, 3),
        (0, 0, 1),
        ("10%", 25, 2),
        ("100%", 5, 5),
        ("50%", 5, 2),
        ("10%", 5, 1),
        ("1%", 0, 1),
        ("0%", 0, 1),
        ("+40%", 10, 4),
    ],
)
def test_get_stateful_set_max_unavailable(
    max_unavailable: int | str | None, replicas: int, expected: int
) -> None:
    assert get_stateful_set_max_unavailable(max_unavailable, replicas) == expected


@pytest.mark.parametrize("value", ["10", "ten%", "%", "1.5%", True, 1.5])
def test_get_stateful_set_max_unavailable_rejects(value: Any) -> None:
    with pytest.raises(IntOrPercentError):
        get_stateful_set_max_unavailable(value, 10)


def test_allows_burst() -> None:
    set_ = new_stateful_set(1)
    assert not allows_burst(set_)
    set_["spec"]["podManagementPolicy"] = "OrderedReady"
    assert not allows_burst(set_)
    set_["spec"]["podManagementPolicy"] = "Parallel"
    assert allows_burst(set_)


def healthy(set_: Object, ordinal: int, revision: str = "rev-1") -> Object:
    pod = make_running(new_stateful_set_pod(set_, ordinal))
    set_pod_revision(pod, revision)
    return pod


def split(set_: Object, pods: list[Object]) -> OrdinalSplit:
    return split_by_ordinal(
        set_,
        pods,
        current_set=set_,
        update_set=set_,
        current_revision="rev-1",
        update_revision="rev-2",
    )


def test_split_by_ordinal() -> None:
    set_ = new_stateful_set(3)
    set_["spec"]["ordinals"] = {"start": 2}  # the range is [2, 4]
    pods = [
        healthy(set_, 3),
        healthy(set_, 0),
        healthy(set_, 6),
        healthy(set_, 2),
        healthy(set_, 5),
        obj("stray"),  # no ordinal: ignored
    ]
    result = split(set_, pods)
    assert [get_ordinal(p) for p in result.replicas] == [2, 3, 4]
    assert result.replicas[0] is pods[3] and result.replicas[1] is pods[0]
    built = result.replicas[2]
    assert "status" not in built, "ordinal 4 had no pod: one is built, not created"
    assert get_pod_revision(built) == "rev-2"
    assert [get_ordinal(p) for p in result.condemned] == [6, 5, 0]


def test_split_new_pods_take_the_current_revision_below_the_partition() -> None:
    set_ = new_stateful_set(3)
    set_["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}
    result = split(set_, [])
    assert [get_pod_revision(p) for p in result.replicas] == ["rev-1", "rev-1", "rev-2"]


def test_split_with_zero_replicas_condemns_everything() -> None:
    set_ = new_stateful_set(0)
    result = split(set_, [healthy(set_, 0), healthy(set_, 1)])
    assert result.replicas == []
    assert [get_ordinal(p) for p in result.condemned] == [1, 0]


def test_split_of_a_duplicated_ordinal_keeps_the_later_pod() -> None:
    set_ = new_stateful_set(2)
    first, second = healthy(set_, 1), healthy(set_, 1)
    second["metadata"]["name"] = "foo-01"
    assert split(set_, [first, second]).replicas[1] is second


def test_first_unavailable() -> None:
    set_ = new_stateful_set(3)
    replicas = [healthy(set_, 0), make_running(new_stateful_set_pod(set_, 1), ready=False)]
    replicas.append(terminate(healthy(set_, 2)))
    condemned = [make_running(new_stateful_set_pod(set_, 4), ready=False), healthy(set_, 3)]
    result = OrdinalSplit(replicas, condemned)
    count, first = first_unavailable(result, 0, NOW)
    assert count == 3 and first is replicas[1]

    result = OrdinalSplit([healthy(set_, 0)], condemned)
    count, first = first_unavailable(result, 0, NOW)
    assert count == 1 and first is condemned[0]

    assert first_unavailable(OrdinalSplit([healthy(set_, 0)], []), 0, NOW) == (0, None)


def test_first_unavailable_counts_min_ready_seconds() -> None:
    set_ = new_stateful_set(1)
    pod = make_running(new_stateful_set_pod(set_, 0), ready_for=timedelta(seconds=5))
    assert first_unavailable(OrdinalSplit([pod], []), 10, NOW) == (1, pod)
    assert first_unavailable(OrdinalSplit([pod], []), 5, NOW) == (0, None)


@pytest.mark.parametrize(
    ("state", "min_ready_seconds", "reason"),
    [
        ("healthy", 0, None),
        ("terminating", 0, "Terminate"),
        ("not ready", 0, "be Running and Ready"),
        ("pending", 0, "be Running and Ready"),
        ("ready 5s", 10, "be Available"),
        ("ready 5s", 5, None),
    ],
)
def test_replica_wait_reason(state: str, min_ready_seconds: int, reason: str | None) -> None:
    set_ = new_stateful_set(1)
    pod = new_stateful_set_pod(set_, 0)
    if state == "healthy":
        make_running(pod)
    elif state == "terminating":
        terminate(make_running(pod))
    elif state == "not ready":
        make_running(pod, ready=False)
    elif state == "pending":
        pod["status"] = {"phase": "Pending"}
    else:
        make_running(pod, ready_for=timedelta(seconds=5))
    assert replica_wait_reason(pod, min_ready_seconds, NOW) == reason


def _condemned(state: str) -> Object:
    set_ = new_stateful_set(1)
    pod = new_stateful_set_pod(set_, 3)
    if state == "terminating":
        return terminate(make_running(pod))
    if state == "not ready":
        return make_running(pod, ready=False)
    if state == "not available":
        return make_running(pod, ready_for=timedelta(seconds=1))
    return make_running(pod)


@pytest.mark.parametrize(
    ("state", "monotonic", "is_first_unavailable", "step"),
    [
        ("terminating", True, False, CondemnedStep.WAIT),
        ("terminating", False, False, CondemnedStep.SKIP),
        ("terminating", True, True, CondemnedStep.WAIT),
        ("not ready", True, False, CondemnedStep.WAIT),
        ("not ready", True, True, CondemnedStep.DELETE),
        ("not ready", False, False, CondemnedStep.DELETE),
        ("not available", True, False, CondemnedStep.WAIT),
        ("not available", True, True, CondemnedStep.DELETE),
        ("not available", False, False, CondemnedStep.DELETE),
        ("healthy", True, False, CondemnedStep.DELETE),
    ],
)
def test_condemned_step(
    state: str, monotonic: bool, is_first_unavailable: bool, step: CondemnedStep
) -> None:
    pod = _condemned(state)
    other = _condemned("not ready")
    first = pod if is_first_unavailable else other
    assert condemned_step(pod, first, monotonic=monotonic, min_ready_seconds=10, now=NOW) is step


def test_condemned_step_compares_the_first_unavailable_pod_by_identity() -> None:
    pod = _condemned("not ready")
    twin = _condemned("not ready")  # equal, but another object
    assert twin == pod
    step = condemned_step(pod, twin, monotonic=True, min_ready_seconds=0, now=NOW)
    assert step is CondemnedStep.WAIT


def rolling_set(rolling_update: dict[str, Any] | None, replicas: int = 5) -> Object:
    set_ = new_stateful_set(replicas)
    strategy: dict[str, Any] = {"type": "RollingUpdate"}
    if rolling_update is not None:
        strategy["rollingUpdate"] = rolling_update
    set_["spec"]["updateStrategy"] = strategy
    return set_


@pytest.mark.parametrize(
    ("rolling_update", "revisions", "unhealthy", "expected"),
    [
        pytest.param(None, ["old"] * 5, set(), [4], id="no block: one at a time, from the top"),
        pytest.param({"partition": 0}, ["old"] * 4 + ["new"], set(), [3], id="skips updated pods"),
        pytest.param({"maxUnavailable": 2}, ["old"] * 5, set(), [4, 3], id="maxUnavailable 2"),
        pytest.param(
            {"maxUnavailable": 2}, ["old"] * 5, {0}, [4], id="an unavailable pod uses the budget"
        ),
        pytest.param(
            {"maxUnavailable": 2}, ["old"] * 5, {0, 1}, [], id="budget spent below the partition"
        ),
        pytest.param(
            {"partition": 3, "maxUnavailable": "100%"},
            ["old"] * 5,
            set(),
            [4, 3],
            id="not below the partition",
        ),
        pytest.param({"maxUnavailable": "40%"}, ["new"] * 5, set(), [], id="all updated"),
        pytest.param(
            {"maxUnavailable": 3}, ["old"] * 5, {"t4"}, [3, 2], id="terminating: not again"
        ),
    ],
)
def test_rolling_update_deletions(
    rolling_update: dict[str, Any] | None,
    revisions: list[str],
    unhealthy: set[Any],
    expected: list[int],
) -> None:
    set_ = rolling_set(rolling_update)
    replicas = [healthy(set_, i, revision) for i, revision in enumerate(revisions)]
    for marker in unhealthy:
        if isinstance(marker, int):
            make_running(replicas[marker], ready=False)
        else:
            terminate(replicas[int(marker[1:])])
    assert rolling_update_deletions(set_, replicas, "new", NOW) == expected


def test_rolling_update_waits_for_min_ready_seconds() -> None:
    set_ = rolling_set(None)
    set_["spec"]["minReadySeconds"] = 30
    replicas = [healthy(set_, i, "old") for i in range(5)]
    make_running(replicas[0], ready_for=timedelta(seconds=10))
    assert rolling_update_deletions(set_, replicas, "new", NOW) == []
    assert rolling_update_deletions(set_, replicas, "new", NOW + timedelta(seconds=20)) == [4]
