"""The Website operator written with kopf: the baseline of ``bench/operator``.

For each Website (examples/website/crd.yaml) it keeps a Deployment and a Service of the same
name, owned by the Website, and reports ``status.observedGeneration``, ``readyReplicas``,
``phase`` and a ``Ready`` condition; a changed spec updates the Deployment, a Deployment's
status updates its Website's, and a deleted Deployment or Service is created again.

Written as a kopf user would, from kopf's documentation: change handlers for the Website
(``on.create``/``on.resume``/``on.update``) returning its status through ``patch.status``,
``kopf.adopt`` for the owner references, an in-memory index of the Websites (kopf's answer
to "look up the owner without asking the API"), ``on.event`` handlers for the owned kinds,
the official ``kubernetes`` client (as in kopf's walkthrough) created once in a startup
handler and kept in ``memo``; kopf's settings left at their defaults. Run it with::

    KUBECONFIG=... kopf run --standalone --all-namespaces bench/operator/kopf_website.py
"""

import datetime

import kopf
import kubernetes
from kubernetes.client.exceptions import ApiException

WEBSITE = ("demo.example.com", "v1", "websites")
MANAGED_BY = {"app.kubernetes.io/managed-by": "website-operator"}


def deployment_for(name, spec):
    labels = {"app.kubernetes.io/name": name}
    container = {"name": "web", "image": spec["image"], "ports": [{"containerPort": 80}]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {**labels, **MANAGED_BY}},
        "spec": {
            "replicas": spec.get("replicas", 1),
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def service_for(name):
    labels = {"app.kubernetes.io/name": name}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": {**labels, **MANAGED_BY}},
        "spec": {"selector": labels, "ports": [{"name": "http", "port": 80, "targetPort": 80}]},
    }


def website_status(website, ready_replicas):
    """readyReplicas, phase and the Ready condition (its lastTransitionTime kept unless its
    status changes)."""
    ready = ready_replicas or 0
    is_ready = ready >= website["spec"].get("replicas", 1)
    condition = {
        "type": "Ready",
        "status": "True" if is_ready else "False",
        "reason": "Available" if is_ready else "Progressing",
    }
    old = [c for c in website.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
    if old and old[0]["status"] == condition["status"]:
        condition["lastTransitionTime"] = old[0]["lastTransitionTime"]
    else:
        condition["lastTransitionTime"] = datetime.datetime.now(datetime.UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
    return {
        "readyReplicas": ready,
        "phase": "Ready" if is_ready else "Progressing",
        "conditions": [condition],
    }


def create_or_patch(create, patch, namespace, obj):
    try:
        return create(namespace, obj)
    except ApiException as error:
        if error.status != 409:
            raise
        return patch(obj["metadata"]["name"], namespace, obj)


def owner_of(child, websites):
    """The Website that controls ``child``, from the index; None if it is gone."""
    for ref in child.metadata.get("ownerReferences", []):
        if ref.get("controller") and ref["kind"] == "Website":
            for website in websites.get((child.metadata.namespace, ref["name"]), []):
                if website.metadata.uid == ref["uid"]:
                    return website
    return None


@kopf.on.startup()
def connect(memo, **_):
    kubernetes.config.load_config()
    memo.apps = kubernetes.client.AppsV1Api()
    memo.core = kubernetes.client.CoreV1Api()
    memo.custom = kubernetes.client.CustomObjectsApi()


@kopf.index(*WEBSITE)
def websites(namespace, name, body, **_):
    return {(namespace, name): body}


@kopf.on.create(*WEBSITE)
@kopf.on.resume(*WEBSITE)
def create(body, spec, meta, name, namespace, memo, patch, **_):
    deployment, service = deployment_for(name, spec), service_for(name)
    kopf.adopt([deployment, service])
    apps, core = memo.apps, memo.core
    created = create_or_patch(
        apps.create_namespaced_deployment, apps.patch_namespaced_deployment, namespace, deployment
    )
    create_or_patch(
        core.create_namespaced_service, core.patch_namespaced_service, namespace, service
    )
    patch.status["observedGeneration"] = meta["generation"]
    patch.status.update(website_status(body, created.status.ready_replicas))


@kopf.on.update(*WEBSITE, field="spec")
def update(body, spec, meta, name, namespace, memo, patch, **_):
    deployment = deployment_for(name, spec)
    kopf.adopt(deployment)
    patched = memo.apps.patch_namespaced_deployment(name, namespace, deployment)
    patch.status["observedGeneration"] = meta["generation"]
    patch.status.update(website_status(body, patched.status.ready_replicas))


@kopf.on.event("apps", "v1", "deployments", labels=MANAGED_BY)
def deployment_event(event, body, namespace, memo, websites, **_):
    website = owner_of(body, websites)
    if website is None:
        return
    if event["type"] == "DELETED":
        deployment = deployment_for(website.metadata.name, website.spec)
        kopf.adopt(deployment, owner=website)
        memo.apps.create_namespaced_deployment(namespace, deployment)
        return
    status = website_status(website, body.status.get("readyReplicas"))
    if any(website.status.get(key) != value for key, value in status.items()):
        memo.custom.patch_namespaced_custom_object_status(
            *WEBSITE[:2], namespace, WEBSITE[2], website.metadata.name, {"status": status}
        )


@kopf.on.event("", "v1", "services", labels=MANAGED_BY)
def service_event(event, body, namespace, memo, websites, **_):
    website = owner_of(body, websites)
    if website is not None and event["type"] == "DELETED":
        service = service_for(website.metadata.name)
        kopf.adopt(service, owner=website)
        memo.core.create_namespaced_service(namespace, service)
