"""``podFailurePolicy`` on the test cluster (issue 21): the ``Ignore`` action, and rules on pod
conditions such as ``DisruptionTarget``.

kwok plays a Job's container from its command only, the same for every pod of a Job, so the
failures here are played by the test instead, as a kubelet (and, for the condition, the
eviction API or the scheduler's preemption) would write them: through the pods' status
subresource. Each Job runs ``sleep 10``: its first pod is failed by the test while it runs,
and its replacement (if any) succeeds by itself 10 s later. Before writing the failure the
test takes the pod away from kwok: kwok keeps a pending stage (here, the container's end)
when a pod changes so that no stage matches it, and would later overwrite the failure with
``Succeeded``; labelling the pod to fail after an hour (:data:`BEHAVIOR_LABEL`,
:data:`FAIL_DELAY_ANNOTATION`) replaces that stage with one that never comes.

- ``ignore-exit-code``: ``Ignore`` on exit code 5, ``backoffLimit`` 0. The pod fails with 5:
  not counted, replaced at once, the Job completes with ``failed`` 0.
- ``ignore-disruption``: ``Ignore`` on ``DisruptionTarget``, ``backoffLimit`` 0. The pod gets
  the condition, then fails (137): the same.
- ``not-disrupted``: the same policy, but the pod fails (137) without the condition: counted,
  and ``backoffLimit`` 0 fails the Job.
- ``fail-on-disruption``: ``FailJob`` on ``DisruptionTarget``, ``backoffLimit`` 6. The pod
  gets the condition, then fails: the Job fails at once with upstream's reason and message.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from kcontrol.client import JOBS, PODS, ApiClient, Object
from kcontrol.envtest.cluster import BEHAVIOR_FAIL, BEHAVIOR_LABEL, FAIL_DELAY_ANNOTATION, Cluster
from kcontrol_controllers.job import NAME, SPEC
from tests.controllers.cluster_helpers import WITHIN, events_for, pods_of, running_manager
from tests.controllers.job.exactly_once import (
    conditions,
    has_finalizer,
    job_manifest,
    phase,
    terminal,
    without_kcms_job_controller,
)
from tests.integration.helpers import poll

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DISRUPTION = [{"type": "DisruptionTarget", "status": "True"}]


def policy(action: str, **on: Any) -> dict[str, Any]:
    return {"rules": [{"action": action, **on}]}


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def failed_status(pod: Object, exit_code: int) -> Object:
    """The pod's end as a kubelet writes it: ``Failed``, its container terminated."""
    container = pod["spec"]["containers"][0]
    running = (pod["status"]["containerStatuses"][0].get("state") or {}).get("running") or {}
    return {
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": container["name"],
                    "image": container["image"],
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "started": False,
                    "state": {
                        "terminated": {
                            "exitCode": exit_code,
                            "reason": "Error",
                            "startedAt": running.get("startedAt", now()),
                            "finishedAt": now(),
                        }
                    },
                }
            ],
        }
    }


def disruption_condition() -> Object:
    return {
        "status": {
            "conditions": [
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "EvictionByEvictionAPI",
                    "message": "Eviction API: evicting",
                    "lastTransitionTime": now(),
                }
            ]
        }
    }


async def running_pod(client: ApiClient, namespace: str, job: str) -> Object:
    """The Job's first pod, once it runs."""
    found: dict[str, Object] = {}

    async def running() -> bool:
        pods = await pods_of(client, namespace, f"job-name={job}")
        for pod in pods:
            if phase(pod) == "Running" and (pod["status"].get("containerStatuses") or []):
                found["pod"] = pod
                return True
        return False

    await poll(running, within=WITHIN, interval=0.2, message=f"{job}'s pod never ran")
    return found["pod"]


async def play_failure(
    client: ApiClient, namespace: str, job: str, exit_code: int, *, disrupted: bool
) -> str:
    """Fail the Job's running pod through the status subresource (after giving it the
    DisruptionTarget condition when ``disrupted``); returns the pod's name."""
    pod = await running_pod(client, namespace, job)
    name: str = pod["metadata"]["name"]
    held = {
        "metadata": {
            "labels": {BEHAVIOR_LABEL: BEHAVIOR_FAIL},
            "annotations": {FAIL_DELAY_ANNOTATION: "1h"},
        }
    }
    await client.patch(PODS, name, held, namespace=namespace)
    if disrupted:
        await client.patch(
            PODS, name, disruption_condition(), namespace=namespace, subresource="status"
        )
    await client.patch(
        PODS, name, failed_status(pod, exit_code), namespace=namespace, subresource="status"
    )
    return name


