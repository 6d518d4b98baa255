"""The Website operator as its users run it - ``python -m examples.website --kubeconfig ...``,
its own process - on the real apiserver with the CRD installed: it converges, follows spec
and status changes, re-creates what is deleted, then writes nothing, and stops cleanly. Its
webhooks, in managed mode (``--webhook-install-url``), default the replicas, refuse an
unpinned image with the field's error, and serve the Website as v1beta1."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from processes import LoggedProcess
from website_helpers import (
    CRD,
    deployment_matches,
    get_or_none,
    service_matches,
    status_is,
    website,
)

from examples.website import WEBSITES
from kcontrol.client import DEPLOYMENTS, SERVICES, ApiClient, PatchType, Resource, load_config
from kcontrol.envtest import ControlPlane
from kcontrol.errors import ApiError, Invalid, NotFound
from kcontrol.webhook import MUTATINGWEBHOOKCONFIGURATIONS, VALIDATINGWEBHOOKCONFIGURATIONS

pytestmark = [pytest.mark.integration, pytest.mark.slow]

T = TypeVar("T")
V1BETA1 = Resource("demo.example.com", "v1beta1", "websites", "Website")


async def eventually(
    probe: Callable[[], Awaitable[T | None]],
    operator: LoggedProcess,
    *,
    within: float = 30.0,
    what: str,
) -> T:
    deadline = time.monotonic() + within
    while True:
        value = await probe()
        if value:
            return value
        if not operator.running():
            raise AssertionError(
                f"the operator exited while waiting for {what}:\n{operator.log()[-4000:]}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within}s: {what}\n{operator.log()[-4000:]}")
        await asyncio.sleep(0.1)


async def test_website_operator_end_to_end(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    await control_plane.install_crds([CRD])
    operator = LoggedProcess(
        [
            sys.executable,
            "-m",
            "examples.website",
            f"--kubeconfig={control_plane.kubeconfig_path}",
            "--webhook-port=0",
            "--webhook-bind-address=127.0.0.1",
            "--webhook-install-url=https://127.0.0.1:{port}",
        ],
        tmp_path / "operator.log",
    )
    try:
        async with ApiClient(
            await load_config(kubeconfig=str(control_plane.kubeconfig_path)), qps=0
        ) as client:
            await webhooks_in_effect(client, namespace, operator)
            site = await client.create(WEBSITES, website("site", namespace, replicas=2))

            async def converged() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]] | None:
                current = await get_or_none(client, WEBSITES, "site", namespace)
                deployment = await get_or_none(client, DEPLOYMENTS, "site", namespace)
                service = await get_or_none(client, SERVICES, "site", namespace)
                if not (current and deployment and service):
                    return None
                if not (
                    deployment_matches(deployment, current) and service_matches(service, current)
                ):
                    return None
                phase = (
                    "Ready"
                    if (deployment.get("status") or {}).get("readyReplicas", 0) >= 2
                    else "Progressing"
                )
                ready = (deployment.get("status") or {}).get("readyReplicas", 0)
                if not status_is(current, ready=ready, phase=phase):
                    return None
                return current, deployment, service

            site, _deployment, service = await eventually(
                converged, operator, what="first convergence"
            )
            assert (
                site["status"]["phase"] == "Progressing"
            )  # no controller runs the Deployment here

            # The Deployment's status moves (as kube-controller-manager would move it): the
            # Website follows.
            await client.patch(
                DEPLOYMENTS,
                "site",
                {"status": {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2}},
                namespace=namespace,
                subresource="status",
            )

            async def ready() -> dict[str, Any] | None:
                current = await get_or_none(client, WEBSITES, "site", namespace)
                return current if current and status_is(current, ready=2, phase="Ready") else None

            await eventually(ready, operator, what="status Ready after the Deployment became ready")

            # A spec change: the Deployment follows, observedGeneration too.
            await client.patch(
                WEBSITES,
                "site",
                {"spec": {"image": "nginx:2"}},
                namespace=namespace,
                patch_type=PatchType.MERGE,
            )

            async def image_rolled() -> dict[str, Any] | None:
                deployment = await get_or_none(client, DEPLOYMENTS, "site", namespace)
                current = await get_or_none(client, WEBSITES, "site", namespace)
                if deployment and current and deployment_matches(deployment, current):
                    status = current.get("status") or {}
                    return (
                        current
                        if status.get("observedGeneration") == current["metadata"]["generation"]
                        else None
                    )
                return None

            site = await eventually(image_rolled, operator, what="the image change")

            # What the operator owns is re-created when deleted.
            old_uid = service["metadata"]["uid"]
            await client.delete(SERVICES, "site", namespace=namespace)

            async def recreated() -> dict[str, Any] | None:
                current = await get_or_none(client, SERVICES, "site", namespace)
                return current if current and current["metadata"]["uid"] != old_uid else None

            await eventually(recreated, operator, what="the deleted Service re-created")
            await eventually(converged, operator, what="convergence after the re-creation")

            # Converged: nothing more is written (a reconcile that writes on every pass would
            # keep moving resourceVersions through its own events).
            async def versions() -> tuple[str, ...]:
                objs = [
                    await client.get(r, "site", namespace=namespace)
                    for r in (WEBSITES, DEPLOYMENTS, SERVICES)
                ]
                return tuple(o["metadata"]["resourceVersion"] for o in objs)

            before = await versions()
            await asyncio.sleep(2.0)
            assert await versions() == before

            seen = await client.get(V1BETA1, "site", namespace=namespace)
            assert seen["apiVersion"] == "demo.example.com/v1beta1"
            assert seen["spec"]["size"] in ("small", "medium", "large")

        operator.signal(signal.SIGTERM)
        assert await operator.wait(within=20) == 0, operator.log()[-4000:]
    finally:
        operator.stop()
        async with control_plane.admin_client() as admin:  # nothing answers them any more
            for resource in (MUTATINGWEBHOOKCONFIGURATIONS, VALIDATINGWEBHOOKCONFIGURATIONS):
                with contextlib.suppress(NotFound):
                    await admin.delete(resource, "website-operator")
        await control_plane.install_crds([CRD])  # its conversion back to the file's


async def webhooks_in_effect(client: ApiClient, namespace: str, operator: LoggedProcess) -> None:
    """Until the configurations the operator installed are in effect: a Website without
    replicas comes back defaulted; then an unpinned image is refused with its field."""

    async def defaulted() -> dict[str, Any] | None:
        probe = website("probe", namespace, replicas=None)
        probe["metadata"] = {"generateName": "probe-", "namespace": namespace}
        try:
            created = await client.create(WEBSITES, probe)
        except ApiError:
            return None  # the webhook configured but its CA not yet read, say
        await client.delete(WEBSITES, created["metadata"]["name"], namespace=namespace)
        return created if created["spec"].get("replicas") == 1 else None

    await eventually(defaulted, operator, what="the defaulting webhook in effect")
    with pytest.raises(Invalid) as refused:
        await client.create(WEBSITES, website("unpinned", namespace, image="nginx"))
    causes = refused.value.details.get("causes") or []
    assert [c["field"] for c in causes] == ["spec.image"], refused.value.details
