"""Rollout progress (upstream progress_test.go: TestRequeueStuckDeployment,
TestSyncRolloutStatus) and the deadline requeue through a whole sync."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from deployment_fixtures import Fixture, new_deployment, new_replica_set

from kcontrol.clock import FakeClock
from kcontrol.controller import Result
from kcontrol.testing import FakeRecorder
from kcontrol_controllers.conditions import get_condition
from kcontrol_controllers.deployment._conditions import (
    NEW_RS_AVAILABLE_REASON,
    PROGRESSING,
    REPLICA_FAILURE,
    REPLICA_SET_UPDATED_REASON,
    TIMED_OUT_REASON,
)
from kcontrol_controllers.deployment._progress import requeue_stuck_deployment, sync_rollout_status
from kcontrol_controllers.deployment._writes import SyncContext

TEST_TIME = "2017-02-15T18:49:00Z"
TEST_DT = datetime(2017, 2, 15, 18, 49, 0, tzinfo=UTC)


def current_deployment(
    pds: int | None,
    replicas: int,
    status_replicas: int,
    updated: int,
    available: int,
    conditions: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    d = new_deployment("progress-test", replicas, strategy="Recreate")
    d["metadata"]["generation"] = 0
    if pds is not None:
        d["spec"]["progressDeadlineSeconds"] = pds
    d["status"] = {
        "replicas": status_replicas,
        "updatedReplicas": updated,
        "availableReplicas": available,
    }
    if conditions:
        d["status"]["conditions"] = copy.deepcopy(conditions)
    return d


def deployment_status(replicas: int, updated: int, available: int) -> dict[str, Any]:
    return {"replicas": replicas, "updatedReplicas": updated, "availableReplicas": available}


FAILED = [{"type": PROGRESSING, "reason": TIMED_OUT_REASON}]
STUCK = [{"type": PROGRESSING, "lastUpdateTime": TEST_TIME}]


def ctx_at(now: datetime) -> SyncContext:
    f = Fixture()
    clock = FakeClock(wall_start=now)
    return SyncContext(
        client=f.client, recorder=FakeRecorder(), rs_lister=f.ctx.rs_lister, clock=clock
    )


@pytest.mark.parametrize(
    ("d", "new_status", "now", "expected"),
    [
        pytest.param(
            current_deployment(None, 4, 3, 3, 2, None),
            deployment_status(3, 3, 2),
            TEST_DT,
            None,
            id="nil progressDeadlineSeconds specified",
        ),
        pytest.param(
            current_deployment(2**31 - 1, 4, 3, 3, 2, None),
            deployment_status(3, 3, 2),
            TEST_DT,
            None,
            id="infinite progressDeadlineSeconds specified",
        ),
        pytest.param(
            current_deployment(60, 4, 3, 3, 2, None),
            deployment_status(3, 3, 2),
            TEST_DT,
            None,
            id="no progressing condition found",
        ),
        pytest.param(
            current_deployment(60, 3, 3, 3, 3, STUCK),
            deployment_status(3, 3, 3),
            TEST_DT,
            None,
            id="complete deployment does not need to be requeued",
        ),
        pytest.param(
            current_deployment(60, 3, 3, 3, 0, FAILED),
            deployment_status(3, 3, 0),
            TEST_DT,
            None,
            id="already failed deployment does not need to be requeued",
        ),
        pytest.param(
            current_deployment(60, 3, 3, 3, 1, STUCK),
            deployment_status(3, 3, 1),
            TEST_DT + timedelta(seconds=30),
            Result(requeue_after=31.0),
            id="stuck deployment - 30s (plus a second of skew)",
        ),
        pytest.param(
            current_deployment(60, 3, 3, 3, 1, STUCK),
            deployment_status(3, 3, 1),
            TEST_DT + timedelta(seconds=59),
            Result(requeue_after=2.0),
            id="stuck deployment - 1s",
        ),
        pytest.param(
            current_deployment(60, 3, 3, 3, 1, STUCK),
            deployment_status(3, 3, 1),
            TEST_DT + timedelta(seconds=59, microseconds=1),
            Result(requeue=True),
            id="failed deployment - less than a second => now",
        ),
        pytest.param(
            current_deployment(60, 3, 3, 3, 1, STUCK),
            deployment_status(3, 3, 1),
            TEST_DT + timedelta(seconds=60),
            Result(requeue=True),
            id="failed deployment - now",
        ),
        pytest.param(
            current_deployment(60, 3, 3, 3, 1, STUCK),
            deployment_status(3, 3, 1),
            TEST_DT + timedelta(seconds=120),
            Result(requeue=True),
            id="failed deployment - 60s after deadline",
        ),
    ],
)
def test_requeue_stuck_deployment(
    d: dict[str, Any], new_status: dict[str, Any], now: datetime, expected: Result | None
) -> None:
    assert requeue_stuck_deployment(ctx_at(now), d, new_status) == expected


FAILED_TIMED_OUT = {
    "type": PROGRESSING,
    "status": "False",
    "reason": TIMED_OUT_REASON,
    "lastUpdateTime": TEST_TIME,
    "lastTransitionTime": TEST_TIME,
}
NEW_RS_AVAILABLE = {
    "type": PROGRESSING,
    "status": "True",
    "reason": NEW_RS_AVAILABLE_REASON,
    "lastUpdateTime": TEST_TIME,
    "lastTransitionTime": TEST_TIME,
}
RS_UPDATED = {
    "type": PROGRESSING,
    "status": "True",
    "reason": REPLICA_SET_UPDATED_REASON,
    "lastUpdateTime": TEST_TIME,
    "lastTransitionTime": TEST_TIME,
}
NOW = "2026-01-01T00:00:00Z"  # the fixture's wall clock


def rs_with_available(name: str, spec: int, replicas: int, available: int) -> dict[str, Any]:
    rs = new_replica_set(new_deployment("progress-test", 1), name, spec)
    rs["status"] = {"replicas": replicas, "availableReplicas": available}
    return rs


@pytest.mark.parametrize(
    ("d", "old", "new_rs", "expected"),
    [
        pytest.param(
            current_deployment(None, 3, 2, 2, 2, [RS_UPDATED]),
            [rs_with_available("bar", 0, 1, 1)],
            rs_with_available("foo", 3, 2, 2),
            None,
            id="no progress deadline: Progressing removed, no estimate",
        ),
        pytest.param(
            current_deployment(60, 3, 3, 3, 3, [NEW_RS_AVAILABLE]),
            [rs_with_available("bar", 3, 3, 3)],
            None,
            ("True", NEW_RS_AVAILABLE_REASON, TEST_TIME, TEST_TIME),
            id="complete deployment with one active replica set is not re-estimated",
        ),
        pytest.param(
            current_deployment(60, 3, 2, 2, 2, [RS_UPDATED]),
            [rs_with_available("bar", 0, 1, 1)],
            rs_with_available("foo", 3, 2, 2),
            ("True", REPLICA_SET_UPDATED_REASON, NOW, TEST_TIME),
            id="progressing: lastUpdateTime refreshed, lastTransitionTime kept when already True",
        ),
        pytest.param(
            current_deployment(60, 3, 2, 2, 2, [FAILED_TIMED_OUT]),
            [rs_with_available("bar", 0, 1, 1)],
            rs_with_available("foo", 3, 2, 2),
            ("True", REPLICA_SET_UPDATED_REASON, NOW, NOW),
            id="progressing: everything updated after a timed out condition",
        ),
        pytest.param(
            current_deployment(60, 3, 2, 2, 2, []),
            [rs_with_available("bar", 0, 1, 1)],
            rs_with_available("foo", 3, 2, 2),
            ("True", REPLICA_SET_UPDATED_REASON, NOW, NOW),
            id="progressing: created when missing",
        ),
        pytest.param(
            current_deployment(60, 3, 2, 2, 2, [RS_UPDATED]),
            [],
            rs_with_available("foo", 3, 3, 3),
            ("True", NEW_RS_AVAILABLE_REASON, NOW, TEST_TIME),
            id="complete: lastTransitionTime kept when already True",
        ),
        pytest.param(
            current_deployment(60, 3, 2, 2, 2, [FAILED_TIMED_OUT]),
            [],
            rs_with_available("foo", 3, 3, 3),
            ("True", NEW_RS_AVAILABLE_REASON, NOW, NOW),
            id="complete: everything updated after a timed out condition",
        ),
        pytest.param(
            current_deployment(60, 3, 2, 2, 2, []),
            [],
            rs_with_available("foo", 3, 3, 3),
            ("True", NEW_RS_AVAILABLE_REASON, NOW, NOW),
            id="complete: created when missing",
        ),
        pytest.param(
            current_deployment(60, 0, 3, 3, 3, [RS_UPDATED]),
            [rs_with_available("foo", 0, 0, 0)],
            None,
            ("True", NEW_RS_AVAILABLE_REASON, NOW, TEST_TIME),
            id="complete without a new replica set",
        ),
        pytest.param(
            current_deployment(60, 3, 2, 2, 2, [RS_UPDATED]),
            [],
            rs_with_available("foo", 3, 2, 2),
            ("False", TIMED_OUT_REASON, NOW, NOW),
            id="timed out: the deadline passed since the last progress",
        ),
    ],
)
async def test_sync_rollout_status(
    d: dict[str, Any],
    old: list[dict[str, Any]],
    new_rs: dict[str, Any] | None,
    expected: tuple[str, str, str, str] | None,
) -> None:
    f = Fixture()
    (stored,) = f.seed(d)
    all_rss = [*old, new_rs] if new_rs is not None else list(old)

    await sync_rollout_status(f.ctx, all_rss, new_rs, stored)

    condition = get_condition(stored["status"], PROGRESSING)
    if expected is None:
        assert condition is None
        return
    assert condition is not None
    got = (
        condition["status"],
        condition["reason"],
        condition.get("lastUpdateTime"),
        condition.get("lastTransitionTime"),
    )
    assert got == expected


async def test_sync_rollout_status_messages_name_the_replica_set() -> None:
    f = Fixture()
    (d,) = f.seed(current_deployment(60, 3, 2, 2, 2, []))
    new = rs_with_available("foo", 3, 3, 3)
    await sync_rollout_status(f.ctx, [new], new, d)
    condition = get_condition(d["status"], PROGRESSING)
    assert condition is not None
    assert condition["message"] == 'ReplicaSet "foo" has successfully progressed.'

    f = Fixture()
    (d,) = f.seed(current_deployment(60, 3, 2, 2, 2, []))
    new = rs_with_available("foo", 3, 3, 2)
    await sync_rollout_status(f.ctx, [new], new, d)
    condition = get_condition(d["status"], PROGRESSING)
    assert condition is not None
    assert condition["message"] == 'ReplicaSet "foo" is progressing.'

    f = Fixture()
    (d,) = f.seed(current_deployment(60, 3, 2, 2, 2, [RS_UPDATED]))
    new = rs_with_available("foo", 3, 2, 2)
    await sync_rollout_status(f.ctx, [new], new, d)
    condition = get_condition(d["status"], PROGRESSING)
    assert condition is not None
    assert condition["message"] == 'ReplicaSet "foo" has timed out progressing.'

    f = Fixture()
    (d,) = f.seed(current_deployment(60, 0, 3, 3, 3, [RS_UPDATED]))
    await sync_rollout_status(f.ctx, [rs_with_available("foo", 0, 0, 0)], None, d)
    condition = get_condition(d["status"], PROGRESSING)
    assert condition is not None
    assert condition["message"] == 'Deployment "progress-test" has successfully progressed.'


async def test_replica_failure_copied_from_new_replica_set_first() -> None:
    f = Fixture()
    (d,) = f.seed(current_deployment(None, 3, 2, 2, 2, []))
    failure = {
        "type": REPLICA_FAILURE,
        "status": "True",
        "reason": "FailedCreate",
        "message": "quota",
        "lastTransitionTime": TEST_TIME,
    }
    old = rs_with_available("old", 1, 1, 1)
    old["status"]["conditions"] = [{**failure, "reason": "FailedDelete", "message": "old"}]
    new = rs_with_available("new", 2, 1, 1)
    new["status"]["conditions"] = [failure]

    await sync_rollout_status(f.ctx, [old, new], new, d)
    assert get_condition(d["status"], REPLICA_FAILURE) == {**failure, "lastUpdateTime": TEST_TIME}

    new["status"]["conditions"] = []
    await sync_rollout_status(f.ctx, [old, new], new, d)
    got = get_condition(d["status"], REPLICA_FAILURE)
    assert got is not None and got["message"] == "old"  # else from any replica set

    old["status"]["conditions"] = []
    await sync_rollout_status(f.ctx, [old, new], new, d)
    assert get_condition(d["status"], REPLICA_FAILURE) is None  # removed once gone


async def test_unchanged_status_is_not_written() -> None:
    f = Fixture()
    (d,) = f.seed(current_deployment(None, 3, 2, 2, 2, []))
    rs = rs_with_available("foo", 3, 2, 2)
    await sync_rollout_status(f.ctx, [rs], rs, d)
    assert f.summary() == ["update deployments/status"]
    await sync_rollout_status(f.ctx, [rs], rs, d)
    assert f.summary() == ["update deployments/status"]  # second time: nothing new


async def test_stuck_deployment_is_requeued_at_its_deadline_then_times_out() -> None:
    """A whole sync: a rollout that stopped moving asks to be synced just after its
    deadline, and that sync marks it ProgressDeadlineExceeded."""
    f = Fixture()
    d = new_deployment("foo", 2, max_surge=1, max_unavailable=0, progress_deadline_seconds=600)
    template_hash_rs = new_replica_set(d, "foo-new", 2, revision=1)
    template_hash_rs["metadata"]["annotations"].update(
        {
            "deployment.kubernetes.io/desired-replicas": "2",
            "deployment.kubernetes.io/max-replicas": "3",
        }
    )
    template_hash_rs["status"] = {
        "replicas": 2,
        "readyReplicas": 1,
        "availableReplicas": 1,
        "observedGeneration": 1,
        "terminatingReplicas": 0,
    }
    d["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    d["status"] = {
        "observedGeneration": 1,
        "replicas": 2,
        "updatedReplicas": 2,
        "readyReplicas": 1,
        "availableReplicas": 1,
        "unavailableReplicas": 1,
        "terminatingReplicas": 0,
        "conditions": [
            {
                "type": "Available",
                "status": "False",
                "reason": "MinimumReplicasUnavailable",
                "message": "Deployment does not have minimum availability.",
                "lastUpdateTime": "2025-12-31T23:55:00Z",
                "lastTransitionTime": "2025-12-31T23:55:00Z",
            },
            {
                "type": PROGRESSING,
                "status": "True",
                "reason": REPLICA_SET_UPDATED_REASON,
                "message": 'ReplicaSet "foo-new" is progressing.',
                "lastUpdateTime": "2025-12-31T23:55:00Z",  # 5 minutes before "now"
                "lastTransitionTime": "2025-12-31T23:55:00Z",
            },
        ],
    }
    d, _ = f.seed(d, template_hash_rs)

    result = await f.sync(d)

    assert f.writes() == []
    assert result == Result(requeue_after=301.0)  # 10 min deadline - 5 min elapsed + 1 s

    f.clock.step(301)
    await f.sync(d)
    (write,) = f.writes()
    assert write.object is not None
    condition = get_condition(write.object["status"], PROGRESSING)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", TIMED_OUT_REASON)
