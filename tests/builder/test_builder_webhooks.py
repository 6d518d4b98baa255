"""webhook_managed_by: controller-runtime's paths, the builder's checks, and, on the real
apiserver, an operator's Manager serving a defaulter and a validator for ConfigMaps of the
test's namespace, its /readyz waiting for the webhook server."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from builder_helpers import eventually, new_manager

from kcontrol.builder import webhook_managed_by, webhook_path
from kcontrol.client import CONFIGMAPS, DEPLOYMENTS, Object, Resource
from kcontrol.envtest import ControlPlane
from kcontrol.errors import ApiError, Forbidden, NotFound
from kcontrol.manager import Manager
from kcontrol.testing import running
from kcontrol.webhook import (
    DEFAULT_WEBHOOK_PORT,
    AdmissionRequest,
    ConversionWebhook,
    Denied,
    Spoke,
    WebhookOptions,
    admission_configuration,
)

VALIDATING = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)
MUTATING = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    namespaced=False,
)
WEBSITES = Resource("example.com", "v1beta1", "websites", "Website")


def test_paths_are_controller_runtimes() -> None:
    assert webhook_path("mutate", DEPLOYMENTS) == "/mutate-apps-v1-deployment"
    assert webhook_path("validate", WEBSITES) == "/validate-example-com-v1beta1-website"
    assert webhook_path("validate", CONFIGMAPS) == "/validate--v1-configmap"


def default(obj: Object, request: AdmissionRequest) -> None:
    obj.setdefault("data", {}).setdefault("tier", "standard")


def validate(request: AdmissionRequest) -> None:
    assert request.object is not None
    if request.object.get("data", {}).get("tier") not in ("standard", "premium"):
        raise Denied("tier must be standard or premium")


def test_complete_adds_both_and_checks_what_is_missing() -> None:
    manager = Manager(name="webhook-test")
    paths = (
        webhook_managed_by(manager)
        .for_(CONFIGMAPS)
        .with_defaulter(default)
        .with_validator(validate)
        .complete()
    )
    assert paths == ["/mutate--v1-configmap", "/validate--v1-configmap"]
    assert manager.webhook_server.paths == paths
    with pytest.raises(ValueError, match="for_"):
        webhook_managed_by(manager).with_validator(validate).complete()
    with pytest.raises(ValueError, match="no defaulter nor validator"):
        webhook_managed_by(manager).for_(DEPLOYMENTS).complete()
    with pytest.raises(ValueError, match="registered at"):
        webhook_managed_by(manager).for_(CONFIGMAPS).with_validator(validate).complete()
    with pytest.raises(RuntimeError, match="not listening"):
        manager._check_webhooks_served()  # /readyz waits for the server


@pytest.mark.integration
async def test_an_operators_manager_serves_its_webhooks(
    control_plane: ControlPlane, namespace: str
) -> None:
    manager = new_manager(
        control_plane,
        namespace=namespace,
        webhook=WebhookOptions(port=0, bind_address="127.0.0.1", hosts=("127.0.0.1",)),
    )
    mutate, validate_path = (
        webhook_managed_by(manager)
        .for_(CONFIGMAPS)
        .with_defaulter(default)
        .with_validator(validate)
        .complete()
    )
    name = f"builder-{namespace}"
    selector = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    admin = control_plane.admin_client()
    async with admin, running(manager):
        await eventually(lambda: _ready(manager), message="the webhook server never listened")
        url = f"https://127.0.0.1:{manager.webhook_server.port}"
        bundle = manager.webhook_server.ca_bundle
        installed = [
            (
                MUTATING,
                admission_configuration(
                    name,
                    CONFIGMAPS,
                    mutate,
                    mutating=True,
                    url=url,
                    ca_bundle=bundle,
                    namespace_selector=selector,
                ),
            ),
            (
                VALIDATING,
                admission_configuration(
                    name,
                    CONFIGMAPS,
                    validate_path,
                    mutating=False,
                    url=url,
                    ca_bundle=bundle,
                    namespace_selector=selector,
                ),
            ),
        ]
        try:
            for resource, body in installed:
                await admin.create(resource, body)

            async def defaulted() -> Object | None:
                created = await admin.create(
                    CONFIGMAPS, {"metadata": {"generateName": "site-"}}, namespace=namespace
                )
                return created if created.get("data", {}).get("tier") == "standard" else None

            await eventually(defaulted, message="the defaulter was never called")
            with pytest.raises(Forbidden, match="tier must be standard or premium"):
                await admin.create(
                    CONFIGMAPS,
                    {"metadata": {"name": "gold"}, "data": {"tier": "gold"}},
                    namespace=namespace,
                )
        finally:
            for resource, _ in installed:
                await admin.delete(resource, name)


async def _ready(manager: Manager) -> bool:
    await asyncio.sleep(0)
    return manager.webhook_server.ready()


def test_the_deploy_example_calls_the_paths_the_builder_serves() -> None:
    manifests = Path(__file__).resolve().parents[2] / "deploy/operator-webhooks/webhooks.yaml"
    documents = list(yaml.safe_load_all(manifests.read_text()))
    websites = Resource("example.com", "v1", "websites", "Website")
    paths = {
        d["kind"]: d["webhooks"][0]["clientConfig"]["service"]["path"]
        for d in documents
        if d["kind"].endswith("WebhookConfiguration")
    }
    assert paths == {
        "MutatingWebhookConfiguration": webhook_path("mutate", websites),
        "ValidatingWebhookConfiguration": webhook_path("validate", websites),
    }
    (service,) = [d for d in documents if d["kind"] == "Service"]
    assert service["spec"]["ports"][0]["targetPort"] == DEFAULT_WEBHOOK_PORT


@pytest.mark.integration
async def test_managed_mode_installs_the_configurations_and_the_crd_conversion(
    control_plane: ControlPlane, namespace: str
) -> None:
    """With ``install_url`` the manager, once its server listens, applies the admission
    configurations and points the CRD's conversion at itself: nothing to configure by hand.
    A v1beta1 Website created through the API server is defaulted, validated, converted to
    the stored v1 and back."""
    group = f"m{uuid.uuid4().hex[:8]}.example.com"
    hub, spoke = f"{group}/v1", f"{group}/v1beta1"
    v1 = Resource(group, "v1", "websites", "Website")
    v1beta1 = Resource(group, "v1beta1", "websites", "Website")
    name = f"managed-{group}"
    definition = two_version_crd(group)
    await control_plane.install_crds(definition)
    manager = new_manager(
        control_plane,
        webhook=WebhookOptions(
            port=0,
            bind_address="127.0.0.1",
            hosts=("127.0.0.1",),
            install_url="https://127.0.0.1:{port}",
            install_name=name,
        ),
    )
    manager.add_conversion_webhook(
        f"websites.{group}",
        ConversionWebhook(hub, {spoke: Spoke(to_hub=size_to_replicas, from_hub=replicas_to_size)}),
    )

    def default_replicas(obj: Object, request: AdmissionRequest) -> None:
        obj.setdefault("spec", {}).setdefault("replicas", 2)

    def pinned(request: AdmissionRequest) -> None:
        assert request.object is not None
        if ":" not in request.object["spec"].get("image", ""):
            raise Denied("the image must be pinned by a tag or a digest")

    webhook_managed_by(manager).for_(v1).with_defaulter(default_replicas).with_validator(
        pinned
    ).complete()
    admin = control_plane.admin_client()
    try:
        async with admin, running(manager):

            async def created() -> Object | None:
                try:
                    made: Object = await admin.create(
                        v1,
                        {
                            "apiVersion": hub,
                            "kind": "Website",
                            "metadata": {"name": "site"},
                            "spec": {"image": "nginx:1.27"},
                        },
                        namespace=namespace,
                    )
                except ApiError:
                    return None  # configurations not applied (or not yet read) yet
                return made if made["spec"].get("replicas") == 2 else None

            site = await eventually(created, message="the configurations never took effect")
            assert site["spec"]["replicas"] == 2, "defaulted"
            with pytest.raises(Forbidden, match="pinned by a tag"):
                await admin.create(
                    v1,
                    {
                        "apiVersion": hub,
                        "kind": "Website",
                        "metadata": {"name": "bad"},
                        "spec": {"image": "nginx"},
                    },
                    namespace=namespace,
                )
            seen = await admin.get(v1beta1, site["metadata"]["name"], namespace=namespace)
            assert seen["apiVersion"] == spoke and seen["spec"]["size"] == "small"
    finally:
        async with control_plane.admin_client() as cleanup:
            for resource in (MUTATING, VALIDATING):
                with contextlib.suppress(NotFound):
                    await cleanup.delete(resource, name)
        await control_plane.uninstall_crds(definition)


def size_to_replicas(obj: Object) -> Object:
    obj["spec"]["replicas"] = {"small": 2, "large": 5}[obj["spec"].pop("size", "small")]
    return obj


def replicas_to_size(obj: Object) -> Object:
    obj["spec"]["size"] = "large" if obj["spec"].pop("replicas", 2) > 2 else "small"
    return obj


def two_version_crd(group: str) -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"websites.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "websites", "singular": "website", "kind": "Website"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": schema},
                {"name": "v1beta1", "served": True, "storage": False, "schema": schema},
            ],
        },
    }
