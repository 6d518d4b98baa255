"""Reading Deployments and ReplicaSets: field access with the API's defaults, and the names
(labels, strategy types, controller kind) the controller shares with the rest of Kubernetes.

Objects are plain dicts as the API server sent them, so every optional field is read with the
value the Go types would give it (``0`` for an absent ``int32``, ``None`` for an absent
pointer). ``spec.replicas`` is always set by the server for both kinds; when a test object
omits it, it reads as ``1``, the API default. Nothing here mutates its argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kcontrol.controller import get_controller_of

__all__ = [
    "CONTROLLER_KIND",
    "DEFAULT_UNIQUE_LABEL_KEY",
    "RECREATE",
    "ROLLING_UPDATE",
    "annotations_of",
    "creation_key",
    "deletion_timestamp",
    "generation",
    "is_controlled_by",
    "is_rolling_update",
    "labels_of",
    "meta",
    "name_of",
    "namespace_of",
    "spec",
    "spec_replicas",
    "status",
    "status_int",
    "strategy_type",
    "template_of",
    "uid_of",
]

DEFAULT_UNIQUE_LABEL_KEY: Final = "pod-template-hash"
"""The label that keeps the ReplicaSets of one Deployment apart (``apps/v1``
``DefaultDeploymentUniqueLabelKey``)."""

CONTROLLER_KIND: Final = ("apps/v1", "Deployment")
"""``(apiVersion, kind)`` written into the controller references of ReplicaSets."""

RECREATE: Final = "Recreate"
ROLLING_UPDATE: Final = "RollingUpdate"


def _mapping(value: object) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one. A dict (decoded JSON always is) is
    recognised before the ``Mapping`` check, which costs several times as much: these
    readers run a few hundred times per sync."""
    if type(value) is dict or isinstance(value, Mapping):
        return value
    return {}


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``metadata``, or an empty mapping."""
    return _mapping(obj.get("metadata"))


def spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``spec``, or an empty mapping."""
    return _mapping(obj.get("spec"))


def status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``status``, or an empty mapping."""
    return _mapping(obj.get("status"))


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "")


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("uid") or "")


def generation(obj: Mapping[str, Any]) -> int:
    return int(meta(obj).get("generation") or 0)


def deletion_timestamp(obj: Mapping[str, Any]) -> str | None:
    value = meta(obj).get("deletionTimestamp")
    return str(value) if value else None


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return _mapping(meta(obj).get("labels"))


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return _mapping(meta(obj).get("annotations"))


def spec_replicas(obj: Mapping[str, Any]) -> int:
    """``spec.replicas`` (``1``, the API default, when absent)."""
    value = spec(obj).get("replicas")
    return 1 if value is None else int(value)


def status_int(obj: Mapping[str, Any], field: str) -> int:
    """An integer field of ``status`` (``0`` when absent)."""
    return int(status(obj).get(field) or 0)


def template_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``spec.template`` (a PodTemplateSpec), or an empty mapping."""
    return _mapping(spec(obj).get("template"))


def strategy_type(deployment: Mapping[str, Any]) -> str:
    strategy = spec(deployment).get("strategy")
    return str((strategy or {}).get("type") or "")


def is_rolling_update(deployment: Mapping[str, Any]) -> bool:
    """Whether the Deployment uses the RollingUpdate strategy (upstream ``IsRollingUpdate``)."""
    return strategy_type(deployment) == ROLLING_UPDATE


def is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """Whether ``obj``'s controller reference names ``owner``'s UID."""
    ref = get_controller_of(obj)
    return ref is not None and ref.get("uid") == uid_of(owner)


def creation_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """Sort key of upstream ``ReplicaSetsByCreationTimestamp``: creation time, then name.

    ``creationTimestamp`` is RFC 3339 in UTC with second precision as the server writes it,
    so its string order is its time order; a missing one sorts first, as Go's zero time.
    """
    return (str(meta(obj).get("creationTimestamp") or ""), name_of(obj))
