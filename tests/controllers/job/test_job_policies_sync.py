"""Syncs of Jobs with a pod failure policy, a success policy, or a backoff limit per index:
upstream's TestSyncJobWithJobPodFailurePolicy, TestSyncJobWithJobSuccessPolicy and
TestSyncJobWithJobBackoffLimitPerIndex (their 1.36 variants: every gate on)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from job_fixtures import FINISHED_AT, WALL, Fixture, ago, new_job, new_pod, ts

from kcontrol.client import Object

KEY = "default/foobar"
MAX = 2**31 - 1
DISRUPTION = [{"type": "DisruptionTarget", "status": "True"}]
ON_EXIT_CODES = {
    "rules": [
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1, 2, 3]}},
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [5, 6, 7]}},
    ]
}


def failed(name: str, code: int | None = None, **kwargs: Any) -> Object:
    pod = new_pod(name, phase="Failed", **kwargs)
    if code is not None:
        pod["status"]["containerStatuses"] = [
            {
                "name": "main-container",
                "state": {"terminated": {"exitCode": code, "finishedAt": FINISHED_AT}},
            }
        ]
    return pod


@dataclass
class Case:
    spec: dict[str, Any]
    pods: list[Object]
    status: dict[str, Any] = field(default_factory=dict)
    want: dict[str, Any] = field(default_factory=dict)
    want_conditions: list[tuple[str, str, str]] = field(default_factory=list)


def fail_job_message(pod: str, code: int, rule: int) -> str:
    return (
        f"Container main-container for pod default/{pod} failed with exit code {code} "
        f"matching FailJob rule at index {rule}"
    )


CASES: dict[str, Case] = {
    # -- TestSyncJobWithJobPodFailurePolicy -------------------------------------------------------
    "fail job based on OnExitCodes": Case(
        {"podFailurePolicy": ON_EXIT_CODES},
        [failed("mypod-0", 5)],
        want={"failed": 1, "active": 0},
        want_conditions=[
            ("FailureTarget", "PodFailurePolicy", fail_job_message("mypod-0", 5, 1)),
            ("Failed", "PodFailurePolicy", fail_job_message("mypod-0", 5, 1)),
        ],
    ),
    "running pod should not result in job fail based on OnExitCodes": Case(
        {"podFailurePolicy": ON_EXIT_CODES},
        [new_pod("mypod-0", exit_code=5)],
        want={"failed": 0, "active": 1},
    ),
    "job marked already as failure target with failed pod": Case(
        {"podFailurePolicy": ON_EXIT_CODES},
        [failed("mypod-0", 5)],
        status={
            "conditions": [
                {
                    "type": "FailureTarget",
                    "status": "True",
                    "reason": "PodFailurePolicy",
                    "message": fail_job_message("mypod-0", 5, 1),
                }
            ]
        },
        want={"failed": 1},
        want_conditions=[
            ("FailureTarget", "PodFailurePolicy", fail_job_message("mypod-0", 5, 1)),
            ("Failed", "PodFailurePolicy", fail_job_message("mypod-0", 5, 1)),
        ],
    ),
    "fail job with multiple pods": Case(
        {"parallelism": 2, "podFailurePolicy": ON_EXIT_CODES},
        [new_pod("mypod-0"), failed("mypod-1", 5)],
        want={"failed": 2, "active": 0, "terminating": 1},
        want_conditions=[("FailureTarget", "PodFailurePolicy", fail_job_message("mypod-1", 5, 1))],
    ),
    "fail indexed job based on OnExitCodes": Case(
        {"completionMode": "Indexed", "podFailurePolicy": ON_EXIT_CODES},
        [failed("mypod-0", 7, index="0")],
        want={"failed": 1},
        want_conditions=[
            ("FailureTarget", "PodFailurePolicy", fail_job_message("mypod-0", 7, 1)),
            ("Failed", "PodFailurePolicy", fail_job_message("mypod-0", 7, 1)),
        ],
    ),
    "ignore pod failure based on OnExitCodes": Case(
        {"podFailurePolicy": ON_EXIT_CODES, "backoffLimit": 0},
        [failed("mypod-0", 1)],
        want={"failed": 0, "active": 1},
    ),
    "default job based on OnExitCodes": Case(
        {"podFailurePolicy": ON_EXIT_CODES, "backoffLimit": 0},
        [failed("mypod-0", 10)],
        want={"failed": 1, "active": 0},
        want_conditions=[
            (
                "FailureTarget",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            ),
            ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        ],
    ),
    "count pod failure based on OnPodConditions": Case(
        {
            "backoffLimit": 0,
            "podFailurePolicy": {"rules": [{"action": "Count", "onPodConditions": DISRUPTION}]},
        },
        [failed("mypod-0", conditions=DISRUPTION)],
        want={"failed": 1},
        want_conditions=[
            (
                "FailureTarget",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            ),
            ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        ],
    ),
    "ignore pod failure based on OnPodConditions, ignored failures delays pod recreation": Case(
        {
            "backoffLimit": 0,
            "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": DISRUPTION}]},
        },
        [failed("mypod-0", conditions=DISRUPTION, deleted_at=ts(WALL), finished_at=ts(WALL))],
        want={"failed": 0, "active": 0},
    ),
    "fail job based on OnPodConditions": Case(
        {"podFailurePolicy": {"rules": [{"action": "FailJob", "onPodConditions": DISRUPTION}]}},
        [failed("mypod-0", conditions=DISRUPTION)],
        want={"failed": 1},
        want_conditions=[
            (
                "FailureTarget",
                "PodFailurePolicy",
                "Pod default/mypod-0 has condition DisruptionTarget matching FailJob rule at "
                "index 0",
            ),
            (
                "Failed",
                "PodFailurePolicy",
                "Pod default/mypod-0 has condition DisruptionTarget matching FailJob rule at "
                "index 0",
            ),
        ],
    ),
    "terminating Pod not considered failed when JobPodFailurePolicy is enabled and used": Case(
        {
            "backoffLimit": 0,
            "podFailurePolicy": {"rules": [{"action": "Count", "onPodConditions": DISRUPTION}]},
        },
        [new_pod("mypod-0", deleted_at=ago(0))],
        want={"failed": 0, "active": 0, "terminating": 1},
    ),
    # -- TestSyncJobWithJobSuccessPolicy ----------------------------------------------------------
    "job with successPolicy; job has SuccessCriteriaMet condition if job meets to successPolicy "
    "and some indexes fail": Case(
        {
            "completionMode": "Indexed",
            "parallelism": 3,
            "completions": 3,
            "backoffLimit": MAX,
            "successPolicy": {"rules": [{"succeededIndexes": "0,1", "succeededCount": 1}]},
        },
        [
            failed("a1", index="0"),
            new_pod("a2", index="0"),
            new_pod("b", phase="Succeeded", index="1"),
            new_pod("c", index="2"),
        ],
        want={"failed": 1, "succeeded": 1, "terminating": 2, "completedIndexes": "1"},
        want_conditions=[("SuccessCriteriaMet", "SuccessPolicy", "Matched rules at index 0")],
    ),
    "job with successPolicy; job has both Complete and SuccessCriteriaMet condition when job "
    "meets to successPolicy and all pods have been already removed": Case(
        {
            "completionMode": "Indexed",
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": MAX,
            "backoffLimitPerIndex": 2,
            "successPolicy": {"rules": [{"succeededIndexes": "0,1", "succeededCount": 1}]},
        },
        [failed("a", index="0"), new_pod("b", phase="Succeeded", index="1")],
        status={
            "conditions": [
                {
                    "type": "SuccessCriteriaMet",
                    "status": "True",
                    "reason": "SuccessPolicy",
                    "message": "Matched rules at index 0",
                }
            ]
        },
        want={"failed": 1, "succeeded": 1, "completedIndexes": "1"},
        want_conditions=[
            ("SuccessCriteriaMet", "SuccessPolicy", "Matched rules at index 0"),
            ("Complete", "SuccessPolicy", "Matched rules at index 0"),
        ],
    ),
    "job with successPolicy and podFailurePolicy; job has a failed condition when job meets to "
    "both successPolicy and podFailurePolicy": Case(
        {
            "completionMode": "Indexed",
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": MAX,
            "successPolicy": {"rules": [{"succeededCount": 1}]},
            "podFailurePolicy": {"rules": [{"action": "FailJob", "onPodConditions": DISRUPTION}]},
        },
        [
            failed("a1", index="0", conditions=DISRUPTION),
            new_pod("b", phase="Succeeded", index="1"),
        ],
        want={"failed": 1, "succeeded": 1, "completedIndexes": "1"},
        want_conditions=[
            (
                "FailureTarget",
                "PodFailurePolicy",
                "Pod default/a1 has condition DisruptionTarget matching FailJob rule at index 0",
            ),
            (
                "Failed",
                "PodFailurePolicy",
                "Pod default/a1 has condition DisruptionTarget matching FailJob rule at index 0",
            ),
        ],
    ),
    "job with successPolicy and podFailurePolicy; job with SuccessCriteriaMet has never been "
    "transitioned to FailureTarget and Failed even if job meets podFailurePolicy": Case(
        {
            "completionMode": "Indexed",
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": MAX,
            "successPolicy": {"rules": [{"succeededCount": 1}]},
            "podFailurePolicy": {"rules": [{"action": "FailJob", "onPodConditions": DISRUPTION}]},
        },
        [
            failed("a", index="0", conditions=DISRUPTION),
            new_pod("b", phase="Succeeded", index="1"),
        ],
        status={
            "succeeded": 1,
            "completedIndexes": "1",
            "conditions": [
                {
                    "type": "SuccessCriteriaMet",
                    "status": "True",
                    "reason": "SuccessPolicy",
                    "message": "Matched rules at index 0",
                }
            ],
        },
        want={"failed": 1, "succeeded": 1, "completedIndexes": "1"},
        want_conditions=[
            ("SuccessCriteriaMet", "SuccessPolicy", "Matched rules at index 0"),
            ("Complete", "SuccessPolicy", "Matched rules at index 0"),
        ],
    ),
    "job without successPolicy; job got SuccessCriteriaMet and Completion with "
    "CompletionsReached reason conditions": Case(
        {"completionMode": "Indexed", "parallelism": 2, "completions": 2},
        [new_pod("a", phase="Succeeded", index="0"), new_pod("b", phase="Succeeded", index="1")],
        want={"succeeded": 2, "completedIndexes": "0,1"},
        want_conditions=[
            (
                "SuccessCriteriaMet",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            ),
            ("Complete", "CompletionsReached", "Reached expected number of succeeded pods"),
        ],
    ),
    # -- TestSyncJobWithJobBackoffLimitPerIndex ---------------------------------------------------
    "successful job after a single failure within index": Case(
        {
            "completionMode": "Indexed",
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": MAX,
            "backoffLimitPerIndex": 1,
        },
        [
            failed("a1", index="0", failure_count="0"),
            new_pod("a2", phase="Succeeded", index="0", failure_count="1"),
            new_pod("b", phase="Succeeded", index="1", failure_count="0"),
        ],
        want={"failed": 1, "succeeded": 2, "completedIndexes": "0,1", "failedIndexes": ""},
        want_conditions=[
            (
                "SuccessCriteriaMet",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            ),
            ("Complete", "CompletionsReached", "Reached expected number of succeeded pods"),
        ],
    ),
    "single failed pod, not counted as the replacement pod creation is delayed": Case(
        {
            "completionMode": "Indexed",
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": MAX,
            "backoffLimitPerIndex": 1,
        },
        [failed("a", index="0", failure_count="0")],
        want={"active": 2, "failed": 0, "failedIndexes": ""},
    ),
    "single failed pod replaced already": Case(
        {
            "completionMode": "Indexed",
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": MAX,
            "backoffLimitPerIndex": 1,
        },
        [
            failed("a", index="0", failure_count="0"),
            new_pod("b", phase="Pending", index="0", failure_count="1"),
        ],
        want={"active": 2, "failed": 1, "failedIndexes": ""},
    ),
    "replacement pod creation delayed by per-index backoff while another index runs": Case(
        {
            "completionMode": "Indexed",
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": MAX,
            "backoffLimitPerIndex": 1,
        },
        [
            new_pod("a", index="0", failure_count="0"),
            failed("b", index="1", failure_count="0", finished_at=ts(WALL)),
        ],
        want={"active": 1, "failed": 0, "failedIndexes": ""},
    ),
    "single failed index due to exceeding the backoff limit per index, the job continues": Case(
        {
            "completionMode": "Indexed",
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": MAX,
            "backoffLimitPerIndex": 1,
        },
        [failed("a", index="0", failure_count="1")],
        want={"active": 1, "failed": 1, "failedIndexes": "0"},
    ),
    "single failed index due to FailIndex action, the job continues": Case(
        {
            "completionMode": "Indexed",
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": MAX,
            "backoffLimitPerIndex": 1,
            "podFailurePolicy": {
                "rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}}]
            },
        },
        [failed("a", 3, index="0", failure_count="0")],
        want={"active": 1, "failed": 1, "failedIndexes": "0"},
    ),
    "job pod failure ignored due to matching Ignore action": Case(
        {
            "completionMode": "Indexed",
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": 6,
            "backoffLimitPerIndex": 1,
            "podFailurePolicy": {
                "rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}}]
            },
        },
        [failed("a", 3, index="0", failure_count="0")],
        want={"active": 2, "failed": 0, "failedIndexes": ""},
    ),
    "job failed due to exceeding backoffLimit before backoffLimitPerIndex": Case(
        {
            "completionMode": "Indexed",
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": 1,
            "backoffLimitPerIndex": 1,
        },
        [failed("a", index="0", failure_count="0"), failed("b", index="1", failure_count="0")],
        want={"failed": 2, "failedIndexes": ""},
        want_conditions=[
            (
                "FailureTarget",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            ),
            ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        ],
    ),
    "job failed due to failed indexes": Case(
        {
            "completionMode": "Indexed",
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": MAX,
            "backoffLimitPerIndex": 1,
        },
        [
            failed("a", index="0", failure_count="1"),
            new_pod("b", phase="Succeeded", index="1", failure_count="0"),
        ],
        want={"failed": 1, "succeeded": 1, "failedIndexes": "0", "completedIndexes": "1"},
        want_conditions=[
            ("FailureTarget", "FailedIndexes", "Job has failed indexes"),
            ("Failed", "FailedIndexes", "Job has failed indexes"),
        ],
    ),
    "job failed due to exceeding max failed indexes": Case(
        {
            "completionMode": "Indexed",
            "parallelism": 4,
            "completions": 4,
            "backoffLimit": MAX,
            "backoffLimitPerIndex": 1,
            "maxFailedIndexes": 1,
        },
        [
            failed("a", index="0", failure_count="1"),
            new_pod("b", phase="Succeeded", index="1", failure_count="0"),
            failed("c", index="2", failure_count="1"),
            new_pod("d", index="3", failure_count="0"),
        ],
        want={
            "failed": 3,
            "succeeded": 1,
            "terminating": 1,
            "failedIndexes": "0,2",
            "completedIndexes": "1",
        },
        want_conditions=[
            (
                "FailureTarget",
                "MaxFailedIndexesExceeded",
                "Job has exceeded the specified maximal number of failed indexes",
            )
        ],
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_sync_job_with_policies(case: Case) -> None:
    f = Fixture()
    spec = {"parallelism": 1, "completions": 1, "backoffLimit": 6, **case.spec}
    job = new_job(
        spec.pop("parallelism"), spec.pop("completions"), spec.pop("backoffLimit"), **spec
    )
    if case.status:
        job["status"] = case.status
    job = f.add_job(job)
    for pod in case.pods:
        pod["metadata"]["ownerReferences"][0]["uid"] = job["metadata"]["uid"]
        f.add_pod(pod)
    await f.jc.sync(KEY)
    status = f.server_job()["status"]
    got = {
        field_name: status.get(field_name, 0) for field_name in ("active", "failed", "succeeded")
    }
    got["terminating"] = status.get("terminating")
    for field_name in ("completedIndexes", "failedIndexes"):
        if field_name in case.want:
            got[field_name] = status.get(field_name)
    want = {"active": 0, "failed": 0, "succeeded": 0, "terminating": 0, **case.want}
    assert got == want
    assert [
        (c["type"], c.get("reason", ""), c.get("message", ""))
        for c in status.get("conditions") or []
    ] == case.want_conditions


async def test_replacement_of_a_failed_index_carries_its_failure_count() -> None:
    """The failed pod keeps its finalizer until the replacement exists; the replacement gets
    the index's failure count plus one; then the failed pod is counted and released."""
    f = Fixture()
    f.add_job(
        new_job(
            1,
            1,
            MAX,
            "Indexed",
            backoffLimitPerIndex=2,
        )
    )
    f.add_pod(failed("a", index="0", failure_count="1", owned=True))
    await f.jc.sync(KEY)
    (created,) = f.created_pods()
    annotations = created["metadata"]["annotations"]
    assert annotations["batch.kubernetes.io/job-index-failure-count"] == "2"
    assert f.actions("patch", "pods") == [], "the failed pod waits for its replacement"
    assert f.server_job()["status"].get("failed", 0) == 0
    f.refresh_job_cache()
    f.refresh_pod_cache()
    f.jc.expectations.set_expectations(KEY, 0, 0)
    await f.jc.sync(KEY)
    assert f.actions("patch", "pods") == ["patch pods default/a"]
    assert f.server_job()["status"]["failed"] == 1
