"""Stale DisruptionTarget conditions: upstream's TestStalePodDisruption table, through the
pod handlers and the stale-pod queue on a fake clock, as the status writes sent."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from disruption_fixtures import NOW, NS, Fixture, drain, new_pod, ts

from kcontrol.client import PODS
from kcontrol.controller import Result
from kcontrol_controllers.disruption._stale import stale_disruption_wait

TIMEOUT = 120.0


def target(
    status: str = "True", reason: str = "", since: timedelta = timedelta()
) -> dict[str, Any]:
    condition = {
        "type": "DisruptionTarget",
        "status": status,
        "lastTransitionTime": ts(NOW - since),
    }
    if reason:
        condition["reason"] = reason
        condition["message"] = "evicted"
    return condition


def pod_with(
    *conditions: dict[str, Any], deleting: bool = False, phase: str | None = None
) -> dict[str, Any]:
    pod = new_pod("foo", deleting=deleting)
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}, *conditions]
    if phase is not None:
        pod["status"]["phase"] = phase
    return pod


@pytest.mark.parametrize(
    ("pod", "passed", "want"),
    [
        pytest.param(
            pod_with(target(reason="EvictionByEvictionAPI")),
            121,
            "False",
            id="stale-pod-disruption",
        ),
        pytest.param(pod_with(target()), 119, "True", id="pod-disruption-in-progress"),
        pytest.param(pod_with(target(), deleting=True), 121, "True", id="pod-disruption-actuated"),
        pytest.param(pod_with(deleting=True), 121, None, id="no-pod-disruption"),
        pytest.param(
            pod_with(target(status="False"), deleting=True),
            121,
            "False",
            id="pod-disruption-cleared",
        ),
        pytest.param(
            pod_with(target(reason="TerminationByKubelet")), 121, "True", id="kubelet-termination"
        ),
        pytest.param(pod_with(target(), phase="Failed"), 121, "True", id="terminal-pod"),
    ],
)
async def test_stale_pod_disruption(pod: dict[str, Any], passed: float, want: str | None) -> None:
    """TestStalePodDisruption: after ``passed`` seconds the pod's DisruptionTarget is
    ``want`` (None: it has none)."""
    f = Fixture(stale_timeout=TIMEOUT)
    stored = f.add_pod(pod)
    f.controller.add_pod(stored)
    f.clock.step(passed)
    for key in await drain(f.controller.stale_controller.queue):
        await f.controller.sync_stale_pod(key)
    conditions = f.client.tracker.get(PODS, "foo", namespace=NS)["status"]["conditions"]
    found = [c for c in conditions if c["type"] == "DisruptionTarget"]
    assert [c["status"] for c in found] == ([] if want is None else [want])
    writes = [a for a in f.client.actions_for("update", PODS) if a.subresource == "status"]
    changed = want == "False" and pod["status"]["conditions"][-1]["status"] == "True"
    assert len(writes) == (1 if changed else 0)
    if changed:
        assert found == [
            {
                "type": "DisruptionTarget",
                "status": "False",
                "lastTransitionTime": ts(NOW + timedelta(seconds=passed)),
                "observedGeneration": 1,
            }
        ]


async def test_condition_not_yet_stale_is_requeued_for_the_time_left() -> None:
    f = Fixture(stale_timeout=TIMEOUT)
    f.add_pod(pod_with(target(since=timedelta(seconds=20))))
    assert await f.controller.sync_stale_pod(f"{NS}/foo") == Result(requeue_after=100.0)
    assert f.client.actions_for("update", PODS) == []


async def test_deleted_pod_is_skipped() -> None:
    f = Fixture()
    assert await f.controller.sync_stale_pod(f"{NS}/gone") is None


@pytest.mark.parametrize(
    ("pod", "wait"),
    [
        pytest.param(pod_with(target(since=timedelta(seconds=30))), 90.0, id="thirty-seconds-old"),
        pytest.param(pod_with(target(since=timedelta(minutes=5))), 0.0, id="long-stale"),
        pytest.param(pod_with(target(status="False")), None, id="false"),
        pytest.param(pod_with(target(), phase="Succeeded"), None, id="succeeded"),
        pytest.param(pod_with(), None, id="no-condition"),
    ],
)
def test_stale_disruption_wait(pod: dict[str, Any], wait: float | None) -> None:
    assert stale_disruption_wait(pod, NOW, TIMEOUT) == wait
