"""The Website operator's webhooks (docs/guides/webhooks.md): a defaulter, a validator, and the
conversion between ``v1`` (the hub, stored) and ``v1beta1``, which asked for a size
(``small``, ``medium``, ``large``) where ``v1`` asks for a replica count.

Importing this module adds them to :data:`examples.website.manager` (``python -m
examples.website`` does); run with ``--webhook-install-url=https://127.0.0.1:9443`` against a
local cluster and the manager configures the API server to call them.
"""

from __future__ import annotations

from typing import Any

from examples.website.controller import WEBSITES, manager
from kcontrol import operator as op

MAX_REPLICAS = 20
SIZES = {"small": 1, "medium": 3, "large": 5}
KEPT_REPLICAS = "demo.example.com/v1-replicas"
"""Where a v1beta1 Website keeps a replica count that is none of its sizes, so that a round
trip through v1beta1 loses nothing."""


def default(website: op.Object, request: op.AdmissionRequest) -> None:
    """One replica unless asked otherwise."""
    website.setdefault("spec", {}).setdefault("replicas", 1)


def pinned(image: str) -> bool:
    """Whether ``image`` names a tag or a digest (a registry's port is neither)."""
    return "@" in image or ":" in image.rsplit("/", 1)[-1]


def validate(request: op.AdmissionRequest) -> list[str]:
    """The image must be pinned; the replicas within 0..MAX_REPLICAS."""
    if request.object is None:  # a delete: nothing to check
        return []
    spec: dict[str, Any] = request.object.get("spec") or {}
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


def to_v1(website: op.Object) -> op.Object:
    """v1beta1 -> v1: the size as a replica count (or the count kept from v1)."""
    spec = website.setdefault("spec", {})
    annotations = website.setdefault("metadata", {}).get("annotations") or {}
    kept = annotations.pop(KEPT_REPLICAS, None)
    size = spec.pop("size", "small")
    spec["replicas"] = int(kept) if kept is not None else SIZES.get(size, 1)
    if not annotations:
        website["metadata"].pop("annotations", None)
    return website


def to_v1beta1(website: op.Object) -> op.Object:
    """v1 -> v1beta1: the nearest size not below the count, the count kept if no size fits."""
    spec = website.setdefault("spec", {})
    replicas = spec.pop("replicas", 1)
    exact = {count: size for size, count in SIZES.items()}
    if replicas in exact:
        spec["size"] = exact[replicas]
    else:
        spec["size"] = next((s for s, c in SIZES.items() if c >= replicas), "large")
        annotations = website["metadata"].setdefault("annotations", {})
        annotations[KEPT_REPLICAS] = str(replicas)
    return website


converter = op.ConversionWebhook(
    WEBSITES.api_version,
    {"demo.example.com/v1beta1": op.Spoke(to_hub=to_v1, from_hub=to_v1beta1)},
)

paths = (
    op.webhook_managed_by(manager)
    .for_(WEBSITES)
    .with_defaulter(default)
    .with_validator(validate)
    .complete()
)
conversion_path = manager.add_conversion_webhook("websites.demo.example.com", converter)
