"""Node selectors and required node affinity: whether a pod may be placed on a node.

A port of component-helpers ``scheduling/corev1/nodeaffinity`` (``NodeSelector``,
``LazyErrorNodeSelector``, ``RequiredNodeAffinity``) and of ``MatchNodeSelectorTerms``, as of
Kubernetes 1.36.

A ``v1.NodeSelector`` is a list of terms, ORed; each term ANDs its ``matchExpressions`` (on
the node's labels: ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``) and its
``matchFields`` (on the node's fields - only ``metadata.name`` exists - with ``In`` or
``NotIn`` and exactly one value). Rules that are easy to get wrong, all upstream's:

- a term with neither expressions nor fields matches no node, and so does a selector with no
  terms;
- a node without a name has no fields, and a term's ``matchFields`` are then not checked;
- a field the node does not have reads as ``""``;
- a term that does not parse (an unknown operator, an invalid key or value, ``In`` on a field
  with two values) matches no node, but the other terms still count. Parsing is lazy, as
  ``LazyErrorNodeSelector``: a :class:`NodeSelector` is always built, and its
  :attr:`~NodeSelector.errors` say what did not parse (upstream reports them only when no term
  matched; :meth:`NodeSelector.validate` raises them, as ``NewNodeSelector`` does).

A pod's required node affinity (:class:`RequiredNodeAffinity`) is its ``spec.nodeSelector``
(every label must be present with that value; not validated, as ``labels.SelectorFromSet``)
AND its ``requiredDuringSchedulingIgnoredDuringExecution`` node selector, when it has one.

Nothing here modifies its arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kcontrol.errors import SelectorError
from kcontrol.labels import Operator, Requirement, Selector, selector_from_set

__all__ = [
    "NODE_NAME_FIELD",
    "NodeSelector",
    "RequiredNodeAffinity",
    "match_node_selector_terms",
]

NODE_NAME_FIELD: Final = "metadata.name"
"""The one node field ``matchFields`` can select on (``metav1.ObjectNameField``)."""

_LABEL_OPERATORS: Final[Mapping[str, Operator]] = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
    "Gt": Operator.GREATER_THAN,
    "Lt": Operator.LESS_THAN,
}
_FIELD_OPERATORS: Final = ("In", "NotIn")


def _supported(values: Sequence[str]) -> str:
    return ", ".join(f'"{value}"' for value in values)


def _node_labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def _node_fields(node: Mapping[str, Any]) -> Mapping[str, str]:
    name = (node.get("metadata") or {}).get("name")
    return {NODE_NAME_FIELD: name} if name else {}


@dataclass(frozen=True, slots=True)
class _FieldRequirement:
    """``key`` must (``equal``) or must not equal ``value``; a missing field is ``""``."""

    key: str
    value: str
    equal: bool

    def matches(self, fields: Mapping[str, str]) -> bool:
        return (fields.get(self.key, "") == self.value) is self.equal


@dataclass(frozen=True, slots=True)
class _Term:
    """One parsed ``v1.NodeSelectorTerm``. ``labels`` / ``fields`` are ``None`` when the term
    has no expressions / no fields; a term with ``errors`` matches nothing."""

    labels: Selector | None
    fields: tuple[_FieldRequirement, ...] | None
    errors: tuple[str, ...]

    def matches(self, labels: Mapping[str, str], fields: Mapping[str, str]) -> bool:
        if self.errors:
            return False
        if self.labels is not None and not self.labels.matches(labels):
            return False
        return self.fields is None or not fields or all(r.matches(fields) for r in self.fields)


def _parse_expressions(
    expressions: Sequence[Mapping[str, Any]], path: str
) -> tuple[Selector | None, list[str]]:
    requirements: list[Requirement] = []
    errors: list[str] = []
    for index, expression in enumerate(expressions):
        where = f"{path}[{index}]"
        operator = _LABEL_OPERATORS.get(expression.get("operator") or "")
        if operator is None:
            errors.append(
                f'{where}.operator: Unsupported value: "{expression.get("operator") or ""}": '
                f"supported values: {_supported(list(_LABEL_OPERATORS))}"
            )
            continue
        try:
            requirements.append(
                Requirement(
                    expression.get("key") or "", operator, tuple(expression.get("values") or ())
                )
            )
        except SelectorError as error:
            errors.append(f"{where}: {error}")
    return (None if errors else Selector(requirements)), errors


def _parse_fields(
    expressions: Sequence[Mapping[str, Any]], path: str
) -> tuple[tuple[_FieldRequirement, ...] | None, list[str]]:
    requirements: list[_FieldRequirement] = []
    errors: list[str] = []
    for index, expression in enumerate(expressions):
        where = f"{path}[{index}]"
        operator = expression.get("operator") or ""
        values = list(expression.get("values") or ())
        if operator not in _FIELD_OPERATORS:
            errors.append(
                f'{where}.operator: Unsupported value: "{operator}": '
                f"supported values: {_supported(_FIELD_OPERATORS)}"
            )
        elif len(values) != 1:
            errors.append(f"{where}.values: Invalid value: {values}: must have one element")
        else:
            requirements.append(
                _FieldRequirement(expression.get("key") or "", values[0], operator == "In")
            )
    return (None if errors else tuple(requirements)), errors


def _parse_term(term: Mapping[str, Any], path: str) -> _Term:
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    labels: Selector | None = None
    field_requirements: tuple[_FieldRequirement, ...] | None = None
    errors: list[str] = []
    if expressions:
        labels, label_errors = _parse_expressions(expressions, f"{path}.matchExpressions")
        errors.extend(label_errors)
    if fields:
        field_requirements, field_errors = _parse_fields(fields, f"{path}.matchFields")
        errors.extend(field_errors)
    return _Term(labels, field_requirements, tuple(errors))


class NodeSelector:
    """A parsed ``v1.NodeSelector`` (a dict, or ``None`` for one without terms).

    Building one never raises: a term that does not parse matches no node and its problems
    go to :attr:`errors`. :meth:`match` is upstream's ``Match`` with those errors ignored, as
    every caller of it in kube-controller-manager does.
    """

    __slots__ = ("_terms", "errors")

    _terms: tuple[_Term, ...]
    errors: tuple[str, ...]
    """Every term's parse problems, in term order, each prefixed with its field path
    (``nodeSelectorTerms[0].matchFields[0].values: ...``); empty when all terms parse."""

    def __init__(self, node_selector: Mapping[str, Any] | None) -> None:
        terms: list[_Term] = []
        for index, term in enumerate((node_selector or {}).get("nodeSelectorTerms") or ()):
            if not term.get("matchExpressions") and not term.get("matchFields"):
                continue  # an empty term selects no node: nothing to parse
            terms.append(_parse_term(term, f"nodeSelectorTerms[{index}]"))
        self._terms = tuple(terms)
        self.errors = tuple(error for term in self._terms for error in term.errors)

    def validate(self) -> None:
        """Raise :class:`~kcontrol.errors.SelectorError` listing :attr:`errors`, if any (what
        upstream's strict ``NewNodeSelector`` refuses)."""
        if self.errors:
            raise SelectorError("; ".join(self.errors))

    def match(self, node: Mapping[str, Any] | None) -> bool:
        """Whether some term matches ``node``'s labels and fields; ``False`` for ``None``."""
        if node is None:
            return False
        labels, fields = _node_labels(node), _node_fields(node)
        return any(term.matches(labels, fields) for term in self._terms)


def match_node_selector_terms(
    node: Mapping[str, Any] | None, node_selector: Mapping[str, Any] | None
) -> bool:
    """Whether ``node`` matches one of ``node_selector``'s terms (upstream
    ``MatchNodeSelectorTerms``, its error dropped)."""
    return NodeSelector(node_selector).match(node)


class RequiredNodeAffinity:
    """What a pod requires of its node: its ``spec.nodeSelector`` and its required node
    affinity, both (upstream ``GetRequiredNodeAffinity``). Parsed once, matched against any
    number of nodes."""

    __slots__ = ("_labels", "_node_selector")

    _labels: Selector | None
    _node_selector: NodeSelector | None

    def __init__(self, pod: Mapping[str, Any]) -> None:
        spec = pod.get("spec") or {}
        node_selector = spec.get("nodeSelector")
        self._labels = selector_from_set(node_selector, validate=False) if node_selector else None
        node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
        required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        self._node_selector = None if required is None else NodeSelector(required)

    @property
    def errors(self) -> tuple[str, ...]:
        """The parse problems of the required node affinity (see :attr:`NodeSelector.errors`)."""
        return () if self._node_selector is None else self._node_selector.errors

    def match(self, node: Mapping[str, Any]) -> bool:
        """Whether ``node`` has every ``nodeSelector`` label and matches the required node
        affinity (a pod with neither matches every node)."""
        if self._labels is not None and not self._labels.matches(_node_labels(node)):
            return False
        return self._node_selector is None or self._node_selector.match(node)
