"""The Website operator: a Deployment and a Service for each Website, and its status."""

from __future__ import annotations

import copy
from typing import Any

from kcontrol.builder import Request, controller_managed_by
from kcontrol.client import DEPLOYMENTS, SERVICES, Object, Resource
from kcontrol.controllerutil import (
    apply,
    patch_status,
    set_controller_reference,
    set_status_condition,
)
from kcontrol.errors import NotFound
from kcontrol.manager import Manager

WEBSITES = Resource("demo.example.com", "v1", "websites", "Website")

manager = Manager(name="website-operator")


async def apply_owned(website: Object, resource: Resource, spec: dict[str, Any]) -> Object:
    """Server-side apply this Website's ``resource`` object; nothing is sent while the cached
    object already holds every field given here."""
    name = website["metadata"]["name"]
    obj = {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {
            "name": name,
            "namespace": website["metadata"]["namespace"],
            "labels": {
                "app.kubernetes.io/name": name,
                "app.kubernetes.io/managed-by": manager.component,
            },
        },
        "spec": spec,
    }
    set_controller_reference(website, obj)
    return await apply(
        manager.client,
        resource,
        obj,
        field_manager=manager.component,
        force=True,
        reader=manager.cache,
    )


@controller_managed_by(manager).for_(WEBSITES).owns(DEPLOYMENTS).owns(SERVICES).complete
async def reconcile(request: Request) -> None:
    try:
        website = await manager.cache.get(WEBSITES, request.name, namespace=request.namespace)
    except NotFound:
        return  # deleted: the garbage collector deletes what it owned
    spec, selector = website["spec"], {"app.kubernetes.io/name": request.name}
    replicas = spec.get("replicas", 1)
    container = {"name": "web", "image": spec["image"], "ports": [{"containerPort": 80}]}
    deployment = await apply_owned(
        website,
        DEPLOYMENTS,
        {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": selector}, "spec": {"containers": [container]}},
        },
    )
    ports = [{"name": "http", "port": 80, "targetPort": 80}]
    await apply_owned(website, SERVICES, {"selector": selector, "ports": ports})

    ready = (deployment.get("status") or {}).get("readyReplicas", 0)
    generation = website["metadata"]["generation"]
    status = copy.deepcopy(website.get("status") or {})
    status.update(observedGeneration=generation, readyReplicas=ready)
    status["phase"] = "Ready" if ready >= replicas else "Progressing"
    condition = {
        "type": "Ready",
        "status": "True" if ready >= replicas else "False",
        "reason": "Available" if ready >= replicas else "Progressing",
        "message": f"{ready}/{replicas} replicas ready",
        "observedGeneration": generation,
    }
    set_status_condition(status.setdefault("conditions", []), condition)
    if status != website.get("status"):
        await patch_status(manager.client, WEBSITES, website, status)
