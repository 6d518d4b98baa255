"""Reading a StatefulSet's and a pod's fields from their dicts.

Fields the API server defaults are read with that default when a dict lacks them (every
StatefulSet the server sends has them, but a hand-made one in a test may not):
``spec.replicas`` is 1, ``spec.updateStrategy.type`` is ``RollingUpdate``,
``spec.podManagementPolicy`` is ``OrderedReady``, ``spec.minReadySeconds`` and
``spec.ordinals.start`` are 0. A missing string is ``""`` and a missing count 0, Go's zero
values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._names import ORDERED_READY, ROLLING_UPDATE

__all__ = [
    "labels",
    "meta",
    "name",
    "namespace",
    "pod_management_policy",
    "spec",
    "spec_replicas",
    "status",
    "status_int",
    "uid",
    "update_strategy",
    "update_strategy_type",
]


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj["metadata"]``, or an empty mapping."""
    return obj.get("metadata") or {}


def spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj["spec"]``, or an empty mapping."""
    return obj.get("spec") or {}


def status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj["status"]``, or an empty mapping."""
    return obj.get("status") or {}


def name(obj: Mapping[str, Any]) -> str:
    """``metadata.name``, ``""`` when absent."""
    return str(meta(obj).get("name") or "")


def namespace(obj: Mapping[str, Any]) -> str:
    """``metadata.namespace``, ``""`` when absent."""
    return str(meta(obj).get("namespace") or "")


def uid(obj: Mapping[str, Any]) -> str:
    """``metadata.uid``, ``""`` when absent (an object not created yet)."""
    return str(meta(obj).get("uid") or "")


def labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """``metadata.labels``, or an empty mapping."""
    return meta(obj).get("labels") or {}


def spec_replicas(set_: Mapping[str, Any]) -> int:
    """``spec.replicas``; 1, the API default, when absent."""
    replicas = spec(set_).get("replicas")
    return 1 if replicas is None else int(replicas)


def update_strategy(set_: Mapping[str, Any]) -> Mapping[str, Any]:
    """``spec.updateStrategy``, or an empty mapping."""
    return spec(set_).get("updateStrategy") or {}


def update_strategy_type(set_: Mapping[str, Any]) -> str:
    """``spec.updateStrategy.type``; ``RollingUpdate``, the API default, when absent."""
    return str(update_strategy(set_).get("type") or ROLLING_UPDATE)


def pod_management_policy(set_: Mapping[str, Any]) -> str:
    """``spec.podManagementPolicy``; ``OrderedReady``, the API default, when absent."""
    return str(spec(set_).get("podManagementPolicy") or ORDERED_READY)


def status_int(obj: Mapping[str, Any], field: str) -> int:
    """A count in ``status``; 0 when absent, as Go's omitted ``int32``."""
    value = status(obj).get(field)
    return 0 if value is None else int(value)
