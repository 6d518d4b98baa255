"""kcontrol's Job controller on the test cluster, where kwok plays each Job container from its
command (``exit N``, sleeps, tests of ``$JOB_COMPLETION_INDEX``; see
:mod:`kcontrol.envtest.cluster._kwok_job`).

kube-controller-manager's own job-controller is switched off for the module (and put back
after), so only kcontrol's manages the Jobs; its garbage collector, scheduler and kwok keep
running. The Jobs of a test run side by side, each checked for exact counts, the conditions
and events upstream writes, and no pod left with the tracking finalizer.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kcontrol.client import JOBS, ApiClient, ListOptions, Object
from kcontrol.envtest.cluster import Cluster
from kcontrol_controllers.job import JOB_TRACKING_FINALIZER, NAME, SPEC
from tests.controllers.cluster_helpers import WITHIN, events_for, pods_of, running_manager
from tests.controllers.job.exactly_once import without_kcms_job_controller
from tests.integration.helpers import poll

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def job(name: str, script: str, **spec: Any) -> Object:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "work",
                            "image": "registry.example/work:1",
                            "command": ["sh", "-c", script],
                        }
                    ],
                }
            },
            **spec,
        },
    }


def conditions(obj: Object) -> list[tuple[str, str, str]]:
    return [
        (c["type"], c["status"], c.get("reason", ""))
        for c in (obj.get("status") or {}).get("conditions") or []
    ]


async def finished(client: ApiClient, namespace: str, name: str) -> Object:
    """Wait until the Job has a terminal condition; returns it."""
    seen: dict[str, Any] = {}

    async def done() -> bool:
        current = await client.get(JOBS, name, namespace=namespace)
        seen["status"] = current.get("status")
        return any(c[0] in ("Complete", "Failed") and c[1] == "True" for c in conditions(current))

    await poll(done, within=WITHIN, message=lambda: f"Job {name} never finished: {seen}")
    return await client.get(JOBS, name, namespace=namespace)


async def released(client: ApiClient, namespace: str, name: str) -> list[Object]:
    """Wait until no pod of the Job keeps the tracking finalizer; returns its pods."""
    selector = f"job-name={name}"

    async def done() -> bool:
        pods = await pods_of(client, namespace, selector)
        return not any(
            JOB_TRACKING_FINALIZER in (p["metadata"].get("finalizers") or []) for p in pods
        )

    await poll(done, within=WITHIN, message=lambda: f"pods of {name} keep the finalizer")
    return await pods_of(client, namespace, selector)


async def test_jobs_complete_and_fail_with_exact_counts(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with (
        without_kcms_job_controller(cluster),
        running_manager(cluster, SPEC, controllers=(NAME,)),
    ):
        await asyncio.gather(
            client.create(
                JOBS, job("parallel", "exit 0", completions=5, parallelism=2), namespace=ns
            ),
            client.create(
                JOBS,
                job(
                    "indexed",
                    'if [ "$JOB_COMPLETION_INDEX" = "1" ]; then sleep 2; fi; exit 0',
                    completions=3,
                    parallelism=3,
                    completionMode="Indexed",
                ),
                namespace=ns,
            ),
            client.create(JOBS, job("failing", "exit 3", backoffLimit=1), namespace=ns),
        )
        parallel, indexed, failing = await asyncio.gather(
            finished(client, ns, "parallel"),
            finished(client, ns, "indexed"),
            finished(client, ns, "failing"),
        )

        # A parallel Job: five successes, two at a time, nothing more.
        status = parallel["status"]
        assert (status.get("succeeded"), status.get("failed", 0)) == (5, 0)
        assert conditions(parallel) == [
            ("SuccessCriteriaMet", "True", "CompletionsReached"),
            ("Complete", "True", "CompletionsReached"),
        ]
        assert status["completionTime"] and status["startTime"]
        pods = await released(client, ns, "parallel")
        assert len(pods) == 5, "one pod per completion"
        assert all(p["status"]["phase"] == "Succeeded" for p in pods)
        reasons = [reason for reason, _ in await events_for(client, ns, "parallel")]
        assert reasons.count("SuccessfulCreate") == 5
        assert "Completed" in reasons

        # An Indexed Job: one success per index, each pod with its index.
        status = indexed["status"]
        assert (status.get("succeeded"), status.get("completedIndexes")) == (3, "0-2")
        pods = await released(client, ns, "indexed")
        indexes = sorted(
            p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods
        )
        assert indexes == ["0", "1", "2"]
        for pod in pods:
            index = pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
            assert pod["spec"]["hostname"] == f"indexed-{index}"
            assert pod["metadata"]["generateName"] == f"indexed-{index}-"

        # A failing Job: backoffLimit 1 allows one retry (after the 10 s backoff), no more.
        status = failing["status"]
        assert (status.get("failed"), status.get("succeeded", 0)) == (2, 0)
        assert conditions(failing) == [
            ("FailureTarget", "True", "BackoffLimitExceeded"),
            ("Failed", "True", "BackoffLimitExceeded"),
        ]
        pods = await released(client, ns, "failing")
        assert len(pods) == 2
        exit_codes = [
            p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] for p in pods
        ]
        assert exit_codes == [3, 3]
        events = await events_for(client, ns, "failing")
        assert ("BackoffLimitExceeded", "Job has reached the specified backoff limit") in events

        listed = await client.list(JOBS, namespace=ns, options=ListOptions())
        assert len(listed["items"]) == 3


INDEX_IS_1 = '[ "$JOB_COMPLETION_INDEX" = "1" ]'


async def test_policies_deadline_suspend_and_managed_by(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    fail_job = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}
    fail_index = {
        "rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [7]}}]
    }
    async with (
        without_kcms_job_controller(cluster),
        running_manager(cluster, SPEC, controllers=(NAME,)),
    ):
        await asyncio.gather(
            client.create(
                JOBS, job("fail-job", "exit 42", podFailurePolicy=fail_job), namespace=ns
            ),
            client.create(
                JOBS,
                job(
                    "fail-index",
                    f"if {INDEX_IS_1}; then exit 7; fi; exit 0",
                    completions=3,
                    parallelism=3,
                    completionMode="Indexed",
                    backoffLimitPerIndex=1,
                    podFailurePolicy=fail_index,
                ),
                namespace=ns,
            ),
            client.create(
                JOBS,
                job(
                    "success-policy",
                    'if [ "$JOB_COMPLETION_INDEX" = "0" ]; then exit 0; fi; sleep infinity',
                    completions=3,
                    parallelism=3,
                    completionMode="Indexed",
                    successPolicy={"rules": [{"succeededIndexes": "0"}]},
                ),
                namespace=ns,
            ),
            client.create(
                JOBS, job("deadline", "sleep infinity", activeDeadlineSeconds=3), namespace=ns
            ),
            client.create(JOBS, job("suspended", "exit 0", suspend=True), namespace=ns),
            client.create(
                JOBS, job("elsewhere", "exit 0", managedBy="example.com/other"), namespace=ns
            ),
        )

        # Suspended: no pod, the condition says so; resumed, it runs to completion.
        async def suspended() -> bool:
            current = await client.get(JOBS, "suspended", namespace=ns)
            return ("Suspended", "True", "JobSuspended") in conditions(current)

        await poll(suspended, within=WITHIN, message="the suspended Job never said so")
        assert await pods_of(client, ns, "job-name=suspended") == []
        await client.patch(JOBS, "suspended", {"spec": {"suspend": False}}, namespace=ns)

        fail_job_done, fail_index_done, success, deadline, resumed = await asyncio.gather(
            finished(client, ns, "fail-job"),
            finished(client, ns, "fail-index"),
            finished(client, ns, "success-policy"),
            finished(client, ns, "deadline"),
            finished(client, ns, "suspended"),
        )

        # FailJob: the first failure ends the Job, with the rule's message.
        assert conditions(fail_job_done) == [
            ("FailureTarget", "True", "PodFailurePolicy"),
            ("Failed", "True", "PodFailurePolicy"),
        ]
        (pod,) = await released(client, ns, "fail-job")
        message = fail_job_done["status"]["conditions"][-1]["message"]
        assert message == (
            f"Container work for pod {ns}/{pod['metadata']['name']} failed with exit code 42 "
            "matching FailJob rule at index 0"
        )
        assert fail_job_done["status"]["failed"] == 1

        # FailIndex: index 1 fails at once, the others succeed, the Job fails by its indexes.
        status = fail_index_done["status"]
        assert (status["failedIndexes"], status["completedIndexes"]) == ("1", "0,2")
        assert (status["failed"], status["succeeded"]) == (1, 2)
        assert conditions(fail_index_done)[-1] == ("Failed", "True", "FailedIndexes")
        assert len(await released(client, ns, "fail-index")) == 3, "no retry of a failed index"

        # Success policy: index 0 is enough; the others are deleted, counted as neither.
        status = success["status"]
        assert (status["succeeded"], status.get("failed", 0)) == (1, 0)
        assert status["completedIndexes"] == "0"
        assert conditions(success) == [
            ("SuccessCriteriaMet", "True", "SuccessPolicy"),
            ("Complete", "True", "SuccessPolicy"),
        ]
        await released(client, ns, "success-policy")

        # Active deadline: the running pod is killed and counted as failed.
        assert conditions(deadline) == [
            ("FailureTarget", "True", "DeadlineExceeded"),
            ("Failed", "True", "DeadlineExceeded"),
        ]
        assert deadline["status"]["failed"] == 1
        await released(client, ns, "deadline")

        # Resumed: complete, with the Suspended condition turned False.
        assert ("Suspended", "False", "JobResumed") in conditions(resumed)
        assert resumed["status"]["succeeded"] == 1
        reasons = [reason for reason, _ in await events_for(client, ns, "suspended")]
        assert {"Suspended", "Resumed", "Completed"} <= set(reasons)

        # managedBy another controller: untouched all along.
        elsewhere = await client.get(JOBS, "elsewhere", namespace=ns)
        assert not elsewhere.get("status")
        assert await pods_of(client, ns, "job-name=elsewhere") == []
