"""kube-controller-manager's Job metrics, by their upstream names and labels."""

from __future__ import annotations

import pytest
from job_fixtures import Fixture, new_job, new_pod

from kcontrol.client import JOBS, PODS
from kcontrol.controller import ConsistencyStore
from kcontrol.errors import StaleCache

KEY = "default/foobar"


def sample(f: Fixture, name: str, **labels: str) -> float:
    return f.registry.get_sample_value(name, labels) or 0.0


async def test_sync_creation_and_finish_metrics() -> None:
    f = Fixture()
    job = f.add_job(new_job(2, 2, 6))
    await f.jc.sync(KEY)
    assert (
        sample(
            f,
            "job_controller_job_syncs_total",
            completion_mode="NonIndexed",
            result="success",
            action="pods_created",
        )
        == 1
    )
    assert (
        sample(
            f,
            "job_controller_job_sync_duration_seconds_count",
            completion_mode="NonIndexed",
            result="success",
            action="pods_created",
        )
        == 1
    )
    assert (
        sample(f, "job_controller_job_pods_creation_total", reason="new", status="succeeded") == 2
    )
    f.refresh_job_cache()
    f.jc.expectations.set_expectations(KEY, 0, 0)
    for pod in f.server_pods():
        pod["status"] = {"phase": "Succeeded"}
        f.add_pod(pod)
    await f.jc.sync(KEY)
    assert (
        sample(
            f,
            "job_controller_jobs_finished_total",
            completion_mode="NonIndexed",
            result="succeeded",
            reason="CompletionsReached",
        )
        == 1
    )
    assert (
        sample(
            f,
            "job_controller_job_pods_finished_total",
            completion_mode="NonIndexed",
            result="succeeded",
        )
        == 2
    )
    assert job["metadata"]["name"] == "foobar"


async def test_failure_metrics_by_reason_and_policy_action() -> None:
    f = Fixture()
    policy = {"rules": [{"action": "Count", "onExitCodes": {"operator": "In", "values": [1]}}]}
    job = f.add_job(new_job(1, 1, 0, podFailurePolicy=policy))
    f.add_pod(new_pod("p", job, "Failed", exit_code=1))
    await f.jc.sync(KEY)
    assert (
        sample(f, "job_controller_pod_failures_handled_by_failure_policy_total", action="Count")
        == 1
    )
    assert (
        sample(
            f,
            "job_controller_jobs_finished_total",
            completion_mode="NonIndexed",
            result="failed",
            reason="BackoffLimitExceeded",
        )
        == 1
    )
    assert (
        sample(
            f,
            "job_controller_job_pods_finished_total",
            completion_mode="NonIndexed",
            result="failed",
        )
        == 1
    )


async def test_indexed_finished_indexes() -> None:
    f = Fixture()
    job = f.add_job(new_job(2, 2, 6, "Indexed", backoffLimitPerIndex=0))
    f.add_pods(
        [
            new_pod("a", job, "Succeeded", index="0"),
            new_pod("b", job, "Failed", index="1", failure_count="0"),
        ]
    )
    await f.jc.sync(KEY)
    labels = {"backoffLimit": "perIndex"}
    assert sample(f, "job_controller_job_finished_indexes_total", status="succeeded", **labels) == 1
    assert sample(f, "job_controller_job_finished_indexes_total", status="failed", **labels) == 1


async def test_terminated_pods_with_the_tracking_finalizer() -> None:
    f = Fixture()
    job = f.add_job(new_job())
    running = new_pod("p", job, resourceVersion="1")
    done = new_pod("p", job, "Succeeded", resourceVersion="2")
    released = new_pod("p", job, "Succeeded", resourceVersion="3", finalizer=False)
    f.jc.add_pod(running)
    f.jc.update_pod(running, done)
    f.jc.update_pod(done, released)
    f.jc.add_pod(done)
    f.jc.delete_pod(done, final=True)
    name = "job_controller_terminated_pods_tracking_finalizer_total"
    assert (sample(f, name, event="add"), sample(f, name, event="delete")) == (2, 2)


async def test_stale_cache_skips_are_counted_and_requeued() -> None:
    """A sync whose informer has not seen the controller's own last write is put off."""
    f = Fixture()
    f.add_job(new_job())
    store = ConsistencyStore({JOBS: lambda: "5"})
    f.jc._syncer._consistency = store
    store.wrote_at(KEY, "job-uid", JOBS, "10")
    with pytest.raises(StaleCache):  # the runner retries it
        await f.jc.sync(KEY)
    assert f.client.actions == []
    assert sample(f, "job_controller_stale_sync_skips_total", group="batch", resource="jobs") == 1
    store.wrote_at(KEY, "job-uid", JOBS, "4")
    store.clear(KEY)
    assert await f.jc.sync(KEY) is None
    assert f.client.actions != []


async def test_own_writes_are_recorded_for_the_stale_cache_check() -> None:
    f = Fixture()
    f.add_job(new_job(1, 1, 6))
    await f.jc.sync(KEY)
    pending = f.jc.consistency.pending(KEY)
    created = f.server_pods()[0]["metadata"]["resourceVersion"]
    assert pending[PODS] == created
    assert pending[JOBS] == f.server_job()["metadata"]["resourceVersion"]
