"""Counting finished pods through the status and the finalizers: upstream's
TestTrackJobStatusAndRemoveFinalizers, in its 1.36 variants (the terminal condition waits for
terminating pods)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from job_fixtures import WALL, ago, new_job, new_pod, ts
from prometheus_client import CollectorRegistry

from kcontrol.client import JOBS, Object
from kcontrol.clock import FakeClock
from kcontrol.errors import InternalError
from kcontrol.testing import Action, FakeClient, FakeRecorder
from kcontrol_controllers.job._backoff import BackoffRecord, BackoffStore
from kcontrol_controllers.job._conditions import new_condition
from kcontrol_controllers.job._context import SyncContext
from kcontrol_controllers.job._indexed import (
    calculate_failed_indexes,
    parse_indexes,
    pods_with_delayed_deletion_per_index,
)
from kcontrol_controllers.job._metrics import JobMetrics
from kcontrol_controllers.job._pods import count_terminating_pods
from kcontrol_controllers.job._status import StatusTracker
from kcontrol_controllers.job._tracking import FinalizerExpectations, UncountedTerminatedPods
from kcontrol_controllers.podcontrol import PodControl
from kcontrol_controllers.podutil import filter_active_pods

KEY = "default/foobar"
COMPLETED = new_condition("Complete", "True", "", "", WALL)
SUCCEEDED = new_condition("SuccessCriteriaMet", "True", "", "", WALL)
FAILED = new_condition("Failed", "True", "", "", WALL)
FAILURE_TARGET = new_condition("FailureTarget", "True", "", "", WALL)


def pod(uid: str = "", phase: str = "Running", **kwargs: Any) -> Object:
    return new_pod(uid or f"anon-{id(kwargs)}-{phase}", phase=phase, **kwargs)


def st(**fields: Any) -> dict[str, Any]:
    """A status as the test compares it: counters, lists, conditions as (type, status)."""
    out: dict[str, Any] = {"succeeded_uids": [], "failed_uids": []}
    out.update(fields)
    return out


def project(status: dict[str, Any]) -> dict[str, Any]:
    uncounted = status.get("uncountedTerminatedPods") or {}
    out: dict[str, Any] = {
        "succeeded_uids": list(uncounted.get("succeeded") or []),
        "failed_uids": list(uncounted.get("failed") or []),
    }
    for field_name in ("active", "succeeded", "failed"):
        if status.get(field_name):
            out[field_name] = status[field_name]
    for field_name in ("completedIndexes", "failedIndexes", "completionTime"):
        if status.get(field_name) is not None and (
            field_name == "failedIndexes" or status[field_name] != ""
        ):
            out[field_name] = status[field_name]
    if status.get("conditions"):
        out["conditions"] = [(c["type"], c["status"]) for c in status["conditions"]]
    return out


@dataclass
class Case:
    pods: list[Object] = field(default_factory=list)
    spec: dict[str, Any] = field(default_factory=dict)
    status: dict[str, Any] = field(default_factory=dict)
    deleting: bool = False
    finished: dict[str, Any] | None = None
    expected_removed: frozenset[str] = frozenset()
    needs_flush: bool = False
    status_error: bool = False
    pod_error: bool = False
    want_updates: list[dict[str, Any]] = field(default_factory=list)
    want_patches: int = 0
    want_metrics: tuple[int, int] = (0, 0)


TERMINATING = ago(0)
COMPLETE_TIME = ts(WALL)

CASES: dict[str, Case] = {
    "no updates": Case(),
    "new active": Case(status={"active": 1}, needs_flush=True, want_updates=[st(active=1)]),
    "track finished pods": Case(
        pods=[
            pod("a", "Succeeded"),
            pod("b", "Failed"),
            pod("c", "Succeeded", deleted_at=TERMINATING),
            pod("d", "Failed", deleted_at=TERMINATING),
            pod("e", "Pending", deleted_at=TERMINATING),
            pod("x", "Pending"),
            pod("y", "Running"),
        ],
        want_patches=5,
        want_updates=[
            st(succeeded_uids=["a", "c"], failed_uids=["b", "d", "e"]),
            st(succeeded=2, failed=3),
        ],
        want_metrics=(2, 3),
    ),
    "past and new finished pods": Case(
        status={
            "active": 1,
            "succeeded": 2,
            "failed": 3,
            "uncountedTerminatedPods": {"succeeded": ["a", "e"], "failed": ["b", "f"]},
        },
        pods=[
            pod("e", "Succeeded", finalizer=False),
            pod("x", "Failed", finalizer=False),
            pod("y", "Pending", finalizer=False),
            pod("a", "Succeeded"),
            pod("b", "Failed"),
            pod("c", "Succeeded"),
            pod("d", "Failed"),
        ],
        want_patches=4,
        want_updates=[
            st(active=1, succeeded=3, failed=4, succeeded_uids=["a", "c"], failed_uids=["b", "d"]),
            st(active=1, succeeded=5, failed=6),
        ],
        want_metrics=(3, 3),
    ),
    "expecting removed finalizers": Case(
        status={
            "succeeded": 2,
            "failed": 3,
            "uncountedTerminatedPods": {"succeeded": ["a", "g"], "failed": ["b", "h"]},
        },
        expected_removed=frozenset({"c", "d", "g", "h"}),
        pods=[
            pod("a", "Succeeded"),
            pod("b", "Failed"),
            pod("c", "Succeeded"),
            pod("d", "Failed"),
            pod("e", "Succeeded"),
            pod("f", "Failed"),
            pod("g", "Succeeded"),
            pod("h", "Failed"),
        ],
        want_patches=4,
        want_updates=[
            st(succeeded=3, failed=4, succeeded_uids=["a", "e"], failed_uids=["b", "f"]),
            st(succeeded=5, failed=6),
        ],
        want_metrics=(3, 3),
    ),
    "succeeding job by JobSuccessPolicy": Case(
        pods=[pod("a", "Succeeded"), pod("b", "Failed"), pod("c", "Pending")],
        finished=SUCCEEDED,
        want_patches=3,
        want_updates=[
            st(
                succeeded_uids=["a"],
                failed_uids=["b"],
                conditions=[("SuccessCriteriaMet", "True")],
            ),
            st(
                succeeded=1,
                failed=1,
                conditions=[("SuccessCriteriaMet", "True"), ("Complete", "True")],
                completionTime=COMPLETE_TIME,
            ),
        ],
        want_metrics=(1, 1),
    ),
    "completing job": Case(
        pods=[pod("a", "Succeeded"), pod("b", "Failed")],
        finished=COMPLETED,
        want_patches=2,
        want_updates=[
            st(succeeded_uids=["a"], failed_uids=["b"]),
            st(
                succeeded=1,
                failed=1,
                conditions=[("Complete", "True")],
                completionTime=COMPLETE_TIME,
            ),
        ],
        want_metrics=(1, 1),
    ),
    "failing job": Case(
        pods=[pod("a", "Succeeded"), pod("b", "Failed"), pod("c", "Running")],
        finished=FAILED,
        want_patches=3,
        want_updates=[
            st(succeeded_uids=["a"], failed_uids=["b", "c"]),
            st(succeeded=1, failed=2, conditions=[("Failed", "True")]),
        ],
        want_metrics=(1, 2),
    ),
    "deleted job": Case(
        deleting=True,
        status={"active": 1},
        pods=[pod("a", "Succeeded"), pod("b", "Failed"), pod("x", "Running")],
        want_patches=3,
        want_updates=[
            st(active=1, succeeded_uids=["a"], failed_uids=["b"]),
            st(active=1, succeeded=1, failed=1),
        ],
        want_metrics=(1, 1),
    ),
    "status update error": Case(
        pods=[pod("a", "Succeeded"), pod("b", "Failed")],
        status_error=True,
        want_updates=[st(succeeded_uids=["a"], failed_uids=["b"])],
    ),
    "pod patch errors": Case(
        pods=[pod("a", "Succeeded"), pod("b", "Failed")],
        pod_error=True,
        want_patches=2,
        want_updates=[st(succeeded_uids=["a"], failed_uids=["b"])],
    ),
    "pod patch errors with partial success": Case(
        status={"uncountedTerminatedPods": {"succeeded": ["a"], "failed": ["b"]}},
        pods=[pod("a", "Succeeded", finalizer=False), pod("c", "Succeeded"), pod("d", "Failed")],
        pod_error=True,
        want_patches=2,
        want_updates=[st(succeeded=1, failed=1, succeeded_uids=["c"], failed_uids=["d"])],
    ),
    "indexed job new successful pods": Case(
        spec={"completionMode": "Indexed", "completions": 6},
        status={"active": 1},
        pods=[
            pod("p1", "Succeeded", index="1"),
            pod("p3", "Succeeded", index="3"),
            pod("p3b", "Succeeded", index="3"),
            pod("p5", "Running", index="5"),
            pod("px", "Succeeded"),
        ],
        want_patches=4,
        want_updates=[st(active=1, succeeded=2, completedIndexes="1,3")],
        want_metrics=(2, 0),
    ),
    "indexed job prev successful pods outside current completions index range with no new "
    "succeeded pods": Case(
        spec={"completionMode": "Indexed", "completions": 2, "parallelism": 2},
        status={"active": 2, "succeeded": 1, "completedIndexes": "3"},
        pods=[pod("p0", "Running", index="0"), pod("p1", "Running", index="1")],
        want_updates=[st(active=2)],
    ),
    "indexed job prev successful pods outside current completions index range with new "
    "succeeded pods in range": Case(
        spec={"completionMode": "Indexed", "completions": 2, "parallelism": 2},
        status={"active": 2, "succeeded": 1, "completedIndexes": "3"},
        pods=[pod("p0", "Running", index="0"), pod("p1", "Succeeded", index="1")],
        want_patches=1,
        want_updates=[st(active=2, succeeded=1, completedIndexes="1")],
        want_metrics=(1, 0),
    ),
    "indexed job new failed pods": Case(
        spec={"completionMode": "Indexed", "completions": 6},
        status={"active": 1},
        pods=[
            pod("a", "Failed", index="1"),
            pod("b", "Failed", index="3"),
            pod("c", "Failed", index="3"),
            pod("d", "Running", index="5"),
            pod("x", "Failed"),
        ],
        want_patches=4,
        want_updates=[
            st(active=1, failed_uids=["a", "b", "c"]),
            st(active=1, failed=3),
        ],
        want_metrics=(0, 3),
    ),
    "indexed job past and new pods": Case(
        spec={"completionMode": "Indexed", "completions": 7},
        status={"failed": 2, "succeeded": 5, "completedIndexes": "0-2,4,6,7"},
        pods=[
            pod("x0", "Succeeded", index="0", finalizer=False),
            pod("x1", "Failed", index="1", finalizer=False),
            pod("s1", "Succeeded", index="1"),
            pod("s3", "Succeeded", index="3"),
            pod("a", "Failed", index="2"),
            pod("b", "Failed", index="5"),
        ],
        want_patches=4,
        want_updates=[
            st(succeeded=6, failed=2, completedIndexes="0-4,6", failed_uids=["a", "b"]),
            st(succeeded=6, failed=4, completedIndexes="0-4,6"),
        ],
        want_metrics=(1, 2),
    ),
    "too many finished": Case(
        status={"uncountedTerminatedPods": {"failed": ["a", "b"]}},
        pods=[*(pod(str(i), "Succeeded") for i in range(500)), pod("b", "Failed")],
        want_patches=499,
        want_updates=[
            st(failed=1, succeeded_uids=[str(i) for i in range(499)], failed_uids=["b"]),
            st(succeeded=499, failed=1, failed_uids=["b"]),
        ],
        want_metrics=(499, 1),
    ),
    "too many indexed finished": Case(
        spec={"completionMode": "Indexed", "completions": 501},
        pods=[pod(str(i), "Succeeded", index=str(i)) for i in range(501)],
        want_patches=500,
        want_updates=[st(succeeded=500, completedIndexes="0-499")],
        want_metrics=(500, 0),
    ),
    "pod flips from failed to succeeded": Case(
        spec={"completions": 2, "parallelism": 2},
        status={"uncountedTerminatedPods": {"failed": ["a", "b"]}},
        pods=[pod("a", "Failed"), pod("b", "Succeeded")],
        finished=FAILED,
        want_patches=2,
        want_updates=[st(failed=2, conditions=[("Failed", "True")])],
        want_metrics=(0, 2),
    ),
    "pod is terminal; JobFailed condition is set": Case(
        status={"uncountedTerminatedPods": {"failed": ["a"]}},
        pods=[pod("a", "Failed")],
        finished=FAILED,
        want_patches=1,
        want_updates=[st(failed=1, conditions=[("Failed", "True")])],
        want_metrics=(0, 1),
    ),
    "pod is terminating; counted as failed, but the JobFailed condition is delayed": Case(
        status={"uncountedTerminatedPods": {"failed": ["a"]}, "conditions": [FAILURE_TARGET]},
        pods=[pod("a", "Running", deleted_at=TERMINATING, finalizer=False)],
        finished=FAILED,
        want_updates=[st(failed=1, conditions=[("FailureTarget", "True")])],
        want_metrics=(0, 1),
    ),
    "pod is terminating; JobSuccessCriteriaMet, but JobComplete condition is delayed": Case(
        status={
            "uncountedTerminatedPods": {"failed": ["a"], "succeeded": ["b"]},
            "conditions": [SUCCEEDED],
        },
        pods=[pod("a", "Running", deleted_at=TERMINATING, finalizer=False)],
        finished=COMPLETED,
        want_updates=[st(succeeded=1, failed=1, conditions=[("SuccessCriteriaMet", "True")])],
        want_metrics=(1, 1),
    ),
    "indexed job with a failed pod with delayed finalizer removal; the pod is not counted": Case(
        spec={"completionMode": "Indexed", "completions": 6, "backoffLimitPerIndex": 1},
        pods=[pod("a", "Failed", index="1", failure_count="0")],
        want_updates=[st(failedIndexes="")],
    ),
    "indexed job with a failed pod which is recreated by a running pod; the pod is counted": Case(
        spec={"completionMode": "Indexed", "completions": 6, "backoffLimitPerIndex": 1},
        status={"active": 1},
        pods=[
            pod("a1", "Failed", index="1", failure_count="0"),
            pod("a2", "Running", index="1", failure_count="1"),
        ],
        want_patches=1,
        want_updates=[
            st(active=1, failed_uids=["a1"], failedIndexes=""),
            st(active=1, failed=1, failedIndexes=""),
        ],
        want_metrics=(0, 1),
    ),
    "indexed job with a failed pod for a failed index; the pod is counted": Case(
        spec={"completionMode": "Indexed", "completions": 6, "backoffLimitPerIndex": 1},
        pods=[pod("a", "Failed", index="1", failure_count="1")],
        want_patches=1,
        want_updates=[
            st(failed_uids=["a"], failedIndexes="1"),
            st(failed=1, failedIndexes="1"),
        ],
        want_metrics=(0, 1),
    ),
}


def _metric(registry: CollectorRegistry, mode: str, result: str) -> float:
    value = registry.get_sample_value(
        "job_controller_job_pods_finished_total", {"completion_mode": mode, "result": result}
    )
    return value or 0.0


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_track_job_status_and_remove_finalizers(case: Case) -> None:
    clock = FakeClock(wall_start=WALL)
    client = FakeClient(clock=clock)
    registry = CollectorRegistry()
    job = new_job(**case.spec)
    job["status"] = case.status
    if case.deleting:
        job["metadata"]["deletionTimestamp"] = ts(WALL)
        job["metadata"]["finalizers"] = ["test/keep"]
    job = client.tracker.add(job)
    for p in case.pods:
        client.tracker.add(p)

    def fail(action: Action) -> None:
        raise InternalError("mock error")

    if case.pod_error:
        client.prepend_reactor("patch", "pods", fail)
    if case.status_error:
        client.prepend_reactor("update", "jobs", fail)
    finalizer_expectations = FinalizerExpectations()
    tracker = StatusTracker(
        client=client,
        pod_control=PodControl(client, FakeRecorder()),
        finalizer_expectations=finalizer_expectations,
        backoff_store=BackoffStore(),
        recorder=FakeRecorder(),
        metrics=JobMetrics(registry),
        clock=clock,
        finished_jobs=set(),
    )
    job.setdefault("status", {})
    job["status"].setdefault("uncountedTerminatedPods", {})
    ctx = SyncContext(
        key=KEY,
        job=job,
        pods=case.pods,
        active_pods=filter_active_pods(case.pods),
        uncounted=UncountedTerminatedPods.from_status(job["status"]),
        expected_removed_finalizers=case.expected_removed,
        new_backoff_record=BackoffRecord(KEY),
        finished_condition=dict(case.finished) if case.finished else None,
        terminating=count_terminating_pods(case.pods),
    )
    if job["spec"].get("completionMode") == "Indexed":
        ctx.succeeded_indexes = parse_indexes(
            job["status"].get("completedIndexes") or "", job["spec"]["completions"]
        )
        if "backoffLimitPerIndex" in job["spec"]:
            ctx.failed_indexes = calculate_failed_indexes(job, case.pods)
            ctx.pods_with_delayed_deletion_per_index = pods_with_delayed_deletion_per_index(
                job,
                case.pods,
                active_pods=ctx.active_pods,
                succeeded=ctx.succeeded_indexes,
                failed=ctx.failed_indexes,
            )

    if case.status_error or case.pod_error:
        with pytest.raises(InternalError):
            await tracker.track(ctx, case.needs_flush)
    else:
        await tracker.track(ctx, case.needs_flush)

    updates = [
        project(a.object["status"])
        for a in client.actions_for("update", JOBS)
        if a.subresource == "status" and a.object
    ]
    assert updates == case.want_updates
    assert len(client.actions_for("patch", "pods")) == case.want_patches
    if not (case.status_error or case.pod_error):
        mode = job["spec"].get("completionMode") or "NonIndexed"
        assert (_metric(registry, mode, "succeeded"), _metric(registry, mode, "failed")) == (
            case.want_metrics
        )
    expected_after = finalizer_expectations.expected_uids(KEY)
    if case.pod_error:
        assert expected_after == frozenset(), "a failed removal is not waited for"
