"""Automatic rollback (kcontrol's own, issue 40): the decision, table-driven, and whole syncs
over the fake server - trigger, hold, release, and each interaction (paused, ``kubectl
rollout undo``, Recreate, resizing, a template change, the flag)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from deployment_fixtures import Fixture, new_deployment, new_replica_set

from kcontrol.client import DEPLOYMENTS, REPLICASETS, Object
from kcontrol_controllers.conditions import get_condition
from kcontrol_controllers.deployment import (
    AUTO_ROLLBACK_ANNOTATION,
    ROLLED_BACK,
    ROLLED_BACK_TO_ANNOTATION,
)
from kcontrol_controllers.deployment._autorollback import (
    Hold,
    enabled,
    hold_conditions,
    hold_message,
    plan,
    target,
    timed_out,
)
from kcontrol_controllers.deployment._conditions import (
    PROGRESSING,
    REPLICA_SET_UPDATED_REASON,
    TIMED_OUT_REASON,
)

NOW = "2026-01-01T00:00:00Z"


def timed_out_condition(rs_name: str, message: str | None = None) -> dict[str, Any]:
    return {
        "type": PROGRESSING,
        "status": "False",
        "reason": TIMED_OUT_REASON,
        "message": message or f'ReplicaSet "{rs_name}" has timed out progressing.',
        "lastUpdateTime": NOW,
        "lastTransitionTime": NOW,
    }


def opted_in(d: Object, value: str = "true") -> Object:
    d["metadata"]["annotations"][AUTO_ROLLBACK_ANNOTATION] = value
    return d


def old_template(rs: Object, image: str = "foo/bar:1") -> Object:
    """Make ``rs`` a ReplicaSet of an earlier template (another image)."""
    rs["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return rs


def scenario(
    *,
    replicas: int = 3,
    strategy: str = "RollingUpdate",
    surge: int = 1,
    unavailable: int = 0,
    good: tuple[int, int] = (3, 3),
    failed: tuple[int, int] = (1, 0),
    annotation: str | None = "true",
) -> tuple[Object, Object, Object]:
    """A Deployment whose rollout from ``foo-v1`` (``good``: replicas, available) to
    ``foo-v2`` (``failed``: replicas, available; its template is the Deployment's) timed
    out; opted in unless ``annotation`` is None."""
    d = new_deployment(
        "foo",
        replicas,
        max_surge=surge,
        max_unavailable=unavailable,
        strategy=strategy,
        progress_deadline_seconds=10,
    )
    if annotation is not None:
        opted_in(d, annotation)
    d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "2"
    v1 = old_template(new_replica_set(d, "foo-v1", good[0], revision=1, available=good[1]))
    v2 = new_replica_set(d, "foo-v2", failed[0], revision=2, available=failed[1])
    if annotation is not None:  # copied from the Deployment, as the controller does
        v2["metadata"]["annotations"][AUTO_ROLLBACK_ANNOTATION] = annotation
    for rs in (v1, v2):
        rs["metadata"]["annotations"].update(
            {
                "deployment.kubernetes.io/desired-replicas": str(replicas),
                "deployment.kubernetes.io/max-replicas": str(replicas + surge),
            }
        )
    d["status"] = {
        "observedGeneration": 1,
        "replicas": good[0] + failed[0],
        "updatedReplicas": failed[0],
        "availableReplicas": good[1] + failed[1],
        "conditions": [timed_out_condition("foo-v2")],
    }
    return d, v1, v2


def resizes(f: Fixture) -> list[tuple[str, int]]:
    return [
        (a.name, a.patch["spec"]["replicas"])
        for a in f.client.actions_for("patch", REPLICASETS)
        if "replicas" in (a.patch or {}).get("spec", {})
    ]


def hold_annotations(f: Fixture) -> list[tuple[str, Any]]:
    """(name, value) of every write of the hold annotation, in order."""
    found = []
    for a in f.client.actions_for("patch", REPLICASETS):
        annotations = ((a.patch or {}).get("metadata") or {}).get("annotations") or {}
        if ROLLED_BACK_TO_ANNOTATION in annotations:
            found.append((a.name, annotations[ROLLED_BACK_TO_ANNOTATION]))
    return found


def written_status(f: Fixture) -> dict[str, Any]:
    (write,) = f.client.actions_for("update", DEPLOYMENTS)
    assert write.subresource == "status" and write.object is not None
    return dict(write.object["status"])


def caught_up(f: Fixture, statuses: dict[str, dict[str, Any]] | None = None) -> None:
    """The informers' caches after they saw every write (and the ReplicaSets' ``statuses``
    by name, as their controller would have written them)."""
    for resource in (DEPLOYMENTS, REPLICASETS):
        for stored in f.client.tracker.list(resource)["items"]:
            name = stored["metadata"]["name"]
            obj = stored
            if statuses and name in statuses:
                obj = f.client.tracker.update(
                    resource, {**stored, "status": statuses[name]}, subresource="status"
                )
            f.informers.for_resource(resource).indexer.update(copy.deepcopy(obj))


def rollbacks(f: Fixture) -> float | None:
    return f.registry.get_sample_value("kcontrol_deployment_auto_rollbacks_total")


# -- the decision ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "by_default", "expected"),
    [
        pytest.param(None, False, False, id="off by default"),
        pytest.param(None, True, True, id="on by the flag"),
        pytest.param("true", False, True, id="opted in"),
        pytest.param("false", True, False, id="opted out of the flag"),
        pytest.param("yes please", False, False, id="unreadable: the flag decides (off)"),
        pytest.param("yes please", True, True, id="unreadable: the flag decides (on)"),
    ],
)
def test_enabled(annotation: str | None, by_default: bool, expected: bool) -> None:
    d = new_deployment("foo", 1)
    if annotation is not None:
        opted_in(d, annotation)
    assert enabled(d, by_default) is expected


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        pytest.param([timed_out_condition("foo-v2")], True, id="upstream's timeout of it"),
        pytest.param([], False, id="no condition"),
        pytest.param([timed_out_condition("foo-v1")], False, id="another ReplicaSet's timeout"),
        pytest.param(
            [timed_out_condition("foo-v2", "held: rolled back")], False, id="the hold's message"
        ),
        pytest.param(
            [{**timed_out_condition("foo-v2"), "status": "True"}], False, id="status True"
        ),
        pytest.param(
            [{**timed_out_condition("foo-v2"), "reason": REPLICA_SET_UPDATED_REASON}],
            False,
            id="progressing",
        ),
    ],
)
def test_timed_out(conditions: list[dict[str, Any]], expected: bool) -> None:
    d, _, v2 = scenario()
    d["status"]["conditions"] = conditions
    assert timed_out(d, v2) is expected


def test_target_is_the_newest_serving_older_replica_set() -> None:
    d, v1, v2 = scenario()
    v0 = old_template(new_replica_set(d, "foo-v0", 0, revision=0, available=0), "foo/bar:0")
    newer_idle = old_template(new_replica_set(d, "foo-v15", 0, revision=5, available=0), "x")
    assert target(v2, [v0, v1, newer_idle]) is v1, "an older one with available pods wins"
    assert target(v2, [v0, newer_idle]) is newer_idle, "else the newest older one"
    assert target(v2, [v2]) is None and target(v2, []) is None


def _plan_case(change: str) -> tuple[Object, Object | None, list[Object], Hold | None]:
    d, v1, v2 = scenario()
    new: Object | None = v2
    old = [v1]
    expected: Hold | None = Hold(v2, v1, started=True)
    if change == "not opted in":
        del d["metadata"]["annotations"][AUTO_ROLLBACK_ANNOTATION]
        expected = None
    elif change == "paused":
        d["spec"]["paused"] = True
        expected = None
    elif change == "rollout undo pending":
        d["metadata"]["annotations"]["deprecated.deployment.rollback.to"] = "1"
        expected = None
    elif change == "no new ReplicaSet":
        new, expected = None, None
    elif change == "still progressing":
        d["status"]["conditions"] = []
        expected = None
    elif change == "nothing to go back to":
        old, expected = [], None
    elif change == "held":
        v2["metadata"]["annotations"][ROLLED_BACK_TO_ANNOTATION] = "foo-v1"
        d["status"]["conditions"] = []  # the hold does not depend on the condition
        expected = Hold(v2, v1, started=False)
    elif change == "held to a ReplicaSet that is gone":
        v2["metadata"]["annotations"][ROLLED_BACK_TO_ANNOTATION] = "foo-v0"
        expected = Hold(v2, v1, started=True)
    elif change == "hold released":
        d["status"]["conditions"] = [
            timed_out_condition("foo-v2", hold_message(Hold(v2, v1, started=False)))
        ]
        expected = None
    return d, new, old, expected


@pytest.mark.parametrize(
    "change",
    [
        "timed out",
        "not opted in",
        "paused",
        "rollout undo pending",
        "no new ReplicaSet",
        "still progressing",
        "nothing to go back to",
        "held",
        "held to a ReplicaSet that is gone",
        "hold released",
    ],
)
def test_plan(change: str) -> None:
    d, new, old, expected = _plan_case(change)
    assert plan(d, new, old, by_default=False) == expected


def test_hold_conditions_keep_their_times_once_set() -> None:
    d, v1, v2 = scenario()
    hold = Hold(v2, v1, started=False)
    first: dict[str, Any] = copy.deepcopy(d["status"])
    hold_conditions(first, d["status"], hold, _at(5))
    progressing = get_condition(first, PROGRESSING)
    rolled_back = get_condition(first, ROLLED_BACK)
    assert progressing is not None and rolled_back is not None
    assert (progressing["status"], progressing["reason"]) == ("False", TIMED_OUT_REASON)
    assert progressing["lastTransitionTime"] == NOW, "still False: the transition stays"
    assert progressing["message"] == rolled_back["message"]
    assert '"foo-v2" (revision 2)' in progressing["message"]
    assert '"foo-v1" (revision 1)' in progressing["message"]
    assert (rolled_back["status"], rolled_back["lastTransitionTime"]) == ("True", _stamp(5))
    again: dict[str, Any] = copy.deepcopy(first)
    hold_conditions(again, first, hold, _at(60))
    assert again == first, "a second sync of the same hold changes nothing"


def _at(second: int) -> Any:
    from datetime import UTC, datetime, timedelta  # noqa: PLC0415

    return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=second)


def _stamp(second: int) -> str:
    return _at(second).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- whole syncs ---------------------------------------------------------------------------------


async def test_a_timed_out_rollout_is_rolled_back_and_held() -> None:
    f = Fixture()
    d, v1, v2 = scenario()
    f.seed(d, v1, v2)

    await f.sync(d)

    assert hold_annotations(f) == [("foo-v2", "foo-v1")]
    assert resizes(f) == [("foo-v2", 0)], "the failed pods go; v1 already has every replica"
    status = written_status(f)
    progressing = get_condition(status, PROGRESSING)
    rolled_back = get_condition(status, ROLLED_BACK)
    assert progressing is not None and rolled_back is not None
    assert (progressing["status"], progressing["reason"]) == ("False", TIMED_OUT_REASON)
    assert rolled_back["status"] == "True"
    assert "rolled back" in progressing["message"]
    assert any("RolledBack" in e and "foo-v1" in e for e in f.recorder.events), f.recorder.events
    assert rollbacks(f) == 1.0
    assert not any(a.resource is DEPLOYMENTS and a.subresource != "status" for a in f.writes()), (
        "the Deployment's spec and metadata are never written"
    )


async def test_a_rollback_grows_the_good_replica_set_within_the_surge() -> None:
    """v1 had been scaled down to 1 by the rollout; v2's 3 pods never became available."""
    f = Fixture()
    d, v1, v2 = scenario(replicas=4, surge=1, unavailable=1, good=(1, 1), failed=(3, 0))
    f.seed(d, v1, v2)

    await f.sync(d)

    # 4 pods + 1 surge: v1 may grow by 1 only (to 2) while v2 still holds 3 pods.
    assert resizes(f) == [("foo-v1", 2)]


