"""The Website example's fixtures: the CRD file, Websites, and what the operator should make."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kcontrol.client import ApiClient
from kcontrol.errors import NotFound

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "examples" / "website" / "crd.yaml"


def website(
    name: str, namespace: str, image: str = "nginx:1", replicas: int | None = 2
) -> dict[str, Any]:
    spec: dict[str, Any] = {"image": image}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "demo.example.com/v1",
        "kind": "Website",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def controller_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return dict(ref)
    return None


def deployment_matches(deployment: dict[str, Any], site: dict[str, Any]) -> bool:
    """The Deployment is the Website's: its image, replicas, selector, controller."""
    spec = deployment["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    selector = {"app.kubernetes.io/name": site["metadata"]["name"]}
    ref = controller_of(deployment) or {}
    return (
        container["image"] == site["spec"]["image"]
        and container["ports"][0]["containerPort"] == 80
        and spec["replicas"] == site["spec"].get("replicas", 1)
        and spec["selector"] == {"matchLabels": selector}
        and spec["template"]["metadata"]["labels"] == selector
        and deployment["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "website-operator"
        and (ref.get("kind"), ref.get("name"), ref.get("uid"))
        == ("Website", site["metadata"]["name"], site["metadata"]["uid"])
    )


def service_matches(service: dict[str, Any], site: dict[str, Any]) -> bool:
    ref = controller_of(service) or {}
    (port,) = service["spec"]["ports"]
    return (
        service["spec"]["selector"] == {"app.kubernetes.io/name": site["metadata"]["name"]}
        and (port["name"], port["port"], port["targetPort"]) == ("http", 80, 80)
        and ref.get("uid") == site["metadata"]["uid"]
    )


def status_is(site: dict[str, Any], *, ready: int, phase: str) -> bool:
    status = site.get("status") or {}
    conditions = {c["type"]: c for c in status.get("conditions") or ()}
    want = "True" if phase == "Ready" else "False"
    return (
        status.get("observedGeneration") == site["metadata"]["generation"]
        and status.get("readyReplicas") == ready
        and status.get("phase") == phase
        and conditions.get("Ready", {}).get("status") == want
        and conditions["Ready"].get("observedGeneration") == site["metadata"]["generation"]
    )


async def get_or_none(
    client: Any, resource: Any, name: str, namespace: str
) -> dict[str, Any] | None:
    try:
        obj: dict[str, Any] = await client.get(resource, name, namespace=namespace)
    except NotFound:
        return None
    return obj


__all__ = [
    "CRD",
    "ApiClient",
    "controller_of",
    "deployment_matches",
    "get_or_none",
    "service_matches",
    "status_is",
    "website",
]
