"""The annotations a Deployment and its ReplicaSets carry, and how they are copied.

- ``deployment.kubernetes.io/revision`` - the ReplicaSet's revision (and the Deployment's
  current one); ``revision-history`` - the earlier revisions a ReplicaSet had before a
  rollback made it new again (see :mod:`kcontrol_controllers.deployment._revisions`);
- ``desired-replicas`` / ``max-replicas`` - the Deployment's ``spec.replicas`` and
  ``spec.replicas + maxSurge`` when the ReplicaSet was last sized: proportional scaling
  and scaling-event detection read them back;
- ``deprecated.deployment.rollback.to`` - the round-tripped ``spec.rollbackTo`` of the old
  API versions (see :mod:`kcontrol_controllers.deployment._rollback`).

Every other annotation of a Deployment, except kubectl's last-applied configuration, is
copied onto its new ReplicaSet. The functions that change annotations work on a dict the
caller owns and report whether they changed anything.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, Final

from ..intstr import DecimalError, parse_decimal
from ._fields import annotations_of

__all__ = [
    "ANNOTATIONS_TO_SKIP",
    "DESIRED_REPLICAS_ANNOTATION",
    "LAST_APPLIED_CONFIG_ANNOTATION",
    "MAX_REPLICAS_ANNOTATION",
    "REVISION_ANNOTATION",
    "REVISION_HISTORY_ANNOTATION",
    "ROLLBACK_TO_ANNOTATION",
    "AnnotationError",
    "copy_deployment_annotations_to_replica_set",
    "get_desired_replicas_annotation",
    "get_max_replicas_annotation",
    "mutable_annotations",
    "non_negative_int32_from_annotation",
    "replicas_annotations_need_update",
    "rollback_to",
    "set_deployment_annotations_to",
    "set_replicas_annotations",
    "skip_copy_annotation",
]

REVISION_ANNOTATION: Final = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION: Final = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION: Final = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION: Final = "deployment.kubernetes.io/max-replicas"
ROLLBACK_TO_ANNOTATION: Final = "deprecated.deployment.rollback.to"
LAST_APPLIED_CONFIG_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"

ANNOTATIONS_TO_SKIP: Final = frozenset(
    {
        LAST_APPLIED_CONFIG_ANNOTATION,
        REVISION_ANNOTATION,
        REVISION_HISTORY_ANNOTATION,
        DESIRED_REPLICAS_ANNOTATION,
        MAX_REPLICAS_ANNOTATION,
        ROLLBACK_TO_ANNOTATION,
    }
)
"""Annotations never copied between a Deployment and its ReplicaSets."""

_INT32_MAX: Final = 2**31 - 1


class AnnotationError(ValueError):
    """An annotation holds something other than what the controller writes there."""


def skip_copy_annotation(key: str) -> bool:
    """Whether ``key`` stays out of the copies between Deployment and ReplicaSet."""
    return key in ANNOTATIONS_TO_SKIP


def mutable_annotations(obj: MutableMapping[str, Any]) -> dict[str, str]:
    """``obj.metadata.annotations`` as a dict the caller may change, created if absent.

    ``obj`` must be the caller's own copy (never a cached object).
    """
    metadata = obj.setdefault("metadata", {})
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        annotations = {}
        metadata["annotations"] = annotations
    return annotations


def copy_deployment_annotations_to_replica_set(
    deployment: Mapping[str, Any], replica_set: MutableMapping[str, Any]
) -> bool:
    """Copy the Deployment's annotations, except the skipped ones, onto ``replica_set`` (the
    caller's copy); True if any value was added or changed. Nothing is removed."""
    target = mutable_annotations(replica_set)
    changed = False
    for key, value in annotations_of(deployment).items():
        if skip_copy_annotation(key) or target.get(key) == value:
            continue
        target[key] = value
        changed = True
    return changed


def set_deployment_annotations_to(
    deployment: MutableMapping[str, Any], rollback_to: Mapping[str, Any]
) -> None:
    """Give ``deployment`` (the caller's copy) the annotations of the ReplicaSet it rolls back
    to: its skipped annotations are kept, every other one is replaced by the ReplicaSet's
    (upstream ``SetDeploymentAnnotationsTo``)."""
    current = mutable_annotations(deployment)
    kept = {key: value for key, value in current.items() if skip_copy_annotation(key)}
    for key, value in annotations_of(rollback_to).items():
        if not skip_copy_annotation(key):
            kept[key] = value
    current.clear()
    current.update(kept)


def set_replicas_annotations(
    replica_set: MutableMapping[str, Any], desired_replicas: int, max_replicas: int
) -> bool:
    """Record the Deployment's size on ``replica_set`` (the caller's copy); True if changed."""
    annotations = mutable_annotations(replica_set)
    changed = False
    for key, value in (
        (DESIRED_REPLICAS_ANNOTATION, str(desired_replicas)),
        (MAX_REPLICAS_ANNOTATION, str(max_replicas)),
    ):
        if annotations.get(key) != value:
            annotations[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(
    replica_set: Mapping[str, Any], desired_replicas: int, max_replicas: int
) -> bool:
    """Whether :func:`set_replicas_annotations` would change ``replica_set``."""
    annotations = annotations_of(replica_set)
    return annotations.get(DESIRED_REPLICAS_ANNOTATION) != str(desired_replicas) or (
        annotations.get(MAX_REPLICAS_ANNOTATION) != str(max_replicas)
    )


def non_negative_int32_from_annotation(obj: Mapping[str, Any], key: str) -> int | None:
    """The annotation ``key`` as an int32 >= 0, or ``None`` when it is absent.

    Raises :class:`AnnotationError` when it is present but not a decimal number in
    ``[0, 2**31 - 1]`` (upstream ``getNonNegativeInt32FromAnnotation``: ``ParseUint(value,
    10, 32)``, then the int32 bound; its errors say "invalid syntax" or "out of range").
    """
    value = annotations_of(obj).get(key)
    if value is None:
        return None
    text = str(value)
    try:
        number = parse_decimal(text, bits=32, signed=False)
    except DecimalError as error:
        raise AnnotationError(str(error)) from None
    if number > _INT32_MAX:
        raise AnnotationError(f'parsing "{text}": value out of range')
    return number


def _replicas_annotation(obj: Mapping[str, Any], key: str) -> int | None:
    try:
        return non_negative_int32_from_annotation(obj, key)
    except AnnotationError:
        return None


def get_desired_replicas_annotation(replica_set: Mapping[str, Any]) -> int | None:
    """The ``desired-replicas`` annotation, or ``None`` when absent or malformed."""
    return _replicas_annotation(replica_set, DESIRED_REPLICAS_ANNOTATION)


def get_max_replicas_annotation(replica_set: Mapping[str, Any]) -> int | None:
    """The ``max-replicas`` annotation, or ``None`` when absent or malformed."""
    return _replicas_annotation(replica_set, MAX_REPLICAS_ANNOTATION)


def rollback_to(deployment: Mapping[str, Any]) -> int | None:
    """The revision the deprecated ``spec.rollbackTo`` asks for (``0``: the previous one),
    read from the annotation the API keeps it in; ``None`` when absent, empty or not an
    int64 (an invalid value is ignored, as upstream)."""
    value = str(annotations_of(deployment).get(ROLLBACK_TO_ANNOTATION) or "")
    try:
        return parse_decimal(value, bits=64, signed=True)
    except DecimalError:
        return None