async def test_unhealthy_failed_pods_go_first_without_costing_availability() -> None:
    f = Fixture()
    d, v1, v2 = scenario(replicas=4, surge=1, unavailable=1, good=(2, 2), failed=(3, 0))
    f.seed(d, v1, v2)

    await f.sync(d)

    # 5 pods, the surge used up: v1 cannot grow. Up to 5 - (4 - 1) = 2 pods may go; v2's
    # unavailable ones go first (costing no availability), and no available one goes.
    assert resizes(f) == [("foo-v2", 1)]


async def test_a_held_deployment_stays_held_with_the_failed_template_reapplied() -> None:
    """A GitOps tool re-applying the failed template changes nothing: the template still
    hashes to foo-v2, which is held - once the rollback is done, a sync writes nothing."""
    f = Fixture()
    d, v1, v2 = scenario(good=(3, 3), failed=(0, 0))
    v2["metadata"]["annotations"][ROLLED_BACK_TO_ANNOTATION] = "foo-v1"
    f.seed(d, v1, v2)

    await f.sync(d)
    assert resizes(f) == [] and hold_annotations(f) == []
    caught_up(f)
    f.client.clear_actions()
    await f.sync(d)

    assert f.writes() == [], "held and done: nothing to write"
    assert rollbacks(f) in (None, 0.0), "a hold carried on is not a new rollback"


