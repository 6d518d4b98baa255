"""Webhooks for operators: admission (defaulting and validation) served over HTTPS -
controller-runtime's ``pkg/webhook``.

- :class:`AdmissionWebhook` answers ``AdmissionReview`` requests with a defaulter (it mutates
  a copy of the object; the JSON Patch is computed) or a validator (warnings to allow,
  :class:`Denied` with :class:`FieldError`\\ s to refuse); :meth:`AdmissionWebhook.review`
  takes and returns the review dicts, for tests.
- :class:`ConversionWebhook` converts custom resources between their versions through a hub
  (one :class:`Spoke` - ``to_hub``/``from_hub`` - per other version); :func:`round_trip`
  checks that nothing is lost.
- :class:`WebhookServer` serves them on the secure port's listener with request bodies,
  certificates from files (reloaded) or generated (:class:`WebhookOptions`).
- :func:`json_patch`: the RFC 6902 patch between two documents.
- :func:`admission_configuration`: a Validating- or MutatingWebhookConfiguration for webhooks
  served at a URL (development, envtest) or behind a Service; :func:`install_webhooks`
  applies them (and CRDs' conversion settings) for a local operator: managed mode.

The builder declares webhooks next to a controller
(:func:`kcontrol.builder.webhook_managed_by`), and the manager serves them.
"""

from kcontrol.webhook._admission import (
    ADMISSION_TIMEOUT,
    AdmissionRequest,
    AdmissionWebhook,
    Defaulter,
    Denied,
    FieldError,
    Validator,
)
from kcontrol.webhook._configuration import admission_configuration
from kcontrol.webhook._conversion import ConversionWebhook, Converter, Spoke, round_trip
from kcontrol.webhook._install import (
    MUTATINGWEBHOOKCONFIGURATIONS,
    VALIDATINGWEBHOOKCONFIGURATIONS,
    AdmissionTarget,
    install_webhooks,
)
from kcontrol.webhook._jsonpatch import json_patch
from kcontrol.webhook._server import (
    DEFAULT_WEBHOOK_PORT,
    MAX_BODY_BYTES,
    WebhookOptions,
    WebhookServer,
)

__all__ = [
    "ADMISSION_TIMEOUT",
    "DEFAULT_WEBHOOK_PORT",
    "MAX_BODY_BYTES",
    "MUTATINGWEBHOOKCONFIGURATIONS",
    "VALIDATINGWEBHOOKCONFIGURATIONS",
    "AdmissionRequest",
    "AdmissionTarget",
    "AdmissionWebhook",
    "ConversionWebhook",
    "Converter",
    "Defaulter",
    "Denied",
    "FieldError",
    "Spoke",
    "Validator",
    "WebhookOptions",
    "WebhookServer",
    "admission_configuration",
    "install_webhooks",
    "json_patch",
    "round_trip",
]
