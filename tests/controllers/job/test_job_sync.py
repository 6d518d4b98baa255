"""One sync of a Job on a fake client: upstream's TestControllerSyncJob, with the behaviour of
Kubernetes 1.36 (JobPodReplacementPolicy, JobManagedBy and JobSuccessPolicy on: the status
always has ``terminating``, a Job ends through the interim ``FailureTarget`` /
``SuccessCriteriaMet`` condition, success has the reason ``CompletionsReached``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from job_fixtures import (
    FINISHED_AT,
    INDEX,
    NO_INDEX,
    WALL,
    Fixture,
    ago,
    new_job,
    new_pod,
    ts,
)

from kcontrol.client import Object
from kcontrol.errors import InternalError
from kcontrol.testing import Action
from kcontrol_controllers.job._backoff import BackoffRecord

KEY = "default/foobar"


@dataclass
class Case:
    parallelism: int | None = 1
    completions: int | None = 1
    backoff_limit: int = 0
    deleting: bool = False
    pod_limit: int = 0
    indexed: bool = False
    was_suspended: bool = False
    suspend: bool = False
    replacement: str | None = None
    pod_failure_policy: dict[str, Any] | None = None
    initial_status: dict[str, Any] | None = None
    backoff_failures: int | None = None
    pod_error: bool = False
    pending: int = 0
    active: int = 0
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    indexes: list[tuple[str, str]] = field(default_factory=list)
    expectation: int = 0  # > 0: expected creations, < 0: expected deletions

    want_creations: int = 0
    want_deletions: int = 0
    want_active: int = 0
    want_ready: int = 0
    want_succeeded: int = 0
    want_completed: str = ""
    want_failed: int = 0
    want_terminating: int = 0
    want_conditions: list[tuple[str, str, str, str]] = field(default_factory=list)
    want_indexes: set[int] = field(default_factory=set)
    want_patches: int = 0


COMPLETE = [
    (
        "SuccessCriteriaMet",
        "True",
        "CompletionsReached",
        "Reached expected number of succeeded pods",
    ),
    ("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
]
BACKOFF = "Job has reached the specified backoff limit"
FAILED = [
    ("FailureTarget", "True", "BackoffLimitExceeded", BACKOFF),
    ("Failed", "True", "BackoffLimitExceeded", BACKOFF),
]
FAILURE_TARGET = FAILED[:1]
SUSPENDED = [("Suspended", "True", "JobSuspended", "Job suspended")]

R, P, S, F = "Running", "Pending", "Succeeded", "Failed"

CASES: dict[str, Case] = {
    "job start": Case(2, 5, 6, want_creations=2, want_active=2),
    "WQ job start": Case(2, None, 6, want_creations=2, want_active=2),
    "pending pods": Case(2, 5, 6, pending=2, want_active=2),
    "correct # of pods": Case(3, 5, 6, active=3, ready=2, want_active=3, want_ready=2),
    "WQ job: correct # of pods": Case(2, None, 6, active=2, want_active=2),
    "too few active pods": Case(
        2,
        5,
        6,
        active=1,
        succeeded=1,
        want_creations=1,
        want_active=2,
        want_succeeded=1,
        want_patches=1,
    ),
    "WQ job: recreate pods when failed": Case(
        1,
        None,
        6,
        active=1,
        failed=1,
        replacement="Failed",
        terminating=1,
        want_terminating=1,
        want_patches=1,
        want_failed=1,
        want_active=1,
    ),
    "WQ job: turn on PodReplacementPolicy but not set PodReplacementPolicy": Case(
        1,
        1,
        6,
        active=1,
        failed=1,
        terminating=1,
        want_terminating=1,
        want_active=1,
        want_patches=2,
        want_failed=2,
    ),
    "WQ job: recreate pods when terminating or failed": Case(
        1,
        None,
        6,
        active=1,
        failed=1,
        replacement="TerminatingOrFailed",
        terminating=1,
        want_terminating=1,
        want_active=1,
        want_patches=2,
        want_failed=2,
    ),
    "more terminating pods than parallelism": Case(
        1,
        1,
        6,
        active=2,
        terminating=4,
        replacement="Failed",
        want_terminating=5,
        want_active=1,
        want_deletions=1,
        want_patches=1,
    ),
    "more terminating pods than parallelism; PodFailurePolicy used": Case(
        1,
        1,
        6,
        active=2,
        terminating=4,
        pod_failure_policy={"rules": []},
        want_terminating=5,
        want_active=1,
        want_deletions=1,
        want_patches=1,
    ),
    "too few active pods and active back-off": Case(
        1, 1, 6, backoff_failures=1, initial_status={"startTime": ts(WALL)}
    ),
    "too few active pods and active back-off with running pods": Case(
        2,
        2,
        6,
        backoff_failures=1,
        initial_status={"startTime": ts(WALL)},
        active=1,
        ready=1,
        want_active=1,
        want_ready=1,
    ),
    "too few active pods and no back-offs": Case(
        1, 1, 6, backoff_failures=0, want_creations=1, want_active=1
    ),
    "too few active pods with a dynamic job": Case(
        2, None, 6, active=1, want_creations=1, want_active=2
    ),
    "too few active pods, with controller error": Case(
        2,
        5,
        6,
        pod_error=True,
        active=1,
        succeeded=1,
        want_creations=1,
        want_active=1,
        want_patches=1,
    ),
    "too many active pods": Case(
        2,
        5,
        6,
        active=3,
        want_deletions=1,
        want_active=2,
        want_patches=1,
        want_terminating=1,
    ),
    "too many active pods, with controller error": Case(
        2, 5, 6, pod_error=True, active=3, want_patches=1, want_active=3
    ),
    "count ready pods when too many active pods": Case(
        2,
        5,
        6,
        active=3,
        ready=3,
        want_deletions=1,
        want_active=2,
        want_patches=1,
        want_ready=2,
        want_terminating=1,
    ),
    "failed + succeed pods: reset backoff delay": Case(
        2,
        5,
        6,
        active=1,
        succeeded=1,
        failed=1,
        want_creations=1,
        want_active=2,
        want_succeeded=1,
        want_failed=1,
        want_patches=2,
    ),
    "new failed pod": Case(
        2,
        5,
        6,
        active=1,
        failed=1,
        want_creations=1,
        want_active=2,
        want_failed=1,
        want_patches=1,
    ),
    "no new pod; possible finalizer update of failed pod": Case(
        1,
        1,
        6,
        initial_status={"active": 1, "failed": 1},
        active=1,
        want_active=1,
        want_failed=1,
    ),
    "only new failed pod with controller error": Case(
        2,
        5,
        6,
        pod_error=True,
        active=1,
        failed=1,
        want_creations=1,
        want_active=1,
        want_patches=1,
    ),
    "job finish": Case(
        2,
        5,
        6,
        succeeded=5,
        want_succeeded=5,
        want_conditions=COMPLETE,
        want_patches=5,
    ),
    "WQ job finishing": Case(
        2,
        None,
        6,
        active=1,
        succeeded=1,
        want_active=1,
        want_succeeded=1,
        want_patches=1,
    ),
    "WQ job all finished": Case(
        2,
        None,
        6,
        succeeded=2,
        want_succeeded=2,
        want_conditions=COMPLETE,
        want_patches=2,
    ),
    "WQ job all finished despite one failure": Case(
        2,
        None,
        6,
        succeeded=1,
        failed=1,
        want_succeeded=1,
        want_failed=1,
        want_conditions=COMPLETE,
        want_patches=2,
    ),
    "more active pods than parallelism": Case(
        2,
        5,
        6,
        active=10,
        want_deletions=8,
        want_active=2,
        want_patches=8,
        want_terminating=8,
    ),
    "more active pods than remaining completions": Case(
        3,
        4,
        6,
        active=3,
        succeeded=2,
        want_deletions=1,
        want_active=2,
        want_succeeded=2,
        want_patches=3,
        want_terminating=1,
    ),
    "status change": Case(
        2,
        5,
        6,
        active=2,
        succeeded=2,
        want_active=2,
        want_succeeded=2,
        want_patches=2,
    ),
    "deleting job": Case(
        2,
        5,
        6,
        deleting=True,
        pending=1,
        active=1,
        succeeded=1,
        want_active=2,
        want_succeeded=1,
        want_patches=3,
    ),
    "limited pods": Case(100, 200, 6, pod_limit=10, want_creations=10, want_active=10),
    "too many job failures": Case(
        2,
        5,
        deleting=True,
        failed=1,
        want_failed=1,
        want_conditions=FAILED,
        want_patches=1,
    ),
    "job failures, unsatisfied expectations": Case(
        2,
        5,
        deleting=True,
        failed=1,
        expectation=1,
        want_failed=1,
        want_patches=1,
    ),
    "indexed job start": Case(
        2, 5, 6, indexed=True, want_creations=2, want_active=2, want_indexes={0, 1}
    ),
    "indexed job with some pods deleted, podReplacementPolicy Failed": Case(
        2,
        5,
        6,
        indexed=True,
        replacement="Failed",
        terminating=1,
        want_creations=1,
        want_active=1,
        want_indexes={0},
        want_terminating=1,
    ),
    "indexed job with some pods deleted, podReplacementPolicy TerminatingOrFailed": Case(
        2,
        5,
        6,
        indexed=True,
        replacement="TerminatingOrFailed",
        terminating=1,
        want_creations=2,
        want_active=2,
        want_indexes={0, 1},
        want_terminating=1,
        want_patches=1,
    ),
    "indexed job completed": Case(
        2,
        3,
        6,
        indexed=True,
        indexes=[("0", S), ("1", F), ("1", S), ("2", S)],
        want_succeeded=3,
        want_failed=1,
        want_completed="0-2",
        want_conditions=COMPLETE,
        want_patches=4,
    ),
    "indexed job failed": Case(
        2,
        3,
        0,
        indexed=True,
        indexes=[("0", S), ("1", F), ("2", R)],
        want_succeeded=1,
        want_failed=2,
        want_completed="0",
        want_conditions=FAILURE_TARGET,
        want_patches=3,
        want_deletions=1,
        want_terminating=1,
    ),
    "count ready pods when job fails": Case(
        2,
        3,
        0,
        active=2,
        ready=2,
        failed=1,
        want_failed=3,
        want_conditions=FAILURE_TARGET,
        want_patches=3,
        want_deletions=2,
        want_terminating=2,
    ),
    "indexed job repeated completed index": Case(
        2,
        3,
        6,
        indexed=True,
        indexes=[("0", S), ("1", S), ("1", S)],
        want_creations=1,
        want_active=1,
        want_succeeded=2,
        want_completed="0,1",
        want_indexes={2},
        want_patches=3,
    ),
    "indexed job some running and completed pods": Case(
        8,
        20,
        6,
        indexed=True,
        indexes=[
            ("0", R),
            ("2", S),
            ("3", P),
            ("4", S),
            ("5", S),
            ("7", S),
            ("8", S),
            ("9", S),
        ],
        want_creations=6,
        want_active=8,
        want_succeeded=6,
        want_completed="2,4,5,7-9",
        want_indexes={1, 6, 10, 11, 12, 13},
        want_patches=6,
    ),
    "indexed job some failed pods": Case(
        3,
        4,
        6,
        indexed=True,
        indexes=[("0", F), ("1", P), ("2", F)],
        want_creations=2,
        want_active=3,
        want_failed=2,
        want_indexes={0, 2},
        want_patches=2,
    ),
    "indexed job some pods without index": Case(
        2,
        5,
        6,
        indexed=True,
        active=1,
        succeeded=1,
        failed=1,
        indexes=[
            ("invalid", R),
            ("invalid", S),
            ("invalid", F),
            ("invalid", P),
            ("0", S),
            ("1", R),
            ("2", R),
        ],
        want_deletions=3,
        want_active=2,
        want_succeeded=1,
        want_completed="0",
        want_patches=8,
        want_terminating=3,
    ),
    "indexed job repeated indexes": Case(
        5,
        5,
        6,
        indexed=True,
        succeeded=1,
        failed=1,
        indexes=[("invalid", R), ("0", S), ("1", R), ("2", R), ("2", P)],
        want_deletions=2,
        want_active=2,
        want_succeeded=1,
        want_completed="0",
        want_patches=5,
        want_terminating=2,
    ),
    "indexed job with indexes outside of range": Case(
        2,
        5,
        6,
        indexed=True,
        indexes=[("0", S), ("5", R), ("6", S), ("7", P), ("8", F)],
        want_succeeded=1,
        want_deletions=2,
        want_completed="0",
        want_patches=5,
        want_terminating=2,
    ),
    "suspending a job with satisfied expectations": Case(
        2,
        4,
        6,
        suspend=True,
        active=2,
        want_deletions=2,
        want_conditions=SUSPENDED,
        want_patches=2,
        want_terminating=2,
    ),
    "count ready pods when suspending a job with satisfied expectations": Case(
        2,
        4,
        6,
        suspend=True,
        active=2,
        ready=2,
        want_deletions=2,
        want_conditions=SUSPENDED,
        want_patches=2,
        want_terminating=2,
    ),
    "suspending a job with unsatisfied expectations": Case(
        2, 4, 6, suspend=True, active=3, expectation=-1, want_active=3
    ),
    "count ready pods when suspending a job with unsatisfied expectations": Case(
        2, 4, 6, suspend=True, active=3, ready=3, expectation=-1, want_active=3, want_ready=3
    ),
    "resuming a suspended job": Case(
        2,
        4,
        6,
        was_suspended=True,
        want_creations=2,
        want_active=2,
        want_conditions=[("Suspended", "False", "JobResumed", "Job resumed")],
    ),
    "suspending a deleted job": Case(
        2, 4, 6, suspend=True, deleting=True, active=2, want_active=2, want_patches=2
    ),
    "FailureTarget=False condition added manually is ignored": Case(
        1,
        1,
        active=1,
        ready=1,
        initial_status={
            "active": 1,
            "startTime": ts(WALL),
            "conditions": [
                {
                    "type": "FailureTarget",
                    "status": "False",
                    "reason": "ConditionAddedManually",
                    "message": "Testing",
                }
            ],
        },
        want_active=1,
        want_ready=1,
        want_conditions=[("FailureTarget", "False", "ConditionAddedManually", "Testing")],
    ),
    "SuccessCriteriaMet=False condition added manually is ignored": Case(
        1,
        1,
        active=1,
        ready=1,
        initial_status={
            "active": 1,
            "startTime": ts(WALL),
            "conditions": [
                {
                    "type": "SuccessCriteriaMet",
                    "status": "False",
                    "reason": "ConditionAddedManually",
                    "message": "Testing",
                }
            ],
        },
        want_active=1,
        want_ready=1,
        want_conditions=[("SuccessCriteriaMet", "False", "ConditionAddedManually", "Testing")],
    ),
}


def _pods(job: Object, case: Case) -> list[Object]:
    """upstream setPodsStatuses and setPodsStatusesWithIndexes."""
    pods: list[Object] = []
    count = iter(range(1000))

    def add(phase: str, **kwargs: Any) -> None:
        pods.append(new_pod(f"pod-{next(count)}", job, phase, finished_at=FINISHED_AT, **kwargs))

    for _ in range(case.pending):
        add(P)
    for i in range(case.active):
        add(R, ready=i < case.ready)
    for _ in range(case.succeeded):
        add(S)
    for _ in range(case.failed):
        add(F)
    for _ in range(case.terminating):
        add(R, deleted_at=ago(0))
    for index, phase in case.indexes:
        extra: dict[str, Any] = {} if index == NO_INDEX else {"index": index}
        pods.append(new_pod(f"pod-{next(count)}", job, phase, **extra))
    return pods


def _conditions(job: Object) -> list[tuple[str, str, str, str]]:
    return [
        (c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
        for c in (job.get("status") or {}).get("conditions") or []
    ]


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_sync_job(case: Case) -> None:
    f = Fixture()
    spec: dict[str, Any] = {"suspend": case.suspend}
    if case.replacement is not None:
        spec["podReplacementPolicy"] = case.replacement
    if case.pod_failure_policy is not None:
        spec["podFailurePolicy"] = case.pod_failure_policy
    job = new_job(
        case.parallelism,
        case.completions,
        case.backoff_limit,
        "Indexed" if case.indexed else None,
        **spec,
    )
    status: dict[str, Any] = {}
    if case.initial_status is not None:
        status = {"startTime": ts(WALL), **case.initial_status}
    if case.was_suspended:
        status.setdefault("conditions", []).append(
            {
                "type": "Suspended",
                "status": "True",
                "reason": "JobSuspended",
                "message": "Job suspended",
            }
        )
    if status:
        job["status"] = status
    if case.deleting:
        job["metadata"]["deletionTimestamp"] = ts(WALL)
        job["metadata"]["finalizers"] = ["test/keep"]
    job = f.add_job(job)
    f.add_pods(_pods(job, case))
    if case.backoff_failures is not None:
        f.jc.backoff_store.update(BackoffRecord(KEY, case.backoff_failures, WALL))
    if case.expectation > 0:
        f.jc.expectations.expect_creations(KEY, case.expectation)
    elif case.expectation < 0:
        f.jc.expectations.expect_deletions(KEY, -case.expectation)
    created = 0

    def pod_writes(action: Action) -> Object | None:
        nonlocal created
        if case.pod_error:
            raise InternalError("fake error")
        if action.verb == "create" and case.pod_limit:
            created += 1
            if created > case.pod_limit:
                raise InternalError(f"not creating pod, limit {case.pod_limit} already reached")
        return None

    for verb in ("create", "patch", "delete"):
        f.client.prepend_reactor(verb, "pods", pod_writes)

    if case.pod_error or case.pod_limit:
        with pytest.raises(InternalError):
            await f.jc.sync(KEY)
    else:
        assert await f.jc.sync(KEY) is None

    creates = f.client.actions_for("create", "pods")
    if case.pod_limit:
        # Slow start: batches 1, 2, 4 succeed, the batch of 8 fails after 3 - then it stops.
        assert len(creates) == 1 + 2 + 4 + 8
        assert len(f.server_pods()) == case.want_creations
    else:
        assert len(creates) == case.want_creations
    assert len(f.client.actions_for("delete", "pods")) == case.want_deletions
    for action in creates:
        pod = action.object
        assert pod is not None
        assert pod["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "foobar",
                "uid": job["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert pod["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]
        if case.indexed:
            index = pod["metadata"]["annotations"][INDEX]
            assert pod["metadata"]["labels"][INDEX] == index
            assert pod["spec"]["hostname"] == f"foobar-{index}"
            assert pod["metadata"]["generateName"] == f"foobar-{index}-"
            assert {
                "name": "JOB_COMPLETION_INDEX",
                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{INDEX}']"}},
            } in pod["spec"]["containers"][0]["env"]
        else:
            assert pod["metadata"]["generateName"] == "foobar-"
            assert "hostname" not in pod["spec"]
    if case.indexed:
        got = {int(a.object["metadata"]["annotations"][INDEX]) for a in creates if a.object}
        assert got == case.want_indexes
    assert f.pod_patches() == case.want_patches

    actual = f.server_job()
    st = actual.get("status") or {}
    assert st.get("active", 0) == case.want_active
    assert st.get("ready") == case.want_ready
    assert st.get("succeeded", 0) == case.want_succeeded
    assert st.get("completedIndexes", "") == case.want_completed
    assert st.get("failed", 0) == case.want_failed
    assert st.get("terminating") == case.want_terminating
    if case.suspend:
        assert st.get("startTime") is None
    else:
        assert st.get("startTime") is not None
    assert _conditions(actual) == case.want_conditions
