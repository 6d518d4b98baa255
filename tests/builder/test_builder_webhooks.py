"""webhook_managed_by: controller-runtime's paths, the builder's checks, and, on the real
apiserver, an operator's Manager serving a defaulter and a validator for ConfigMaps of the
test's namespace, its /readyz waiting for the webhook server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from builder_helpers import eventually, new_manager

from kcontrol.builder import webhook_managed_by, webhook_path
from kcontrol.client import CONFIGMAPS, DEPLOYMENTS, Object, Resource
from kcontrol.envtest import ControlPlane
from kcontrol.errors import Forbidden
from kcontrol.manager import Manager
from kcontrol.testing import running
from kcontrol.webhook import (
    DEFAULT_WEBHOOK_PORT,
    AdmissionRequest,
    Denied,
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
