"""ConversionWebhook: hub and spokes on review dicts (controller-runtime's conversion tests,
where they apply), the round trip, failures named per object; and on the real apiserver a
CRD served as v1beta1 and v1 (stored as v1) converted by the webhook both ways."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import pytest

from kcontrol.client import Object, Resource
from kcontrol.envtest import ControlPlane
from kcontrol.webhook import ConversionWebhook, Spoke, round_trip
from tests.webhook.webhook_helpers import serving

HUB = "example.com/v1"
SPOKE = "example.com/v1beta1"
SIZES = {"small": 1, "large": 5}
LOST = "example.com/v1-replicas"
"""Where v1beta1 keeps a replica count that is not one of its sizes, so nothing is lost."""


def to_hub(obj: Object) -> Object:
    """v1beta1 ``spec.size`` (small/large) -> v1 ``spec.replicas``."""
    spec = obj.setdefault("spec", {})
    annotations = obj.setdefault("metadata", {}).setdefault("annotations", {})
    kept = annotations.pop(LOST, None)
    size = spec.pop("size", "small")
    spec["replicas"] = int(kept) if kept is not None else SIZES[size]
    if not annotations:
        del obj["metadata"]["annotations"]
    return obj


def from_hub(obj: Object) -> Object:
    spec = obj.setdefault("spec", {})
    replicas = spec.pop("replicas", 1)
    sizes = {count: name for name, count in SIZES.items()}
    if replicas in sizes:
        spec["size"] = sizes[replicas]
    else:
        spec["size"] = "large" if replicas > 1 else "small"
        obj.setdefault("metadata", {}).setdefault("annotations", {})[LOST] = str(replicas)
    return obj


def webhook() -> ConversionWebhook:
    return ConversionWebhook(HUB, {SPOKE: Spoke(to_hub=to_hub, from_hub=from_hub)})


def website(api_version: str, **spec: Any) -> Object:
    return {
        "apiVersion": api_version,
        "kind": "Website",
        "metadata": {"name": "site", "namespace": "web", "uid": "u1"},
        "spec": dict(spec),
    }


def review(desired: str, *objects: Object) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "r1", "desiredAPIVersion": desired, "objects": list(objects)},
    }


def test_spoke_to_hub_and_back() -> None:
    hooks = webhook()
    assert hooks.convert(website(SPOKE, size="large"), HUB) == website(HUB, replicas=5)
    assert hooks.convert(website(HUB, replicas=1), SPOKE) == website(SPOKE, size="small")
    same = website(HUB, replicas=3)
    assert hooks.convert(same, HUB) == same and hooks.convert(same, HUB) is not same


@pytest.mark.parametrize(
    "obj",
    [website(HUB, replicas=3), website(HUB, replicas=5), website(SPOKE, size="small")],
)
def test_nothing_is_lost_in_a_round_trip(obj: Object) -> None:
    assert round_trip(webhook(), obj) == obj


def test_a_review_converts_every_object_in_order() -> None:
    answer = webhook().review(
        review(HUB, website(SPOKE, size="small"), website(SPOKE, size="large"))
    )
    assert answer["kind"] == "ConversionReview"
    response = answer["response"]
    assert response["uid"] == "r1" and response["result"] == {"status": "Success"}
    assert [o["spec"]["replicas"] for o in response["convertedObjects"]] == [1, 5]
    assert {o["apiVersion"] for o in response["convertedObjects"]} == {HUB}


def test_a_failure_names_the_object_and_why() -> None:
    def broken(obj: Object) -> Object:
        raise KeyError("spec")

    hooks = ConversionWebhook(HUB, {SPOKE: Spoke(to_hub=broken, from_hub=from_hub)})
    response = hooks.review(review(HUB, website(SPOKE, size="small")))["response"]
    assert response["result"]["status"] == "Failure"
    assert "web/site" in response["result"]["message"]
    assert "KeyError" in response["result"]["message"]
    unknown = webhook().review(review("example.com/v2", website(HUB)))["response"]
    assert "cannot convert 'example.com/v2'" in unknown["result"]["message"]


def test_the_hub_is_no_spoke() -> None:
    with pytest.raises(ValueError, match="hub"):
        ConversionWebhook(HUB, {HUB: Spoke(to_hub=to_hub, from_hub=from_hub)})


# -- on the real apiserver -----------------------------------------------------------------------


def crd(group: str, url: str, bundle: bytes) -> dict[str, Any]:
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
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {
                        "url": url + "/convert",
                        "caBundle": base64.b64encode(bundle).decode(),
                    },
                },
            },
        },
    }


@pytest.mark.integration
async def test_a_crd_served_in_two_versions_converts_through_the_webhook(
    control_plane: ControlPlane, namespace: str
) -> None:
    group = f"c{uuid.uuid4().hex[:8]}.example.com"
    hub, spoke = f"{group}/v1", f"{group}/v1beta1"
    hooks = ConversionWebhook(hub, {spoke: Spoke(to_hub=to_hub, from_hub=from_hub)})
    v1 = Resource(group, "v1", "websites", "Website")
    v1beta1 = Resource(group, "v1beta1", "websites", "Website")
    async with serving(convert=hooks) as server:
        definition = crd(group, f"https://127.0.0.1:{server.port}", server.ca_bundle)
        await control_plane.install_crds(definition)
        try:
            async with control_plane.admin_client() as admin:
                old = {"metadata": {"name": "site"}, "spec": {"size": "large"}}
                await admin.create(
                    v1beta1, {**old, "apiVersion": spoke, "kind": "Website"}, namespace=namespace
                )
                stored = await admin.get(v1, "site", namespace=namespace)
                assert stored["apiVersion"] == hub and stored["spec"] == {"replicas": 5}

                stored["spec"]["replicas"] = 3  # no size of v1beta1: kept in an annotation
                await admin.update(v1, stored, namespace=namespace)
                seen = await admin.get(v1beta1, "site", namespace=namespace)
                assert seen["spec"] == {"size": "large"}
                assert seen["metadata"]["annotations"][LOST] == "3"
                back = await admin.get(v1, "site", namespace=namespace)
                assert back["spec"] == {"replicas": 3}, "nothing lost on the way"
        finally:
            await control_plane.uninstall_crds(definition)
