"""Realistic pod manifests for benchmarks that create pods on a real apiserver.

The shape follows ``bench/decode.py``'s generator (labels, an ownerReference to one of 50
ReplicaSets, two containers with ports, env, resources and a readiness probe), minus what the
server owns (uid, resourceVersion, status, managedFields). Pods get no node: with no
scheduler they stay Pending, which is all an informer benchmark needs. As stored by the
apiserver (defaults, status, the managedFields of the creating request) one pod is about
2.5-3 KB of JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

from kcontrol.client import NAMESPACES, PODS, ApiClient
from kcontrol.errors import AlreadyExists

__all__ = ["create_namespace", "create_pods", "pod_manifest"]

_IMAGES = [
    "registry.k8s.io/e2e-test-images/agnhost:2.53",
    "docker.io/library/nginx:1.27.3",
    "quay.io/prometheus/node-exporter:v1.8.2",
    "ghcr.io/example/payments-api:2024.11.07-3f9a2c1",
    "registry.k8s.io/pause:3.10",
]
_SIDECARS = [
    "docker.io/envoyproxy/envoy:v1.31.2",
    "ghcr.io/example/log-shipper:0.19.1",
]


def pod_manifest(i: int, namespace: str, rng: random.Random) -> dict[str, Any]:
    """Pod number ``i``, owned by one of 50 ReplicaSets (names are unique per ``i``)."""
    rs = i % 50
    app = f"app-{rs % 10}"
    rs_name = f"{app}-{rs:02d}-7d9f8b6c5d"
    name = f"{rs_name}-{i:06d}{rng.randrange(36**3):03x}"
    labels = {
        "app.kubernetes.io/name": app,
        "app.kubernetes.io/part-of": "shop",
        "pod-template-hash": "7d9f8b6c5d",
        "tier": "backend" if rs % 2 else "frontend",
    }
    probe = {
        "httpGet": {"path": "/healthz", "port": 8080},
        "periodSeconds": 10,
        "failureThreshold": 3,
    }
    containers = [
        {
            "name": "main",
            "image": _IMAGES[rs % len(_IMAGES)],
            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
            "env": [
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "GOMAXPROCS", "value": "2"},
                {"name": "LOG_LEVEL", "value": "info"},
            ],
            "resources": {
                "limits": {"cpu": "500m", "memory": "256Mi"},
                "requests": {"cpu": "100m", "memory": "128Mi"},
            },
            "readinessProbe": probe,
            "imagePullPolicy": "IfNotPresent",
        },
        {
            "name": "sidecar",
            "image": _SIDECARS[rs % len(_SIDECARS)],
            "ports": [{"containerPort": 9901, "protocol": "TCP"}],
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
            "imagePullPolicy": "IfNotPresent",
        },
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {"example.com/build": f"{rng.getrandbits(40):010x}"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": rs_name,
                    "uid": f"c0ffee00-0000-4000-8000-{rs:012x}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": containers,
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "automountServiceAccountToken": False,
        },
    }


async def create_namespace(client: ApiClient, name: str) -> None:
    with contextlib.suppress(AlreadyExists):
        await client.create(NAMESPACES, {"metadata": {"name": name}})


async def create_pods(
    client: ApiClient, namespace: str, count: int, *, concurrency: int = 32, seed: int = 42
) -> None:
    """Create ``count`` pods in ``namespace`` with ``concurrency`` requests in flight."""
    rng = random.Random(seed)
    manifests = iter([pod_manifest(i, namespace, rng) for i in range(count)])

    async def worker() -> None:
        for manifest in manifests:  # the shared iterator hands each pod to one worker
            await client.create(PODS, manifest, namespace=namespace)

    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker())
