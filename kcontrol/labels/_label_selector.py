"""Converting a ``metav1.LabelSelector`` (as decoded JSON) into a :class:`Selector`.

Mirrors ``metav1.LabelSelectorAsSelector``, including its easily-missed distinction: a missing
(``None``) selector selects *nothing*, while an empty one (``{}``, or only empty
``matchLabels``/``matchExpressions``) selects *everything*.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from kcontrol.labels._selector import (
    Operator,
    Requirement,
    Selector,
    SelectorError,
    everything,
    nothing,
)

__all__ = ["selector_from_label_selector"]

_OPERATORS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def selector_from_label_selector(label_selector: Mapping[str, Any] | None) -> Selector:
    """The selector a ``metav1.LabelSelector`` describes.

    ``matchLabels`` entries become ``key=value`` requirements; each ``matchExpressions`` entry
    (``key``, ``operator`` one of In/NotIn/Exists/DoesNotExist, ``values``) becomes one
    requirement, so In/NotIn need values and Exists/DoesNotExist must have none. Raises
    :class:`SelectorError` for an unknown operator, a missing key, or an invalid key or value.

    Selectors are immutable, so equal label selectors share one: the last
    :data:`MEMO_SIZE` built are remembered by value (controllers convert the same few
    selectors on every sync, and validating their keys and values is most of the cost).
    """
    if label_selector is None:
        return nothing()
    if not isinstance(label_selector, Mapping):
        raise SelectorError(f"a label selector must be a mapping, not {label_selector!r}")
    match_labels = label_selector.get("matchLabels") or {}
    expressions = label_selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping):
        raise SelectorError(f"matchLabels must be a mapping, not {match_labels!r}")
    if not isinstance(expressions, list | tuple):
        raise SelectorError(f"matchExpressions must be a list, not {expressions!r}")
    if not match_labels and not expressions:
        return everything()
    key = (tuple(match_labels.items()), tuple(_expression(e) for e in expressions))
    try:
        return _selector_of(key)
    except TypeError:  # an unhashable value: malformed, and Requirement says how
        return _build(key)


MEMO_SIZE = 4096
"""Distinct label selectors :func:`selector_from_label_selector` remembers."""

_Expression = tuple[str, Operator, tuple[Any, ...]]
_Key = tuple[tuple[tuple[Any, Any], ...], tuple[_Expression, ...]]


def _build(key: _Key) -> Selector:
    match_labels, expressions = key
    requirements = [Requirement(k, Operator.EQUALS, (v,)) for k, v in match_labels]
    requirements.extend(Requirement(k, op, values) for k, op, values in expressions)
    return Selector(requirements)


_selector_of = functools.lru_cache(maxsize=MEMO_SIZE)(_build)


def _expression(expression: object) -> _Expression:
    if not isinstance(expression, Mapping):
        raise SelectorError(f"a matchExpressions entry must be a mapping, not {expression!r}")
    key = expression.get("key")
    if not isinstance(key, str):
        raise SelectorError(f"a matchExpressions entry needs a string key: {dict(expression)!r}")
    operator = _OPERATORS.get(expression.get("operator"))  # type: ignore[arg-type]
    if operator is None:
        raise SelectorError(
            f"{expression.get('operator')!r} is not a valid label selector operator"
        )
    values = expression.get("values") or ()
    if isinstance(values, str) or not isinstance(values, list | tuple):
        raise SelectorError(f"values of {key!r} must be a list of strings, not {values!r}")
    return key, operator, tuple(values)
