"""kcontrol's TTL-after-finished controller on the test cluster: a finished Job with
``ttlSecondsAfterFinished: 2`` is deleted in the foreground - its pod first, then the Job.

kube-controller-manager's own ttl-after-finished-controller is switched off for the test
(and put back after), so only kcontrol's can delete the Job. The Job is marked
``spec.managedBy`` by a name no controller answers to, so no job controller (KCM's or
kcontrol's) acts on it: the test creates its pod and writes its finished status itself,
through the status subresource, as a job controller would - all this controller reads.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kcontrol.client import JOBS, PODS, ApiClient, Object
from kcontrol.envtest.cluster import DELETE_DELAY_ANNOTATION, Cluster
from kcontrol.errors import NotFound
from kcontrol_controllers.ttlafterfinished import NAME, SPEC
from tests.controllers.cluster_helpers import WITHIN, running_manager, without_kcm_controllers
from tests.integration.helpers import poll

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MANAGED_BY = "kcontrol.io/ttl-test"
"""A ``spec.managedBy`` no job controller answers to: the Job is left to the test."""


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def job(name: str, ttl: int) -> Object:
    labels = {"app": name}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "managedBy": MANAGED_BY,
            "ttlSecondsAfterFinished": ttl,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "work", "image": "registry.example/work:1"}],
                },
            },
        },
    }


def pod_of(owner: Object) -> Object:
    """A pod of ``owner`` as a job controller creates it; kwok keeps it terminating for 3 s
    once deleted, so the foreground deletion can be seen waiting for it."""
    meta = owner["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{meta['name']}-pod",
            "labels": {"app": meta["name"]},
            "annotations": {DELETE_DELAY_ANNOTATION: "3s"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "work", "image": "registry.example/work:1"}],
        },
    }


def succeeded(current: Object) -> Object:
    """``current`` with the status a job controller writes when its one pod succeeded."""
    at = now()
    finished = dict(current)
    finished["status"] = {
        "startTime": (current.get("status") or {}).get("startTime") or at,
        "completionTime": at,
        "succeeded": 1,
        "conditions": [
            {
                "type": kind,
                "status": "True",
                "reason": "CompletionsReached",
                "lastTransitionTime": at,
                "lastProbeTime": at,
            }
            for kind in ("SuccessCriteriaMet", "Complete")
        ],
    }
    return finished


async def test_a_finished_job_is_deleted_with_its_pods_after_its_ttl(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with without_kcm_controllers(cluster, NAME), running_manager(cluster, SPEC):
        created = await client.create(JOBS, job("short-lived", ttl=2), namespace=ns)
        await client.create(PODS, pod_of(created), namespace=ns)
        await client.update_status(JOBS, succeeded(created))

        seen: dict[str, Any] = {}

        async def deleting_in_the_foreground() -> bool:
            current = await client.get(JOBS, "short-lived", namespace=ns)
            meta = current["metadata"]
            seen["finalizers"] = meta.get("finalizers")
            return bool(meta.get("deletionTimestamp"))

        await poll(
            deleting_in_the_foreground,
            within=WITHIN,
            interval=0.2,
            message="the Job was not deleted after its TTL",
        )
        assert "foregroundDeletion" in (seen["finalizers"] or []), seen

        async def gone(resource: Any, name: str) -> bool:
            try:
                await client.get(resource, name, namespace=ns)
            except NotFound:
                return True
            return False

        await poll(
            lambda: gone(PODS, "short-lived-pod"),
            within=WITHIN,
            interval=0.5,
            message="the Job's pod was not deleted",
        )
        await poll(
            lambda: gone(JOBS, "short-lived"),
            within=WITHIN,
            interval=0.5,
            message="the Job was not removed after its pod",
        )