async def finished_job(client: ApiClient, namespace: str, name: str) -> Object:
    seen: dict[str, Any] = {}

    async def done() -> bool:
        job = await client.get(JOBS, name, namespace=namespace)
        seen["status"] = job.get("status")
        return terminal(job) is not None

    await poll(done, within=WITHIN, interval=0.5, message=lambda: f"{name} never ended: {seen}")
    return await client.get(JOBS, name, namespace=namespace)


async def released_pods(client: ApiClient, namespace: str, name: str) -> list[Object]:
    async def released() -> bool:
        pods = await pods_of(client, namespace, f"job-name={name}")
        return not any(has_finalizer(pod) for pod in pods)

    await poll(released, within=WITHIN, message=f"pods of {name} keep the finalizer")
    return await pods_of(client, namespace, f"job-name={name}")


async def test_ignore_and_pod_condition_rules(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    ignore_five = policy("Ignore", onExitCodes={"operator": "In", "values": [5]})
    ignore_disruption = policy("Ignore", onPodConditions=DISRUPTION)
    fail_on_disruption = policy("FailJob", onPodConditions=DISRUPTION)
    jobs = {
        "ignore-exit-code": job_manifest(
            "ignore-exit-code", "sleep 10", backoffLimit=0, podFailurePolicy=ignore_five
        ),
        "ignore-disruption": job_manifest(
            "ignore-disruption", "sleep 10", backoffLimit=0, podFailurePolicy=ignore_disruption
        ),
        "not-disrupted": job_manifest(
            "not-disrupted", "sleep 10", backoffLimit=0, podFailurePolicy=ignore_disruption
        ),
        "fail-on-disruption": job_manifest(
            "fail-on-disruption", "sleep 10", backoffLimit=6, podFailurePolicy=fail_on_disruption
        ),
    }
    async with (
        without_kcms_job_controller(cluster),
        running_manager(cluster, SPEC, controllers=(NAME,)),
    ):
        await asyncio.gather(*(client.create(JOBS, job, namespace=ns) for job in jobs.values()))
        failed = dict(
            zip(
                jobs,
                await asyncio.gather(
                    play_failure(client, ns, "ignore-exit-code", 5, disrupted=False),
                    play_failure(client, ns, "ignore-disruption", 137, disrupted=True),
                    play_failure(client, ns, "not-disrupted", 137, disrupted=False),
                    play_failure(client, ns, "fail-on-disruption", 137, disrupted=True),
                ),
                strict=True,
            )
        )
        ended = dict(
            zip(
                jobs,
                await asyncio.gather(*(finished_job(client, ns, name) for name in jobs)),
                strict=True,
            )
        )

        # Ignore: the failure counts nowhere, the pod is replaced, the Job completes.
        for name in ("ignore-exit-code", "ignore-disruption"):
            job = ended[name]
            assert conditions(job) == [
                ("SuccessCriteriaMet", "True", "CompletionsReached"),
                ("Complete", "True", "CompletionsReached"),
            ], name
            assert (job["status"].get("succeeded"), job["status"].get("failed", 0)) == (1, 0)
            pods = await released_pods(client, ns, name)
            phases = {pod["metadata"]["name"]: phase(pod) for pod in pods}
            assert len(pods) == 2 and phases[failed[name]] == "Failed", (name, phases)
            assert sorted(phases.values()) == ["Failed", "Succeeded"], (name, phases)

        # No condition: the Ignore rule does not match, the failure counts.
        job = ended["not-disrupted"]
        assert conditions(job) == [
            ("FailureTarget", "True", "BackoffLimitExceeded"),
            ("Failed", "True", "BackoffLimitExceeded"),
        ]
        assert job["status"].get("failed") == 1
        assert len(await released_pods(client, ns, "not-disrupted")) == 1

        # FailJob on the condition: the first disruption ends the Job.
        job = ended["fail-on-disruption"]
        assert conditions(job) == [
            ("FailureTarget", "True", "PodFailurePolicy"),
            ("Failed", "True", "PodFailurePolicy"),
        ]
        message = f"Pod {ns}/{failed['fail-on-disruption']} has condition DisruptionTarget " + (
            "matching FailJob rule at index 0"
        )
        assert [c["message"] for c in job["status"]["conditions"]] == [message, message]
        assert job["status"].get("failed") == 1
        assert len(await released_pods(client, ns, "fail-on-disruption")) == 1
        events = await events_for(client, ns, "fail-on-disruption")
        assert ("PodFailurePolicy", message) in events, events
