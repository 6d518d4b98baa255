"""The ``ValidatingWebhookConfiguration`` / ``MutatingWebhookConfiguration`` that points the API
server at a webhook: for a local operator and envtest (a URL and the self-signed
certificate's bundle) or in a cluster (a Service)."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from kcontrol.client import Object, Resource

__all__ = ["admission_configuration"]


def admission_configuration(
    name: str,
    resource: Resource,
    path: str,
    *,
    mutating: bool,
    url: str | None = None,
    service: Mapping[str, Any] | None = None,
    ca_bundle: bytes | None = None,
    operations: Sequence[str] = ("CREATE", "UPDATE"),
    failure_policy: str = "Fail",
    side_effects: str = "None",
    timeout_seconds: int = 10,
    namespace_selector: Mapping[str, Any] | None = None,
) -> Object:
    """A configuration named ``name`` with one webhook calling ``path`` for ``operations`` on
    ``resource``: at ``url`` + ``path`` (``https://127.0.0.1:9443``), or through ``service``
    (``{"namespace": ..., "name": ..., "port": 443}``); ``ca_bundle`` (PEM) verifies the
    server's certificate. ``failure_policy`` ``Fail`` (the default, as controller-runtime's)
    refuses requests while the webhook is unreachable; ``Ignore`` lets them through
    unchecked. ``side_effects`` ``None`` declares that the webhook acts on nothing, so
    dry runs reach it."""
    if (url is None) == (service is None):
        raise ValueError("a webhook is reached through a url or a service, not both")
    client_config: dict[str, Any] = (
        {"url": url.rstrip("/") + path}
        if url is not None
        else {"service": {**dict(service or {}), "path": path}}
    )
    if ca_bundle is not None:
        client_config["caBundle"] = base64.b64encode(ca_bundle).decode()
    kind = "MutatingWebhookConfiguration" if mutating else "ValidatingWebhookConfiguration"
    webhook: dict[str, Any] = {
        "name": f"{path.strip('/').replace('/', '-')}.{resource.group or 'core'}.kcontrol.io",
        "admissionReviewVersions": ["v1"],
        "clientConfig": client_config,
        "rules": [
            {
                "apiGroups": [resource.group],
                "apiVersions": [resource.version],
                "resources": [resource.plural],
                "operations": list(operations),
                "scope": "Namespaced" if resource.namespaced else "Cluster",
            }
        ],
        "failurePolicy": failure_policy,
        "sideEffects": side_effects,
        "timeoutSeconds": timeout_seconds,
    }
    if namespace_selector is not None:
        webhook["namespaceSelector"] = dict(namespace_selector)
    if mutating:
        webhook["reinvocationPolicy"] = "Never"
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [webhook],
    }
