"""Webhooks on the real apiserver: a WebhookServer with a validating and a mutating webhook
for ConfigMaps (of the test's namespace only, by a namespace selector), registered with
admission_configuration and the server's self-signed bundle. A create the validator denies
fails with the webhook's reason; a defaulted key is stored; with the server gone,
failurePolicy Fail refuses and says why, and once the configurations are deleted creates
pass again."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from pathlib import Path
from typing import Any

import pytest

from kcontrol.client import CONFIGMAPS, Object, Resource
from kcontrol.envtest import ControlPlane
from kcontrol.errors import ApiError, Forbidden, InternalError
from kcontrol.serving._tls import ensure_self_signed
from kcontrol.webhook import (
    AdmissionRequest,
    AdmissionWebhook,
    Denied,
    FieldError,
    WebhookOptions,
    WebhookServer,
    admission_configuration,
)
from tests.webhook.webhook_helpers import serving

pytestmark = pytest.mark.integration

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


def default(obj: Object, request: AdmissionRequest) -> None:
    obj.setdefault("data", {}).setdefault("tier", "standard")


def validate(request: AdmissionRequest) -> list[str]:
    assert request.object is not None
    size = request.object.get("data", {}).get("size", "1")
    if not size.isdigit() or int(size) > 10:
        raise Denied(
            "size must be a number up to 10",
            field_errors=[FieldError("data.size", f"{size!r} is not within 1..10")],
        )
    return ["size is advisory"] if size == "10" else []


async def test_validating_and_mutating_webhooks_on_the_apiserver(
    control_plane: ControlPlane, namespace: str
) -> None:
    name = f"test-{namespace}"
    admin = control_plane.admin_client()
    selector = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    async with (
        admin,
        serving(
            mutate_configmaps=AdmissionWebhook(default=default),
            validate_configmaps=AdmissionWebhook(validate=validate),
        ) as server,
    ):
        url = f"https://127.0.0.1:{server.port}"
        configurations: list[tuple[Resource, Object]] = [
            (
                MUTATING,
                admission_configuration(
                    name,
                    CONFIGMAPS,
                    "/mutate-configmaps",
                    mutating=True,
                    url=url,
                    ca_bundle=server.ca_bundle,
                    namespace_selector=selector,
                ),
            ),
            (
                VALIDATING,
                admission_configuration(
                    name,
                    CONFIGMAPS,
                    "/validate-configmaps",
                    mutating=False,
                    url=url,
                    ca_bundle=server.ca_bundle,
                    namespace_selector=selector,
                ),
            ),
        ]
        try:
            for resource, body in configurations:
                await admin.create(resource, body)
            created = await _eventually_created(admin, namespace, {"size": "3"})
            assert created["data"] == {"size": "3", "tier": "standard"}, "defaulted, stored"

            with pytest.raises(Forbidden) as denied:
                await admin.create(CONFIGMAPS, _map("big", {"size": "11"}), namespace=namespace)
            message = str(denied.value)
            assert "denied the request" in message and "size must be a number up to 10" in message
            causes = denied.value.details.get("causes") or []
            assert {
                "field": "data.size",
                "message": "'11' is not within 1..10",
                "reason": "FieldValueInvalid",
            } in causes, denied.value.details

            with pytest.raises(Forbidden, match="size must be a number"):
                await admin.create(CONFIGMAPS, _map("odd", {"size": "x"}), namespace=namespace)
        finally:
            server_port = server.port
        # The server stops below; with failurePolicy Fail the API server refuses and says so.
    async with control_plane.admin_client() as admin:
        try:
            with pytest.raises((InternalError, ApiError)) as refused:
                await admin.create(CONFIGMAPS, _map("later", {"size": "1"}), namespace=namespace)
            assert "failed calling webhook" in str(refused.value), str(refused.value)
            assert str(server_port) in str(refused.value)
        finally:
            for resource, _ in configurations:
                await admin.delete(resource, name)
        await admin.create(CONFIGMAPS, _map("after", {"size": "1"}), namespace=namespace)


def _map(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": data}


async def _eventually_created(admin: Any, namespace: str, data: dict[str, str]) -> Object:
    """The API server reads new webhook configurations within a second or so: create until
    the mutating webhook has seen the request."""
    for attempt in range(50):
        created: Object = await admin.create(
            CONFIGMAPS, _map(f"small-{attempt}", data), namespace=namespace
        )
        if "tier" in created.get("data", {}):
            return created
        await asyncio.sleep(0.2)
    raise AssertionError("the webhook configuration never took effect")


async def test_certificate_files_replaced_on_disk_are_served_without_a_restart(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    cert, key = ensure_self_signed(first, ["127.0.0.1"])
    new_cert, new_key = ensure_self_signed(second, ["127.0.0.1"])
    options = WebhookOptions(
        port=0,
        bind_address="127.0.0.1",
        cert_file=cert,
        key_file=key,
        cert_reload_interval=0.2,
    )
    server = WebhookServer(options)
    server.register("/validate-configmaps", AdmissionWebhook(validate=validate))
    task = asyncio.create_task(server.run())
    try:
        await asyncio.wait_for(server.wait_ready(), 10)
        assert await served_certificate(server.port) == cert.read_bytes()
        old_bundle = server.ca_bundle
        cert.write_bytes(new_cert.read_bytes())
        key.write_bytes(new_key.read_bytes())
        for _ in range(100):
            if await served_certificate(server.port) == new_cert.read_bytes():
                break
            await asyncio.sleep(0.1)
        assert await served_certificate(server.port) == new_cert.read_bytes()
        assert server.ca_bundle != old_bundle, "the bundle follows the file"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def served_certificate(port: int) -> bytes:
    """The certificate a new TLS connection to ``port`` is served (PEM)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True)
        return ssl.DER_cert_to_PEM_cert(der).encode()
    finally:
        writer.close()
