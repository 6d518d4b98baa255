"""Objects as the API server serves them, for the rollout view's pure tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

NOW = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)
DEPLOYMENT_UID = "uid-web"


def stamp(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def template(image: str, pod_hash: str | None = None) -> dict[str, Any]:
    labels = {"app": "web"}
    if pod_hash:
        labels["pod-template-hash"] = pod_hash
    return {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "web", "image": image}]},
    }


def deployment(
    *,
    image: str = "registry.k8s.io/pause:3.10",
    replicas: int = 6,
    generation: int = 2,
    observed: int = 2,
    updated: int = 4,
    ready: int = 5,
    available: int = 5,
    total: int = 7,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "demo",
            "uid": DEPLOYMENT_UID,
            "generation": generation,
            "annotations": {"deployment.kubernetes.io/revision": "2"},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 2, "maxUnavailable": 1},
            },
            "template": template(image),
        },
        "status": {
            "observedGeneration": observed,
            "replicas": total,
            "updatedReplicas": updated,
            "readyReplicas": ready,
            "availableReplicas": available,
            "conditions": conditions
            if conditions is not None
            else [
                condition(
                    "Available",
                    "True",
                    "MinimumReplicasAvailable",
                    "Deployment has minimum availability.",
                    30,
                ),
                condition(
                    "Progressing",
                    "True",
                    "ReplicaSetUpdated",
                    'ReplicaSet "web-new" is progressing.',
                    2,
                ),
            ],
        },
    }


def condition(kind: str, status: str, reason: str, message: str, age: float) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": stamp(age),
        "lastTransitionTime": stamp(age),
    }


def replicaset(
    name: str,
    image: str,
    *,
    revision: int,
    desired: int,
    ready: int,
    owner_uid: str = DEPLOYMENT_UID,
    pod_hash: str = "h",
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": "demo",
            "uid": f"uid-{name}",
            "annotations": {"deployment.kubernetes.io/revision": str(revision)},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "web",
                    "uid": owner_uid,
                    "controller": True,
                }
            ],
        },
        "spec": {"replicas": desired, "template": template(image, pod_hash)},
        "status": {"replicas": desired, "readyReplicas": ready, "availableReplicas": ready},
    }


def event(
    reason: str,
    message: str,
    *,
    kind: str = "Deployment",
    name: str = "web",
    uid: str = DEPLOYMENT_UID,
    age: float = 5,
    type_: str = "Normal",
    count: int = 1,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{reason}.{age}", "namespace": "demo"},
        "involvedObject": {"kind": kind, "name": name, "uid": uid, "namespace": "demo"},
        "reason": reason,
        "message": message,
        "type": type_,
        "count": count,
        "lastTimestamp": stamp(age),
        "firstTimestamp": stamp(age),
    }
