"""Building core/v1 Event objects: object references, names, timestamps.

The Events written here are those client-go's ``tools/record`` writes, so ``kubectl describe``
and ``kubectl get events`` show them as they show the events of kube-controller-manager.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcontrol.client import Object, Resource
from kcontrol.clock import Clock

__all__ = [
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "EventNamer",
    "is_valid_event_type",
    "make_event",
    "object_reference",
]

EVENT_TYPE_NORMAL = "Normal"
"""Information: the controller did something (created a pod, scaled a ReplicaSet)."""

EVENT_TYPE_WARNING = "Warning"
"""Something went wrong, or may need a human's attention."""

_EVENT_TYPES = frozenset({EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING})

_REFERENCE_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion")


def is_valid_event_type(event_type: str) -> bool:
    """True for the two types the API knows, ``Normal`` and ``Warning``."""
    return event_type in _EVENT_TYPES


def object_reference(obj: Mapping[str, Any], resource: Resource | None = None) -> dict[str, Any]:
    """A core/v1 ``ObjectReference`` to ``obj``, as an Event's ``involvedObject``.

    ``kind`` and ``apiVersion`` come from the object, or from ``resource`` when given (objects
    inside a LIST answer carry no ``kind``). Empty fields are left out. Raises ``ValueError`` if
    the object has no name or no kind can be found. A mapping without ``metadata`` is taken to
    be a reference already and is copied as is.
    """
    if "metadata" not in obj:
        ref = {k: obj[k] for k in (*_REFERENCE_FIELDS, "fieldPath") if obj.get(k)}
    else:
        meta = obj.get("metadata") or {}
        ref = {
            "kind": obj.get("kind"),
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "apiVersion": obj.get("apiVersion"),
            "resourceVersion": meta.get("resourceVersion"),
        }
        ref = {k: v for k, v in ref.items() if v}
    if resource is not None:
        ref["kind"] = resource.kind
        ref["apiVersion"] = resource.api_version
    if not ref.get("name"):
        raise ValueError("cannot reference an object without a name")
    if not ref.get("kind"):
        raise ValueError(f"cannot reference {ref['name']!r}: the object carries no kind")
    return ref


class EventNamer:
    """Names Events ``<object name>.<hex>`` as client-go does, the hex being the wall time in
    nanoseconds; the suffix is bumped when needed so that no two names from one namer clash,
    even under a fake clock that stands still."""

    __slots__ = ("_clock", "_last")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._last = 0

    def name(self, object_name: str) -> str:
        moment = self._clock.wall()
        nanos = int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000
        nanos = max(nanos, self._last + 1)
        self._last = nanos
        return f"{object_name}.{nanos:x}"


def make_event(
    reference: Mapping[str, Any],
    event_type: str,
    reason: str,
    message: str,
    *,
    name: str,
    timestamp: str,
    component: str,
    host: str | None,
) -> Object:
    """A new core/v1 Event (``count`` 1) about ``reference``, from ``component`` on ``host``.

    Its namespace is the involved object's, or ``default`` for a cluster-scoped object.
    """
    source = {"component": component}
    if host:
        source["host"] = host
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": reference.get("namespace") or "default"},
        "involvedObject": dict(reference),
        "reason": reason,
        "message": message,
        "type": event_type,
        "source": source,
        "firstTimestamp": timestamp,
        "lastTimestamp": timestamp,
        "count": 1,
        "reportingComponent": component,
        "reportingInstance": host or "",
    }
