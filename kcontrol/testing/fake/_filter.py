"""Which objects a LIST or WATCH request selects: namespace, label selector, field selector.

Field selectors are the simple server-side kind: ``path=value``, ``path==value`` and
``path!=value`` terms joined by commas (no ``\\`` escapes). Like the real server, only
supported field labels are accepted: ``metadata.name`` and ``metadata.namespace`` for every
resource, plus the per-resource ones in :data:`FIELD_LABELS`; any other is a 400. An absent
field reads as ``""``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kcontrol.client import (
    EVENTS,
    NAMESPACES,
    PODS,
    REPLICASETS,
    SECRETS,
    ListOptions,
    Object,
    Resource,
    ShardSelector,
)
from kcontrol.errors import BadRequest
from kcontrol.labels import Selector, SelectorError, everything, parse

__all__ = ["FIELD_LABELS", "FieldRequirement", "ObjectFilter", "parse_field_selector"]

_EVERYTHING: Final = everything()
_COMMON_FIELD_LABELS: Final = frozenset({"metadata.name", "metadata.namespace"})

FIELD_LABELS: Final[Mapping[Resource, frozenset[str]]] = {
    PODS: frozenset(
        {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        }
    ),
    EVENTS: frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "type",
        }
    ),
    SECRETS: frozenset({"type"}),
    NAMESPACES: frozenset({"status.phase"}),
    REPLICASETS: frozenset({"status.replicas"}),
}
"""Field labels beyond ``metadata.name``/``metadata.namespace``, per built-in resource."""


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """``path`` (dotted) must (``equal``) or must not equal ``value``."""

    path: tuple[str, ...]
    value: str
    equal: bool

    def matches(self, obj: Object) -> bool:
        node: Any = obj
        for part in self.path:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            actual = ""
        elif isinstance(node, bool):
            actual = "true" if node else "false"
        else:
            actual = str(node)
        return (actual == self.value) is self.equal


def parse_field_selector(text: str | None, resource: Resource) -> tuple[FieldRequirement, ...]:
    """The requirements of a field selector; raises BadRequest for a malformed term or a
    field label ``resource`` does not support."""
    if not text or not text.strip():
        return ()
    supported = _COMMON_FIELD_LABELS | FIELD_LABELS.get(resource, frozenset())
    requirements = []
    for term in text.split(","):
        field, value, equal = _split_term(term)
        if field not in supported:
            raise BadRequest(f'field label not supported: "{field}"')
        requirements.append(FieldRequirement(tuple(field.split(".")), value, equal))
    return tuple(requirements)


def _split_term(term: str) -> tuple[str, str, bool]:
    for operator, equal in (("!=", False), ("==", True), ("=", True)):
        field, found, value = term.partition(operator)
        if found:
            return field.strip(), value.strip(), equal
    raise BadRequest(f"invalid field selector term {term!r}: expected key=value")


@dataclass(frozen=True, slots=True)
class ObjectFilter:
    """The selection of one LIST or WATCH: ``namespace`` ``None`` means all namespaces."""

    namespace: str | None = None
    labels: Selector = _EVERYTHING
    fields: tuple[FieldRequirement, ...] = ()
    shard: ShardSelector | None = None

    @classmethod
    def build(
        cls,
        resource: Resource,
        namespace: str | None,
        options: ListOptions,
    ) -> ObjectFilter:
        """The filter of a request's namespace and selectors; invalid selectors are a
        BadRequest."""
        try:
            labels = parse(options.label_selector or "")
        except SelectorError as err:
            raise BadRequest(f"unable to parse labelSelector: {err}") from None
        shard = None
        if options.shard_selector:
            try:
                shard = ShardSelector.parse(options.shard_selector)
            except ValueError as err:
                raise BadRequest(f"invalid shardSelector: {err}") from None
        return cls(
            namespace if resource.namespaced and namespace else None,
            labels,
            parse_field_selector(options.field_selector, resource),
            shard,
        )

    def matches(self, obj: Object) -> bool:
        metadata = obj.get("metadata") or {}
        if self.namespace is not None and metadata.get("namespace") != self.namespace:
            return False
        if not self.labels.matches(metadata.get("labels")):
            return False
        if self.shard is not None and not self.shard.matches(obj):
            return False
        return all(f.matches(obj) for f in self.fields)
