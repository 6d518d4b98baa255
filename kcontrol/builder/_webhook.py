"""Declaring a resource's admission webhooks next to its controller: controller-runtime's
``NewWebhookManagedBy(mgr).For(...).WithDefaulter(...).WithValidator(...).Complete()``.

::

    webhook_managed_by(manager).for_(WEBSITES).with_defaulter(default).with_validator(
        validate
    ).complete()

``complete`` adds an :class:`~kcontrol.webhook.AdmissionWebhook` per handler to the manager's
webhook server, at controller-runtime's paths - ``/mutate-<group>-<version>-<kind>`` and
``/validate-<group>-<version>-<kind>`` (dots of the group as dashes, the kind in lower case;
the core group is empty: ``/validate--v1-configmap``) - so configurations written for a Go
operator's paths fit, and returns the paths. The webhook configurations that point the API
server at them are :func:`kcontrol.webhook.admission_configuration`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from kcontrol.client import Resource
from kcontrol.manager import Manager
from kcontrol.webhook import (
    ADMISSION_TIMEOUT,
    AdmissionTarget,
    AdmissionWebhook,
    Defaulter,
    Validator,
)

__all__ = ["WebhookBuilder", "webhook_managed_by", "webhook_path"]


def webhook_path(kind: str, resource: Resource) -> str:
    """controller-runtime's path of ``resource``'s ``kind`` (``"mutate"`` or
    ``"validate"``) webhook."""
    group = resource.group.replace(".", "-")
    return f"/{kind}-{group}-{resource.version}-{resource.kind.lower()}"


@dataclass(slots=True)
class WebhookBuilder:
    """Collects a resource's webhooks; :meth:`complete` adds them to the manager."""

    manager: Manager
    resource: Resource | None = None
    defaulter: Defaulter | None = None
    validator: Validator | None = None
    timeout: float = ADMISSION_TIMEOUT

    def for_(self, resource: Resource) -> WebhookBuilder:
        """The resource the webhooks admit."""
        self.resource = resource
        return self

    def with_defaulter(self, defaulter: Defaulter) -> WebhookBuilder:
        """A mutating webhook: ``defaulter(obj, request)`` sets defaults on a copy."""
        self.defaulter = defaulter
        return self

    def with_validator(self, validator: Validator) -> WebhookBuilder:
        """A validating webhook: ``validator(request)`` returns warnings or raises
        :class:`~kcontrol.webhook.Denied`."""
        self.validator = validator
        return self

    def with_timeout(self, seconds: float) -> WebhookBuilder:
        """How long a handler may run before the request is refused (10 s)."""
        self.timeout = seconds
        return self

    def complete(self) -> list[str]:
        """Add the webhooks to the manager; returns their paths (mutating first)."""
        if self.resource is None:
            raise ValueError("webhook_managed_by(...).for_(resource) is missing")
        if self.defaulter is None and self.validator is None:
            raise ValueError(f"no defaulter nor validator for {self.resource.plural}")
        paths = []
        if self.defaulter is not None:
            path = webhook_path("mutate", self.resource)
            self.manager.add_webhook(
                path,
                AdmissionWebhook(default=self.defaulter, timeout=self.timeout, name=path),
                target=AdmissionTarget(self.resource, path, mutating=True),
            )
            paths.append(path)
        if self.validator is not None:
            path = webhook_path("validate", self.resource)
            self.manager.add_webhook(
                path,
                AdmissionWebhook(validate=self.validator, timeout=self.timeout, name=path),
                target=AdmissionTarget(self.resource, path, mutating=False),
            )
            paths.append(path)
        return paths


def webhook_managed_by(manager: Manager) -> WebhookBuilder:
    """A builder of admission webhooks served by ``manager`` (module docstring)."""
    return WebhookBuilder(manager)
