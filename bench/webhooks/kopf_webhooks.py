"""The Website webhooks written with kopf: the kopf side of ``bench/webhooks``.

The same defaulter and validator as kcontrol_webhooks.py, as kopf's admission documentation
writes them: ``@kopf.on.mutate`` changing ``patch``, ``@kopf.on.validate`` raising
``kopf.AdmissionError``, warnings appended to ``warnings``; kopf's ``WebhookServer`` (a free
port, every interface) with managed configurations (``settings.admission.managed``), all at
their defaults but the certificate: kopf generates its self-signed one with ``certbuilder``
(``kopf[dev]``), which is not installed, so the benchmark gives it a self-signed pair in
``$WEBHOOK_CERT_FILE`` / ``$WEBHOOK_KEY_FILE``. Run it with::

    KUBECONFIG=... kopf run --standalone --all-namespaces bench/webhooks/kopf_webhooks.py
"""

import os

import kopf

MAX_REPLICAS = 20


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    settings.admission.server = kopf.WebhookServer(
        certfile=os.environ["WEBHOOK_CERT_FILE"], pkeyfile=os.environ["WEBHOOK_KEY_FILE"]
    )
    settings.admission.managed = "auto.kopf.dev"


@kopf.on.mutate("demo.example.com", "v1", "websites")
def default(spec, patch, **_):
    if "replicas" not in spec:
        patch.spec["replicas"] = 1


def pinned(image):
    return "@" in image or ":" in image.rsplit("/", 1)[-1]


@kopf.on.validate("demo.example.com", "v1", "websites")
def validate(spec, warnings, **_):
    errors = []
    image = str(spec.get("image", ""))
    if not pinned(image):
        errors.append(f"spec.image: {image!r} has no tag or digest")
    replicas = spec.get("replicas", 1)
    if not isinstance(replicas, int) or not 0 <= replicas <= MAX_REPLICAS:
        errors.append(f"spec.replicas: must be 0 to {MAX_REPLICAS}")
    if errors:
        raise kopf.AdmissionError("the Website is invalid: " + "; ".join(errors), code=422)
    if replicas > 10:
        warnings.append(f"{replicas} replicas: mind the bill")
