"""The test cluster plays a Job pod's container from its command (kwok runs none): kwok decides
the exit code and run time from the pod spec and writes them on the pod, then the pod
succeeds, fails, restarts its container or keeps running accordingly.

Plain pods stand in for a Job's (no Job controller is needed): ``restartPolicy`` Never or
OnFailure, and the completion-index annotation set by the test where the Job controller would.
Waits are deadline-bounded polls; nothing asserts that something happened fast.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

import pytest

from kcontrol.client import PODS, ApiClient, Object
from kcontrol.envtest.cluster import (
    DELETE_DELAY_ANNOTATION,
    EXIT_CODE_ANNOTATION,
    RUN_TIME_ANNOTATION,
    Cluster,
)
from kcontrol.envtest.cluster._kwok import kwok_config
from kcontrol.errors import NotFound
from tests.integration.helpers import new_client, poll

WITHIN = 60.0
INDEX = "batch.kubernetes.io/job-completion-index"
FAILS_FOR_INDEX_2 = ["sh", "-c", 'if [ "$JOB_COMPLETION_INDEX" = "2" ]; then exit 1; fi']


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[ApiClient]:
    async with new_client(cluster) as api:
        yield api


def _pod(
    name: str,
    command: list[str] | None = None,
    *,
    restart: str = "Never",
    args: list[str] | None = None,
    image: str = "registry.example/app:1",
    annotations: dict[str, str] | None = None,
    finalizers: list[str] | None = None,
) -> Object:
    container: dict[str, Any] = {"name": "main", "image": image}
    if command is not None:
        container["command"] = command
    if args is not None:
        container["args"] = args
    metadata: dict[str, Any] = {"name": name, "annotations": annotations or {}}
    if finalizers:
        metadata["finalizers"] = finalizers
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"restartPolicy": restart, "containers": [container]},
    }


def _status(pod: Object) -> dict[str, Any]:
    return pod.get("status") or {}


def _container(pod: Object) -> dict[str, Any]:
    statuses = _status(pod).get("containerStatuses") or [{}]
    return statuses[0]  # type: ignore[no-any-return]


def _terminated(pod: Object) -> dict[str, Any]:
    return (_container(pod).get("state") or {}).get("terminated") or {}


def _annotations(pod: Object) -> dict[str, str]:
    return pod["metadata"].get("annotations") or {}


async def _wait_phase(client: ApiClient, namespace: str, name: str, phase: str) -> Object:
    pod: Object = {}

    async def reached() -> bool:
        nonlocal pod
        pod = await client.get(PODS, name, namespace=namespace)
        return _status(pod).get("phase") == phase

    await poll(reached, within=WITHIN, message=lambda: f"{name} never {phase}: {_status(pod)}")
    return pod


def test_kwok_config_holds_the_job_stages_once_each() -> None:
    documents = [json.loads(doc) for doc in kwok_config(ready_delay=1).split("---")]
    names = [doc["metadata"]["name"] for doc in documents if doc["kind"] == "Stage"]
    assert len(names) == len(set(names))
    jobs = ("pod-job-decide", "pod-job-complete", "pod-job-fail", "pod-job-restart", "pod-job-kill")
    assert set(jobs) <= set(names)


class Case(NamedTuple):
    """A first container, and what kwok must decide for it."""

    name: str
    command: list[str] | None
    exit_code: str
    run_time: str | None = None
    completion_index: str | None = None
    args: list[str] | None = None
    image: str = "registry.example/app:1"


IF_INDEX_0 = "if [[ ${JOB_COMPLETION_INDEX} -eq 0 ]]; then sleep infinity; else exit 9; fi; exit 5"
DECISIONS = [
    Case("no-command", None, "0"),
    Case("pause-image", None, "none", image="registry.k8s.io/pause:3.10"),
    Case("exit-3", ["sh", "-c", "exit 3"], "3"),
    Case("exit-modulo-256", ["/bin/sh", "-c", "exit 258"], "2"),
    Case("bin-false", ["/bin/false"], "1"),
    Case("false", ["false"], "1"),
    Case("sleep-infinity", ["sleep", "infinity"], "none"),
    Case("sleep-long", ["sleep"], "0", "3600000ms", args=["3600"]),
    Case("sleeps-add-up", ["sh"], "4", "61500ms", args=["-c", "sleep 1.5\nsleep 1m && exit 4"]),
    Case("index-2-fails", FAILS_FOR_INDEX_2, "1", completion_index="2"),
    Case("index-1-passes", FAILS_FOR_INDEX_2, "0", completion_index="1"),
    Case("no-index-passes", FAILS_FOR_INDEX_2, "0"),
    Case("eq-else-branch", ["bash", "-ec", IF_INDEX_0], "9", completion_index="3"),
    Case("eq-then-branch", ["bash", "-ec", IF_INDEX_0], "none", completion_index="0"),
    Case("index-in-exit", ["sh", "-c", "exit $(JOB_COMPLETION_INDEX)"], "7", completion_index="7"),
    Case("unknown-condition", ["sh", "-c", "if grep -q x /f; then exit 2; fi; true"], "0"),
    Case("unknown-command", ["sh", "-c", "echo hi; python job.py"], "0"),
]


async def test_the_decision_follows_the_documented_grammar(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    for case in DECISIONS:
        annotations = {INDEX: case.completion_index} if case.completion_index is not None else {}
        pod = _pod(
            case.name, case.command, args=case.args, image=case.image, annotations=annotations
        )
        await client.create(PODS, pod, namespace=ns)
    # restartPolicy Always is not a Job pod: no decision, it runs as before.
    always = _pod("always", ["sh", "-c", "exit 3"], restart="Always")
    await client.create(PODS, always, namespace=ns)

    decided: dict[str, dict[str, str]] = {}

    async def all_decided() -> bool:
        for pod in (await client.list(PODS, namespace=ns))["items"]:
            decided[pod["metadata"]["name"]] = _annotations(pod)
        return all(EXIT_CODE_ANNOTATION in decided.get(case.name, {}) for case in DECISIONS)

    await poll(all_decided, within=WITHIN, message=lambda: f"undecided pods: {decided}")
    for case in DECISIONS:
        assert decided[case.name].get(EXIT_CODE_ANNOTATION) == case.exit_code, case
        assert decided[case.name].get(RUN_TIME_ANNOTATION) == case.run_time, case
    running = await _wait_phase(client, ns, "always", "Running")
    assert EXIT_CODE_ANNOTATION not in _annotations(running)


async def test_never_exit_3_fails_default_succeeds_and_sleep_keeps_running(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(PODS, _pod("sleeps", ["sleep", "infinity"]), namespace=ns)
    await client.create(PODS, _pod("exits-3", ["sh", "-c", "exit 3"]), namespace=ns)
    await client.create(PODS, _pod("echoes", ["echo", "done"]), namespace=ns)

    failed = await _wait_phase(client, ns, "exits-3", "Failed")
    assert _terminated(failed)["exitCode"] == 3
    assert _terminated(failed)["reason"] == "Error"

    succeeded = await _wait_phase(client, ns, "echoes", "Succeeded")
    assert _terminated(succeeded)["exitCode"] == 0
    assert _terminated(succeeded)["reason"] == "Completed"
    for pod in (failed, succeeded):
        ready = [c for c in _status(pod)["conditions"] if c["type"] == "Ready"]
        assert ready[0]["status"] == "False"
        assert ready[0]["reason"] == "PodCompleted"

    # Both ended a run time after they became Running; the sleeper started with them.
    sleeps = await client.get(PODS, "sleeps", namespace=ns)
    assert _status(sleeps)["phase"] == "Running"
    assert "running" in _container(sleeps)["state"]
    assert _annotations(sleeps)[EXIT_CODE_ANNOTATION] == "none"


async def test_on_failure_restarts_the_failing_container_and_the_pod_stays_running(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(
        PODS, _pod("crashes", ["sh", "-c", "exit 1"], restart="OnFailure"), namespace=ns
    )
    pod: Object = {}

    async def restarted_twice() -> bool:
        nonlocal pod
        pod = await client.get(PODS, "crashes", namespace=ns)
        return int(_container(pod).get("restartCount", 0)) >= 2

    await poll(restarted_twice, within=WITHIN, message=lambda: f"no restarts: {_status(pod)}")
    assert _status(pod)["phase"] == "Running"
    assert _container(pod)["lastState"]["terminated"]["exitCode"] == 1
    assert _container(pod)["lastState"]["terminated"]["reason"] == "Error"
    assert "running" in _container(pod)["state"]


async def test_the_completion_index_condition_fails_only_the_matching_index(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    for index in ("0", "1", "2"):
        pod = _pod(f"index-{index}", FAILS_FOR_INDEX_2, annotations={INDEX: index})
        await client.create(PODS, pod, namespace=ns)

    failed = await _wait_phase(client, ns, "index-2", "Failed")
    assert _terminated(failed)["exitCode"] == 1
    for index in ("0", "1"):
        succeeded = await _wait_phase(client, ns, f"index-{index}", "Succeeded")
        assert _terminated(succeeded)["exitCode"] == 0


async def test_sleep_sets_the_run_time_before_the_exit(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(PODS, _pod("slow", ["sh", "-c", "sleep 4; exit 2"]), namespace=ns)
    failed = await _wait_phase(client, ns, "slow", "Failed")
    terminated = _terminated(failed)
    assert terminated["exitCode"] == 2
    # One-second timestamps: 4 s of run time shows as at least 3 (load only adds to it).
    assert _seconds_between(terminated["startedAt"], terminated["finishedAt"]) >= 3


def _seconds_between(start: str, end: str) -> float:
    def parse(text: str) -> datetime.datetime:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))

    return (parse(end) - parse(start)).total_seconds()


async def test_a_deleted_job_pod_with_finalizers_is_killed_then_removed_without_them(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    finalizer = "test.kcontrol.io/hold"
    pod = _pod(
        "held",
        ["sleep", "infinity"],
        finalizers=[finalizer],
        annotations={DELETE_DELAY_ANNOTATION: "0s"},
    )
    await client.create(PODS, pod, namespace=ns)
    await _wait_phase(client, ns, "held", "Running")
    await client.delete(PODS, "held", namespace=ns)

    killed = await _wait_phase(client, ns, "held", "Failed")
    assert _terminated(killed)["exitCode"] == 137
    assert _terminated(killed)["reason"] == "Error"

    await client.patch(PODS, "held", {"metadata": {"finalizers": None}}, namespace=ns)

    async def gone() -> bool:
        try:
            await client.get(PODS, "held", namespace=ns)
        except NotFound:
            return True
        return False

    await poll(gone, within=WITHIN, message="the killed pod was not removed")
