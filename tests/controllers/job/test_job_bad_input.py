"""Jobs the apiserver accepts but whose pods it refuses (issue 21): upstream's events and
conditions, and create attempts that back off instead of looping.

- ``quota``: a ResourceQuota of ``pods: 0`` in the namespace, so every pod create is refused
  by quota admission (403 Forbidden).
- ``annotations``: an Indexed Job whose template annotations are just under the 256 KiB the
  Job validation allows; the pod the controller builds from it adds the completion-index
  annotation and goes over, so only the pod validation refuses it (422 Invalid). It also has
  an ``activeDeadlineSeconds``, which must still end it.

Each create the controller sends is counted by the apiserver itself
(``apiserver_request_total`` of pod POSTs, by response code), over a 20 s window from the
Jobs' creation. Upstream requeues a failed sync through the queue's rate limiter (1 s doubling
up to 60 s), and a sync whose first create fails sends no more (slow start): five attempts per
Job in the window. A loop without the backoff would send one per second at the least (the
sync batching period), a hot loop thousands. Then the quota is deleted: the quota Job
gets its pods at a later retry and completes; the other fails by its deadline and its attempts
stop.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kcontrol.client import JOBS, RESOURCEQUOTAS, ApiClient
from kcontrol.envtest.cluster import Cluster
from kcontrol_controllers.job import NAME, SPEC
from tests.controllers.cluster_helpers import WITHIN, events_for, running_manager
from tests.controllers.job.exactly_once import (
    conditions,
    job_manifest,
    terminal,
    without_kcms_job_controller,
)
from tests.integration.helpers import poll

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WINDOW = 20.0
"""Seconds over which create attempts are counted."""
MOST_ATTEMPTS = 8
"""Attempts one Job may make in :data:`WINDOW`: 5 were seen (at 0, 1, 3, 7 and 15 s). Without
the backoff it makes 20; without slow start (both pods at once), 10."""
ANNOTATION_LIMIT = 256 * 1024
"""The apiserver's limit on the total size of an object's annotations (keys and values)."""
DEADLINE = 25


async def pod_posts(client: ApiClient) -> dict[str, float]:
    """The apiserver's count of pod creates, by response code."""
    text = (await client.get_raw("/metrics")).decode()
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name != "apiserver_request":
            continue
        for sample in family.samples:
            labels = sample.labels
            if (
                sample.name == "apiserver_request_total"
                and labels.get("verb") == "POST"
                and labels.get("resource") == "pods"
                and not labels.get("subresource")
            ):
                code = labels.get("code", "")
                counts[code] = counts.get(code, 0.0) + sample.value
    return counts


def big_annotations() -> dict[str, str]:
    """Template annotations 20 bytes under the limit: valid on the Job, not on its pods."""
    key = "example.com/padding"
    return {key: "x" * (ANNOTATION_LIMIT - 20 - len(key))}


async def test_refused_pods_get_events_and_backed_off_retries(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "no-pods"},
        "spec": {"hard": {"pods": "0"}},
    }
    await client.create(RESOURCEQUOTAS, quota, namespace=ns)

    async def quota_enforced() -> bool:
        current = await client.get(RESOURCEQUOTAS, "no-pods", namespace=ns)
        return (current.get("status") or {}).get("hard", {}).get("pods") == "0"

    await poll(quota_enforced, within=WITHIN, message="the quota never got its status")

    quota_job = job_manifest("quota", "exit 0", completions=2, parallelism=2)
    annotated = job_manifest(
        "annotations",
        "exit 0",
        completions=2,
        parallelism=2,
        completionMode="Indexed",
        activeDeadlineSeconds=DEADLINE,
    )
    annotated["spec"]["template"]["metadata"] = {"annotations": big_annotations()}

    async with (
        without_kcms_job_controller(cluster),
        running_manager(cluster, SPEC, controllers=(NAME,)),
    ):
        before = await pod_posts(client)
        await client.create(JOBS, quota_job, namespace=ns)  # the apiserver takes both Jobs
        await client.create(JOBS, annotated, namespace=ns)
        started = time.monotonic()
        await asyncio.sleep(WINDOW)  # an observation window, not a bound on anything
        during = await pod_posts(client)
        at_window_end = {
            name: await client.get(JOBS, name, namespace=ns) for name in ("quota", "annotations")
        }
        refused = {code: during.get(code, 0.0) - before.get(code, 0.0) for code in ("403", "422")}
        print(f"pod creates refused in {time.monotonic() - started:.1f} s: {refused}")

        # Retried (the controller did not give up), but backed off.
        assert 3 <= refused["403"] <= MOST_ATTEMPTS, refused
        assert 3 <= refused["422"] <= MOST_ATTEMPTS, refused
        assert during.get("201", 0.0) == before.get("201", 0.0), "a pod was created"

        # No condition and nothing counted: a refused create is not a pod failure.
        for name, job in at_window_end.items():
            status = job.get("status") or {}
            assert conditions(job) == [], (name, status)
            assert status.get("startTime"), (name, status)
            assert (status.get("active", 0), status.get("failed", 0)) == (0, 0), (name, status)

        # Upstream's events: FailedCreate with the apiserver's answer.
        events = await events_for(client, ns, "quota")
        failed_create = [message for reason, message in events if reason == "FailedCreate"]
        assert failed_create, events
        assert all(m.startswith("Error creating: pods ") for m in failed_create), failed_create
        assert all("exceeded quota: no-pods" in m for m in failed_create), failed_create
        events = await events_for(client, ns, "annotations")
        failed_create = [message for reason, message in events if reason == "FailedCreate"]
        assert failed_create, events
        assert all(
            m.startswith("Error creating: Pod ") and "metadata.annotations: Too long" in m
            for m in failed_create
        ), failed_create

        # The quota goes: a later retry creates the pods and the Job completes.
        await client.delete(RESOURCEQUOTAS, "no-pods", namespace=ns)

        async def both_finished() -> bool:
            jobs = [await client.get(JOBS, name, namespace=ns) for name in ("quota", "annotations")]
            return all(terminal(job) is not None for job in jobs)

        await poll(both_finished, within=WITHIN, interval=0.5, message="a Job never finished")
        job = await client.get(JOBS, "quota", namespace=ns)
        assert terminal(job) == ("Complete", "CompletionsReached"), conditions(job)
        assert job["status"]["succeeded"] == 2

        # The deadline ends the Job whose pods are invalid, with no pod ever counted ...
        job = await client.get(JOBS, "annotations", namespace=ns)
        assert conditions(job) == [
            ("FailureTarget", "True", "DeadlineExceeded"),
            ("Failed", "True", "DeadlineExceeded"),
        ]
        assert job["status"].get("failed", 0) == 0
        assert ("DeadlineExceeded", "Job was active longer than specified deadline") in (
            await events_for(client, ns, "annotations")
        )
        # ... and its create attempts stop.
        ended = await pod_posts(client)
        await asyncio.sleep(5.0)
        assert (await pod_posts(client)).get("422") == ended.get("422")