@pytest.mark.parametrize(
    ("replicas", "good", "failed", "expected"),
    [
        pytest.param(5, 3, 0, [("foo-v1", 5)], id="scaled up"),
        pytest.param(2, 3, 0, [("foo-v1", 2)], id="scaled down"),
        pytest.param(3, 0, 0, [("foo-v1", 3)], id="scaled up from zero"),
        pytest.param(6, 2, 2, [("foo-v1", 5)], id="scaled up mid-rollback"),
    ],
)
async def test_a_resize_during_the_hold_reaches_the_good_replica_set(
    replicas: int, good: int, failed: int, expected: list[tuple[str, int]]
) -> None:
    """Mid-rollback, upstream's proportional scaling would grow the failed ReplicaSet too:
    the hold grows only the good one (within the surge: 6 + 1 - 4 pods = 3 more)."""
    f = Fixture()
    d, v1, v2 = scenario(replicas=replicas, surge=1, good=(good, good), failed=(failed, 0))
    v2["metadata"]["annotations"][ROLLED_BACK_TO_ANNOTATION] = "foo-v1"
    for rs in (v1, v2):  # the size they were last scaled for
        rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] = str(
            good + failed
        )
    f.seed(d, v1, v2)

    await f.sync(d)

    assert resizes(f) == expected


