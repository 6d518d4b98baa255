"""The Website example's webhooks, called as the API server would, without a server: the
defaulter, the validator's field errors, and v1beta1 <-> v1 losing nothing."""

from __future__ import annotations

from typing import Any

import pytest

from examples.website.webhooks import converter, default, pinned, validate
from kcontrol.webhook import AdmissionWebhook, round_trip


def review(spec: dict[str, Any], operation: str = "CREATE") -> dict[str, Any]:
    obj = {"apiVersion": "demo.example.com/v1", "kind": "Website", "spec": spec}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u", "operation": operation, "object": obj},
    }


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("nginx", False),
        ("nginx:1.27", True),
        ("registry.example:5000/nginx", False),
        ("registry.example:5000/nginx:1", True),
        ("nginx@sha256:" + "a" * 64, True),
    ],
)
def test_pinned(image: str, expected: bool) -> None:
    assert pinned(image) is expected


async def test_the_validator_names_each_bad_field() -> None:
    answer = await AdmissionWebhook(validate=validate).review(
        review({"image": "nginx", "replicas": 50})
    )
    status = answer["response"]["status"]
    assert (status["code"], status["reason"]) == (422, "Invalid")
    fields = [cause["field"] for cause in status["details"]["causes"]]
    assert fields == ["spec.image", "spec.replicas"]
    warned = await AdmissionWebhook(validate=validate).review(
        review({"image": "nginx:1", "replicas": 12})
    )
    assert warned["response"]["allowed"] and warned["response"]["warnings"]


async def test_the_defaulter_adds_one_replica_only_when_missing() -> None:
    webhook = AdmissionWebhook(default=default)
    assert "patch" in (await webhook.review(review({"image": "nginx:1"})))["response"]
    assert (
        "patch"
        not in (await webhook.review(review({"image": "nginx:1", "replicas": 3})))["response"]
    )


@pytest.mark.parametrize("replicas", [0, 1, 2, 3, 5, 7])
def test_nothing_is_lost_through_v1beta1(replicas: int) -> None:
    site = {
        "apiVersion": "demo.example.com/v1",
        "kind": "Website",
        "metadata": {"name": "site"},
        "spec": {"image": "nginx:1", "replicas": replicas},
    }
    assert round_trip(converter, site) == site
