"""bench/operator's convergence check: what counts as a Website both operators have handled."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from bench.operator._converge import expected_status, problems

UID = "website-uid"


def website(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "shop", "namespace": "ns", "uid": UID, "generation": 2},
        "spec": {"image": "web:2", "replicas": 1, **spec},
        "status": {
            "observedGeneration": 2,
            "readyReplicas": 0,
            "phase": "Progressing",
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "Progressing",
                    "lastTransitionTime": "2026-11-25T00:00:00Z",
                }
            ],
        },
    }


def owner() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "demo.example.com/v1",
            "kind": "Website",
            "name": "shop",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def deployment() -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "shop"}
    return {
        "metadata": {
            "name": "shop",
            "uid": "deployment-uid",
            "labels": {**labels, "app.kubernetes.io/managed-by": "website-operator"},
            "ownerReferences": owner(),
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "web:2",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        }
                    ]
                },
            },
        },
        "status": {},
    }


def service() -> dict[str, Any]:
    return {
        "metadata": {"name": "shop", "uid": "service-uid", "ownerReferences": owner()},
        "spec": {
            "selector": {"app.kubernetes.io/name": "shop"},
            "ports": [{"name": "http", "port": 80, "targetPort": 80, "protocol": "TCP"}],
            "clusterIP": "10.0.0.12",
        },
    }


Objects = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]


def set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    obj[last] = value  # type: ignore[index]


def change(which: int, path: str, value: Any) -> Callable[[Objects], None]:
    return lambda objects: set_path(objects[which], path, value)


def ready(objects: Objects) -> None:
    objects[1]["status"] = {"readyReplicas": 1}


# Each case breaks one thing the operators must do; the check must notice.
NOT_CONVERGED: list[tuple[str, Callable[[Objects], None]]] = [
    ("observedGeneration behind", change(0, "status.observedGeneration", 1)),
    ("no status", change(0, "status", {})),
    ("phase wrong", change(0, "status.phase", "Ready")),
    ("readyReplicas wrong", change(0, "status.readyReplicas", 1)),
    ("condition status wrong", change(0, "status.conditions.0.status", "True")),
    ("condition reason wrong", change(0, "status.conditions.0.reason", "Available")),
    (
        "condition without lastTransitionTime",
        change(0, "status.conditions.0.lastTransitionTime", ""),
    ),
    ("no Ready condition", change(0, "status.conditions", [])),
    ("Deployment status ready, Website not", ready),
    ("old image", change(1, "spec.template.spec.containers.0.image", "web:1")),
    ("replicas", change(1, "spec.replicas", 2)),
    ("container name", change(1, "spec.template.spec.containers.0.name", "app")),
    ("container port", change(1, "spec.template.spec.containers.0.ports.0.containerPort", 8080)),
    ("selector", change(1, "spec.selector.matchLabels", {"app": "shop"})),
    ("template labels", change(1, "spec.template.metadata.labels", {"app": "shop"})),
    ("managed-by label", change(1, "metadata.labels", {"app.kubernetes.io/name": "shop"})),
    ("deployment not owned", change(1, "metadata.ownerReferences", [])),
    ("deployment owned by another", change(1, "metadata.ownerReferences.0.uid", "other")),
    ("owner not the controller", change(1, "metadata.ownerReferences.0.controller", False)),
    ("service not owned", change(2, "metadata.ownerReferences", [])),
    ("service selector", change(2, "spec.selector", {"app": "shop"})),
    ("service port", change(2, "spec.ports.0.port", 8080)),
    ("service port name", change(2, "spec.ports.0.name", "web")),
    ("service targetPort", change(2, "spec.ports.0.targetPort", "http")),
]


def test_converged() -> None:
    assert problems(website(), deployment(), service(), generation=2) == []


def test_converged_when_ready() -> None:
    site, dep = website(), deployment()
    dep["status"] = {"readyReplicas": 1}
    site["status"].update(readyReplicas=1, phase="Ready")
    site["status"]["conditions"][0].update(status="True", reason="Available")
    assert problems(site, dep, service()) == []


def test_replicas_default_to_one() -> None:
    site = website()
    del site["spec"]["replicas"]
    assert problems(site, deployment(), service()) == []


@pytest.mark.parametrize("breaks", [c[1] for c in NOT_CONVERGED], ids=[c[0] for c in NOT_CONVERGED])
def test_not_converged(breaks: Callable[[Objects], None]) -> None:
    objects = (website(), deployment(), service())
    breaks(objects)
    assert problems(*objects) != []


def test_a_cache_that_has_not_seen_the_deployment_ready_is_not_converged() -> None:
    assert problems(website(), deployment(), service(), deployment_ready=True) != []
    site, dep = website(), deployment()
    dep["status"] = {"readyReplicas": 1}
    site["status"].update(readyReplicas=1, phase="Ready")
    site["status"]["conditions"][0].update(status="True", reason="Available")
    assert problems(site, dep, service(), deployment_ready=True) == []


def test_missing_objects() -> None:
    assert problems(website(), None, service()) == ["no deployment"]
    assert problems(website(), deployment(), None) == ["no service"]


def test_a_cache_behind_the_benchmark_write_is_not_converged() -> None:
    assert problems(website(), deployment(), service(), generation=3) != []


def test_objects_deleted_must_be_created_again() -> None:
    for stale in ({"deployment-uid"}, {"service-uid"}):
        assert problems(website(), deployment(), service(), stale_uids=stale) != []
    assert problems(website(), deployment(), service(), stale_uids={"older-uid"}) == []


@pytest.mark.parametrize(
    ("replicas", "deployment_status", "expected"),
    [
        (1, {}, (0, "Progressing", ("False", "Progressing"))),
        (1, None, (0, "Progressing", ("False", "Progressing"))),
        (1, {"readyReplicas": 1}, (1, "Ready", ("True", "Available"))),
        (3, {"readyReplicas": 2}, (2, "Progressing", ("False", "Progressing"))),
        (0, {}, (0, "Ready", ("True", "Available"))),
    ],
    ids=["no status", "status null", "ready", "partly ready", "zero replicas"],
)
def test_expected_status(
    replicas: int, deployment_status: dict[str, Any] | None, expected: tuple[Any, ...]
) -> None:
    dep = copy.deepcopy(deployment())
    dep["status"] = deployment_status
    got = expected_status(website(replicas=replicas), dep)
    assert (got["readyReplicas"], got["phase"], got["condition"]) == expected
