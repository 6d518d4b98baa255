"""When a Website has converged: what both operators must have made of it.

A Website is converged when its Deployment and its Service exist as the operator contract
says (bench/operator's docstring) and its status agrees with its spec and with its
Deployment's status. The benchmark evaluates :func:`problems` over its own caches of
Websites, Deployments and Services; an empty list means converged. Every function here reads
plain dicts and writes nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

__all__ = [
    "MANAGED_BY",
    "NAME_LABEL",
    "expected_status",
    "problems",
]

NAME_LABEL = "app.kubernetes.io/name"
MANAGED_BY = {"app.kubernetes.io/managed-by": "website-operator"}

Object = Mapping[str, Any]


def expected_status(website: Object, deployment: Object) -> dict[str, Any]:
    """readyReplicas, phase and the Ready condition's status and reason that ``website``
    must show, given its ``deployment``."""
    ready = (deployment.get("status") or {}).get("readyReplicas") or 0
    is_ready = ready >= website["spec"].get("replicas", 1)
    return {
        "readyReplicas": ready,
        "phase": "Ready" if is_ready else "Progressing",
        "condition": ("True", "Available") if is_ready else ("False", "Progressing"),
    }


def _controller_uid(obj: Object) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            uid: str = ref.get("uid", "")
            return uid if ref.get("kind") == "Website" else None
    return None


def _deployment_problems(website: Object, deployment: Object) -> list[str]:
    name = website["metadata"]["name"]
    selector = {NAME_LABEL: name}
    spec = deployment.get("spec") or {}
    out = []
    labels = deployment["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in {**selector, **MANAGED_BY}.items()):
        out.append(f"deployment labels {labels}")
    if spec.get("replicas") != website["spec"].get("replicas", 1):
        out.append(f"deployment replicas {spec.get('replicas')}")
    if (spec.get("selector") or {}).get("matchLabels") != selector:
        out.append(f"deployment selector {spec.get('selector')}")
    template = spec.get("template") or {}
    if (template.get("metadata") or {}).get("labels") != selector:
        out.append(f"template labels {(template.get('metadata') or {}).get('labels')}")
    containers = (template.get("spec") or {}).get("containers") or []
    if (
        len(containers) != 1
        or containers[0].get("name") != "web"
        or containers[0].get("image") != website["spec"]["image"]
        or [p.get("containerPort") for p in containers[0].get("ports") or []] != [80]
    ):
        out.append(f"containers {containers}")
    return out


def _service_problems(website: Object, service: Object) -> list[str]:
    spec = service.get("spec") or {}
    out = []
    if spec.get("selector") != {NAME_LABEL: website["metadata"]["name"]}:
        out.append(f"service selector {spec.get('selector')}")
    ports = [(p.get("name"), p.get("port"), p.get("targetPort")) for p in spec.get("ports") or []]
    if ports != [("http", 80, 80)]:
        out.append(f"service ports {ports}")
    return out


def _status_problems(website: Object, deployment: Object) -> list[str]:
    status = website.get("status") or {}
    expected = expected_status(website, deployment)
    out = []
    if status.get("observedGeneration") != website["metadata"].get("generation"):
        out.append(f"observedGeneration {status.get('observedGeneration')}")
    for key in ("readyReplicas", "phase"):
        if status.get(key) != expected[key]:
            out.append(f"{key} {status.get(key)!r}, expected {expected[key]!r}")
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    if (
        len(ready) != 1
        or (ready[0].get("status"), ready[0].get("reason")) != expected["condition"]
        or not ready[0].get("lastTransitionTime")
    ):
        out.append(f"Ready condition {ready}")
    return out


def problems(
    website: Object,
    deployment: Object | None,
    service: Object | None,
    *,
    generation: int = 0,
    stale_uids: Collection[str] = (),
    deployment_ready: bool = False,
) -> list[str]:
    """Why ``website`` has not converged (empty: it has).

    ``deployment`` and ``service`` are the objects of the Website's name in its namespace
    (None: absent). ``generation``: the Website's generation the benchmark wrote last (a
    cache still holding an older one has not seen the change yet). ``stale_uids``: objects
    that were deleted and must have been created again (one with such a uid is the old one).
    ``deployment_ready``: the benchmark has written the Deployment's status as ready (a cache
    whose Deployment does not say so yet has not seen that write).
    """
    uid = website["metadata"].get("uid")
    if website["metadata"].get("generation", 0) < generation:
        return [f"generation {website['metadata'].get('generation')} < {generation}"]
    out = []
    for kind, obj in (("deployment", deployment), ("service", service)):
        if obj is None:
            out.append(f"no {kind}")
        elif obj["metadata"].get("uid") in stale_uids:
            out.append(f"{kind} not created again")
        elif _controller_uid(obj) != uid:
            out.append(f"{kind} not controlled by the Website")
    if deployment is not None:
        out += _deployment_problems(website, deployment)
        if deployment_ready and expected_status(website, deployment)["phase"] != "Ready":
            out.append("the Deployment's ready status not seen yet")
    if service is not None:
        out += _service_problems(website, service)
    if deployment is not None:
        out += _status_problems(website, deployment)
    return out
