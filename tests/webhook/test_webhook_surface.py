"""kcontrol.webhook's public surface: a deliberate list."""

from __future__ import annotations

import kcontrol.webhook as package


def test_public_surface() -> None:
    assert sorted(package.__all__) == sorted(
        [
            "ADMISSION_TIMEOUT",
            "DEFAULT_WEBHOOK_PORT",
            "MAX_BODY_BYTES",
            "MUTATINGWEBHOOKCONFIGURATIONS",
            "VALIDATINGWEBHOOKCONFIGURATIONS",
            "AdmissionTarget",
            "AdmissionRequest",
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
    )
    for name in package.__all__:
        assert hasattr(package, name)
