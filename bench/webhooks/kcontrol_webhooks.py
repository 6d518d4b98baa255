"""The Website webhooks written with kcontrol: the kcontrol side of ``bench/webhooks``.

The defaulter and validator of examples/website/webhooks.py (without its conversion, and
without the Website controller, which the benchmark does not measure): one replica unless
asked otherwise; an image pinned by a tag or a digest and 0 to 20 replicas, or the Website is
refused (422, a cause per field); a warning above 10 replicas. Served by a manager of its own
at its defaults; run it with::

    python -m bench.webhooks.kcontrol_webhooks --kubeconfig PATH \\
        --webhook-install-url=https://127.0.0.1:9443
"""

import sys

from kcontrol import operator as op

WEBSITES = op.Resource("demo.example.com", "v1", "websites", "Website")
MAX_REPLICAS = 20

manager = op.Manager(name="website-webhooks")


def default(website: op.Object, request: op.AdmissionRequest) -> None:
    website.setdefault("spec", {}).setdefault("replicas", 1)


def pinned(image: str) -> bool:
    return "@" in image or ":" in image.rsplit("/", 1)[-1]


def validate(request: op.AdmissionRequest) -> list[str]:
    if request.object is None:  # a delete: nothing to check
        return []
    spec = request.object.get("spec") or {}
    errors = []
    image = str(spec.get("image", ""))
    if not pinned(image):
        errors.append(op.FieldError("spec.image", f"{image!r} has no tag or digest"))
    replicas = spec.get("replicas", 1)
    if not isinstance(replicas, int) or not 0 <= replicas <= MAX_REPLICAS:
        errors.append(op.FieldError("spec.replicas", f"must be 0 to {MAX_REPLICAS}"))
    if errors:
        raise op.Denied("the Website is invalid", field_errors=errors, code=422, reason="Invalid")
    return [f"{replicas} replicas: mind the bill"] if replicas > 10 else []


op.webhook_managed_by(manager).for_(WEBSITES).with_defaulter(default).with_validator(
    validate
).complete()

if __name__ == "__main__":
    sys.exit(manager.main())
