"""take_snapshot, rollout_status and is_new_replicaset: the pure maths behind the view."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol.rollout import is_new_replicaset, rollout_status, take_snapshot
from tests.rollout.rollout_fixtures import (
    NOW,
    condition,
    deployment,
    event,
    replicaset,
)


def with_status(**status: Any) -> dict[str, Any]:
    d = deployment()
    d["status"] = {"observedGeneration": 2, **status}
    return d


@pytest.mark.parametrize(
    ("obj", "done", "message"),
    [
        pytest.param(
            deployment(generation=3, observed=2),
            False,
            "Waiting for deployment spec update to be observed...",
            id="generation-not-observed",
        ),
        pytest.param(
            with_status(
                conditions=[condition("Progressing", "False", "ProgressDeadlineExceeded", "", 1)]
            ),
            False,
            'deployment "web" exceeded its progress deadline',
            id="deadline-exceeded",
        ),
        pytest.param(
            with_status(updatedReplicas=2, replicas=8, availableReplicas=5),
            False,
            'Waiting for deployment "web" rollout to finish: '
            "2 out of 6 new replicas have been updated...",
            id="updating",
        ),
        pytest.param(
            with_status(updatedReplicas=6, replicas=8, availableReplicas=5),
            False,
            'Waiting for deployment "web" rollout to finish: '
            "2 old replicas are pending termination...",
            id="old-pending-termination",
        ),
        pytest.param(
            with_status(updatedReplicas=6, replicas=6, availableReplicas=5),
            False,
            'Waiting for deployment "web" rollout to finish: '
            "5 of 6 updated replicas are available...",
            id="not-all-available",
        ),
        pytest.param(
            with_status(updatedReplicas=6, replicas=6, availableReplicas=6),
            True,
            'deployment "web" successfully rolled out',
            id="complete",
        ),
    ],
)
def test_rollout_status(obj: dict[str, Any], done: bool, message: str) -> None:
    assert rollout_status(obj) == (done, message)


def test_new_replicaset_is_the_one_with_the_deployments_template_ignoring_the_hash() -> None:
    d = deployment(image="img:2")
    assert is_new_replicaset(d, replicaset("a", "img:2", revision=2, desired=1, ready=0))
    assert not is_new_replicaset(d, replicaset("b", "img:1", revision=3, desired=1, ready=0))


def test_snapshot_orders_new_then_newest_revisions_and_keeps_only_owned() -> None:
    d = deployment(image="img:3")
    rs = [
        replicaset("r1", "img:1", revision=1, desired=0, ready=0),
        replicaset("r3", "img:3", revision=3, desired=2, ready=0),
        replicaset("r2", "img:2", revision=2, desired=4, ready=4),
        replicaset("x", "img:3", revision=9, desired=1, ready=1, owner_uid="someone-else"),
    ]
    snap = take_snapshot("demo", "web", deployments=[d], replicasets=rs, events=[], now=NOW)
    assert [r["metadata"]["name"] for r in snap.replicasets] == ["r3", "r2", "r1"]


def test_snapshot_picks_the_named_deployment_in_its_namespace() -> None:
    other = deployment()
    other["metadata"] = {**other["metadata"], "namespace": "elsewhere", "uid": "u2"}
    snap = take_snapshot("demo", "web", deployments=[other], replicasets=[], events=[], now=NOW)
    assert snap.deployment is None


def test_snapshot_keeps_the_latest_events_in_time_order() -> None:
    events = [event(f"R{i}", f"m{i}", age=100 - i) for i in range(12)]
    events.reverse()
    snap = take_snapshot(
        "demo",
        "web",
        deployments=[deployment()],
        replicasets=[],
        events=events,
        now=NOW,
        max_events=3,
    )
    assert [e["reason"] for e in snap.events] == ["R9", "R10", "R11"]


def test_event_time_prefers_event_time_then_last_timestamp() -> None:
    early = event("Early", "", age=50)
    late = event("Late", "", age=60)
    late["eventTime"] = "2026-11-23T11:59:59.500000Z"  # events.k8s.io-style, 0.5 s ago
    snap = take_snapshot(
        "demo", "web", deployments=[deployment()], replicasets=[], events=[late, early], now=NOW
    )
    assert [e["reason"] for e in snap.events] == ["Early", "Late"]
