"""AdmissionWebhook on review dicts (controller-runtime's admission tests, where they apply):
a defaulter's change becomes a base64 JSON Patch, no change no patch; a validator's warnings
and denials with field errors; a failing or slow handler refuses with 500; v1beta1 answered
in kind; bad bodies are 400 over HTTP."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import orjson
import pytest

from kcontrol.client import Object
from kcontrol.serving._http import Request
from kcontrol.webhook import AdmissionRequest, AdmissionWebhook, Denied, FieldError


def review(
    operation: str = "CREATE",
    obj: Object | None = None,
    old: Object | None = None,
    api_version: str = "admission.k8s.io/v1",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "example.com", "version": "v1", "kind": "Website"},
            "resource": {"group": "example.com", "version": "v1", "resource": "websites"},
            "name": "site",
            "namespace": "web",
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": obj,
            "oldObject": old,
            "dryRun": False,
            **extra,
        },
    }


def website(replicas: int | None = None, image: str = "nginx:1.27") -> Object:
    spec: dict[str, Any] = {"image": image}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "example.com/v1",
        "kind": "Website",
        "metadata": {"name": "site"},
        "spec": spec,
    }


def default_replicas(obj: Object, request: AdmissionRequest) -> None:
    obj["spec"].setdefault("replicas", 2)


async def test_a_defaulters_change_is_answered_as_a_json_patch() -> None:
    webhook = AdmissionWebhook(default=default_replicas)

    answer = await webhook.review(review(obj=website()))

    response = answer["response"]
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    assert response["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002"
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    patch = orjson.loads(base64.b64decode(response["patch"]))
    assert patch == [{"op": "add", "path": "/spec/replicas", "value": 2}]


async def test_no_change_no_patch_and_deletes_untouched() -> None:
    webhook = AdmissionWebhook(default=default_replicas)
    unchanged = (await webhook.review(review(obj=website(3))))["response"]
    assert unchanged == {"uid": unchanged["uid"], "allowed": True}
    deleted = (await webhook.review(review("DELETE", old=website(3))))["response"]
    assert deleted == {"uid": deleted["uid"], "allowed": True}


async def test_the_defaulter_gets_a_copy() -> None:
    obj = website()
    await AdmissionWebhook(default=default_replicas).review(review(obj=obj))
    assert "replicas" not in obj["spec"]


async def validate(request: AdmissionRequest) -> list[str]:
    assert request.object is not None
    image = request.object["spec"]["image"]
    if ":" not in image and "@" not in image:
        raise Denied(
            "the image must be pinned by a tag or a digest",
            field_errors=[FieldError("spec.image", f"{image!r} has no tag")],
        )
    old = request.old_object
    if request.operation == "UPDATE" and old is not None and old["spec"]["image"] != image:
        return ["the image changes: the pods are replaced"]
    return []


async def test_a_denial_carries_its_message_and_field_errors() -> None:
    answer = await AdmissionWebhook(validate=validate).review(review(obj=website(image="nginx")))
    response = answer["response"]
    assert response["allowed"] is False
    assert response["status"] == {
        "status": "Failure",
        "code": 403,
        "reason": "Forbidden",
        "message": "the image must be pinned by a tag or a digest",
        "details": {
            "causes": [
                {
                    "field": "spec.image",
                    "message": "'nginx' has no tag",
                    "reason": "FieldValueInvalid",
                }
            ]
        },
    }


async def test_warnings_allow() -> None:
    answer = await AdmissionWebhook(validate=validate).review(
        review("UPDATE", obj=website(image="nginx:2"), old=website(image="nginx:1"))
    )
    assert answer["response"] == {
        "uid": answer["response"]["uid"],
        "allowed": True,
        "warnings": ["the image changes: the pods are replaced"],
    }


async def test_a_failing_handler_refuses_with_500() -> None:
    def broken(request: AdmissionRequest) -> None:
        raise KeyError("spec")

    answer = await AdmissionWebhook(validate=broken).review(review(obj=website()))
    status = answer["response"]["status"]
    assert answer["response"]["allowed"] is False
    assert (status["code"], status["reason"]) == (500, "InternalError")
    assert "KeyError" in status["message"]


async def test_a_slow_handler_is_cut_off_and_refused() -> None:
    async def slow(obj: Object, request: AdmissionRequest) -> None:
        await asyncio.sleep(30)

    answer = await AdmissionWebhook(default=slow, timeout=0.1).review(review(obj=website()))
    assert answer["response"]["allowed"] is False
    assert "timed out" in answer["response"]["status"]["message"]


async def test_v1beta1_is_answered_in_kind() -> None:
    answer = await AdmissionWebhook(validate=validate).review(
        review(obj=website(), api_version="admission.k8s.io/v1beta1")
    )
    assert answer["apiVersion"] == "admission.k8s.io/v1beta1"


async def test_the_request_is_decoded() -> None:
    request = AdmissionRequest.from_review(
        review("UPDATE", obj=website(1), old=website(2), dryRun=True)
    )
    assert (request.operation, request.name, request.namespace, request.dry_run) == (
        "UPDATE",
        "site",
        "web",
        True,
    )
    assert request.user_info["username"] == "alice"
    assert request.kind["kind"] == "Website" and request.resource["resource"] == "websites"
    with pytest.raises(ValueError, match="uid"):
        AdmissionRequest.from_review({"kind": "AdmissionReview", "request": {}})


@pytest.mark.parametrize("body", [b"not json", b"[]", b'{"kind": "Pod"}'])
async def test_a_body_that_is_not_a_review_is_400(body: bytes) -> None:
    request = Request(
        method="POST", target="/v", path="/v", query={}, version=(1, 1), headers={}, body=body
    )
    response = await AdmissionWebhook(validate=validate)(request)
    assert response.status == 400


def test_one_handler_each() -> None:
    with pytest.raises(ValueError, match="not both"):
        AdmissionWebhook(default=default_replicas, validate=validate)
    with pytest.raises(ValueError):
        AdmissionWebhook()
