"""Managed mode: the operator points the API server at its own webhook server - kopf's
``WebhookAutoServer`` with managed configurations, for a developer's operator on a local
cluster (kind, minikube, envtest) whose API server can reach the developer's machine.

:func:`install_webhooks` server-side applies one ``MutatingWebhookConfiguration`` and one
``ValidatingWebhookConfiguration`` named ``name`` (only those with webhooks), each webhook
calling ``url`` + its path with ``ca_bundle``, and points the conversion of each CRD named in
``conversions`` at its path (a merge patch of ``spec.conversion``: the rest of the CRD is
left alone). Applying is idempotent: the manager does it at every start, after its webhook
server listens, so a new self-signed certificate is trusted at once.

In a cluster, leave it off: the configurations belong with the operator's manifests
(``deploy/operator-webhooks/``), their CA injected by cert-manager.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kcontrol.client import CUSTOMRESOURCEDEFINITIONS, Client, PatchType, Resource
from kcontrol.webhook._configuration import admission_configuration

__all__ = [
    "MUTATINGWEBHOOKCONFIGURATIONS",
    "VALIDATINGWEBHOOKCONFIGURATIONS",
    "AdmissionTarget",
    "install_webhooks",
]

MUTATINGWEBHOOKCONFIGURATIONS: Final = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    namespaced=False,
)
"""MutatingWebhookConfiguration objects (``admissionregistration.k8s.io/v1``, cluster-scoped)."""

VALIDATINGWEBHOOKCONFIGURATIONS: Final = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)
"""ValidatingWebhookConfiguration objects (``admissionregistration.k8s.io/v1``, cluster-scoped)."""

FIELD_MANAGER: Final = "kcontrol-webhooks"
"""The field manager of the applied configurations."""


@dataclass(frozen=True, slots=True)
class AdmissionTarget:
    """An admission webhook to configure: served at ``path`` for ``operations`` on
    ``resource``, mutating or validating."""

    resource: Resource
    path: str
    mutating: bool
    operations: tuple[str, ...] = ("CREATE", "UPDATE")


async def install_webhooks(
    client: Client,
    *,
    name: str,
    url: str,
    ca_bundle: bytes,
    admission: Sequence[AdmissionTarget] = (),
    conversions: Mapping[str, str] | None = None,
) -> None:
    """Apply the configurations and patch the CRDs (module docstring); ``conversions`` maps
    a CRD's name (``websites.example.com``) to the path of its conversion webhook. API errors
    propagate (the manager retries)."""
    for mutating, resource in (
        (True, MUTATINGWEBHOOKCONFIGURATIONS),
        (False, VALIDATINGWEBHOOKCONFIGURATIONS),
    ):
        targets = [t for t in admission if t.mutating is mutating]
        if not targets:
            continue
        webhooks: list[Any] = []
        for target in targets:
            single = admission_configuration(
                name,
                target.resource,
                target.path,
                mutating=mutating,
                url=url,
                ca_bundle=ca_bundle,
                operations=target.operations,
            )
            webhooks.extend(single["webhooks"])
        body = {**single, "webhooks": webhooks}
        await client.patch(
            resource,
            name,
            body,
            patch_type=PatchType.APPLY,
            field_manager=FIELD_MANAGER,
            force=True,
        )
    bundle = base64.b64encode(ca_bundle).decode()
    for crd, path in (conversions or {}).items():
        conversion = {
            "strategy": "Webhook",
            "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"url": url.rstrip("/") + path, "caBundle": bundle},
            },
        }
        await client.patch(
            CUSTOMRESOURCEDEFINITIONS,
            crd,
            {"spec": {"conversion": conversion}},
            patch_type=PatchType.MERGE,
        )