async def test_a_new_template_rolls_forward_and_clears_the_condition() -> None:
    f = Fixture()
    d, v1, v2 = scenario(good=(3, 3), failed=(0, 0))
    v2["metadata"]["annotations"][ROLLED_BACK_TO_ANNOTATION] = "foo-v1"
    d["status"]["conditions"] = [
        timed_out_condition("foo-v2", "rolled back ..."),
        {"type": ROLLED_BACK, "status": "True", "reason": TIMED_OUT_REASON, "message": "x"},
    ]
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "foo/bar:3"
    f.seed(d, v1, v2)

    await f.sync(d)

    created = f.client.actions_for("create", REPLICASETS)
    assert len(created) == 1, "the fixed template's ReplicaSet"
    status = f.client.actions_for("update", DEPLOYMENTS)[-1].object
    assert status is not None
    assert get_condition(status["status"], ROLLED_BACK) is None


async def test_removing_the_hold_resumes_the_rollout() -> None:
    f = Fixture()
    d, v1, v2 = scenario(good=(3, 3), failed=(0, 0))
    held = hold_message(Hold(v2, v1, started=False))
    d["status"]["conditions"] = [timed_out_condition("foo-v2", held)]
    f.seed(d, v1, v2)

    await f.sync(d)

    assert hold_annotations(f) == []
    assert resizes(f) == [("foo-v2", 1)], "the usual rollout: v2 grows by the surge"


@pytest.mark.parametrize("annotation", [None, "false"])
async def test_deployments_not_opted_in_are_left_as_upstream_leaves_them(
    annotation: str | None,
) -> None:
    f = Fixture()
    d, v1, v2 = scenario(annotation=annotation)
    f.seed(d, v1, v2)

    await f.sync(d)

    assert hold_annotations(f) == [] and resizes(f) == []
    assert f.recorder.events == []


async def test_the_flag_opts_every_deployment_in() -> None:
    f = Fixture()
    f.dc._auto_rollback = True
    d, v1, v2 = scenario(annotation=None)
    f.seed(d, v1, v2)

    await f.sync(d)

    assert hold_annotations(f) == [("foo-v2", "foo-v1")]


async def test_a_paused_deployment_is_not_rolled_back() -> None:
    f = Fixture()
    d, v1, v2 = scenario()
    d["spec"]["paused"] = True
    f.seed(d, v1, v2)

    await f.sync(d)

    assert hold_annotations(f) == []


async def test_a_paused_hold_keeps_its_target_through_history_cleanup() -> None:
    """Paused and scaled to 0 during a hold, with revisionHistoryLimit 0: the clean-up that
    paused Deployments get must not delete the ReplicaSet the hold goes back to."""
    f = Fixture()
    d, v1, v2 = scenario(replicas=0, good=(0, 0), failed=(0, 0))
    d["spec"]["paused"] = True
    d["spec"]["revisionHistoryLimit"] = 0
    v2["metadata"]["annotations"][ROLLED_BACK_TO_ANNOTATION] = "foo-v1"
    v0 = old_template(new_replica_set(d, "foo-v0", 0, revision=0, available=0), "foo/bar:0")
    for rs in (v0, v1, v2):
        rs["status"] = {"replicas": 0, "observedGeneration": 1}
    f.seed(d, v0, v1, v2)

    await f.sync(d)

    deleted = [a.name for a in f.client.actions_for("delete", REPLICASETS)]
    assert deleted == ["foo-v0"], "history is cleaned up, but not the hold's target"


async def test_recreate_scales_the_failed_replica_set_down_then_the_good_one_up() -> None:
    f = Fixture()
    d, v1, v2 = scenario(strategy="Recreate", good=(0, 0), failed=(3, 0))
    f.seed(d, v1, v2)

    await f.sync(d)
    assert resizes(f) == [("foo-v2", 0)], "first every failed pod goes"

    f.client.clear_actions()
    caught_up(f, {"foo-v2": {"replicas": 0, "availableReplicas": 0, "observedGeneration": 1}})
    await f.sync(d)
    assert resizes(f) == [("foo-v1", 3)], "then the good ReplicaSet comes back whole"
    assert hold_annotations(f) == [], "the hold was recorded once"
