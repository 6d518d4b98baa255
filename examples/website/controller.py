"""The Website operator: a Deployment and a Service for each Website, and its status."""

from __future__ import annotations

import copy
from typing import Any

from kcontrol import operator as op

WEBSITES = op.Resource("demo.example.com", "v1", "websites", "Website")

manager = op.Manager(name="website-operator")


async def apply_owned(website: op.Object, resource: op.Resource, spec: dict[str, Any]) -> op.Object:
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
    op.set_controller_reference(website, obj)
    return await op.apply(
        manager.client,
        resource,
        obj,
        field_manager=manager.component,
        force=True,
        reader=manager.cache,
    )


@op.controller_managed_by(manager).for_(WEBSITES).owns(op.DEPLOYMENTS).owns(op.SERVICES).complete
async def reconcile(request: op.Request) -> None:
    try:
        website = await manager.cache.get(WEBSITES, request.name, namespace=request.namespace)
    except op.NotFound:
        return  # deleted: the garbage collector deletes what it owned
    spec, selector = website["spec"], {"app.kubernetes.io/name": request.name}
    replicas = spec.get("replicas", 1)
    container = {"name": "web", "image": spec["image"], "ports": [{"containerPort": 80}]}
    deployment = await apply_owned(
        website,
        op.DEPLOYMENTS,
        {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": selector}, "spec": {"containers": [container]}},
        },
    )
    ports = [{"name": "http", "port": 80, "targetPort": 80}]
    await apply_owned(website, op.SERVICES, {"selector": selector, "ports": ports})

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
    op.set_status_condition(status.setdefault("conditions", []), condition)
    if status != website.get("status"):
        await op.patch_status(manager.client, WEBSITES, website, status)
