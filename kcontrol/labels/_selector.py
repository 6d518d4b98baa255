"""Label selectors: requirements ANDed together, matched against an object's labels.

Mirrors apimachinery's ``pkg/labels``: a :class:`Requirement` is a key, an :class:`Operator`
and a set of values, validated on construction (``NewRequirement``); a :class:`Selector` is an
immutable conjunction of requirements kept sorted by key, so its string form is canonical.

Two selectors are special and must not be confused: :func:`everything` (no requirements,
matches every label set) and :func:`nothing` (matches none). A nil ``metav1.LabelSelector``
converts to the latter, an empty one to the former. Like upstream, ``str(nothing())`` is
``""`` - the same string as :func:`everything` - so check :meth:`Selector.selects_nothing`
before turning a selector into a ``labelSelector`` query parameter.

Matching is on the hot path (listers run it for every cached object), so a selector compiles
its requirements once: exact-match requirements become one ``dict`` whose items view is tested
as a subset of the labels' items in C, and the rest become a tuple of small checks.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NoReturn

from kcontrol.errors import SelectorError
from kcontrol.labels._validation import label_key_errors, label_value_errors

__all__ = [
    "Operator",
    "Requirement",
    "Selector",
    "SelectorError",
    "everything",
    "nothing",
    "selector_from_set",
]


class Operator(enum.StrEnum):
    """A requirement's operator, valued as in apimachinery's ``selection`` package."""

    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_OPERATORS: Mapping[object, Operator] = {op.value: op for op in Operator}
_EXACT = frozenset({Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS})
_SET = frozenset({Operator.IN, Operator.NOT_IN})
_UNARY = frozenset({Operator.EXISTS, Operator.DOES_NOT_EXIST})
_NUMERIC = frozenset({Operator.GREATER_THAN, Operator.LESS_THAN})

_INT64 = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def parse_int64(text: str) -> int | None:
    """``text`` as Go's ``strconv.ParseInt(text, 10, 64)`` reads it, or ``None``."""
    if not _INT64.fullmatch(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One condition on one label key.

    Construction validates like ``NewRequirement``: the key must be a qualified name and every
    value a valid label value; ``in``/``notin`` need at least one value, ``=``/``==``/``!=``
    and ``gt``/``lt`` exactly one (an integer for the latter), ``exists`` and ``!`` none.
    ``values`` is normalised to a sorted tuple without duplicates. Raises
    :class:`SelectorError` listing every problem.

    Semantics: ``in``/``=``/``==`` need the key present with one of the values; ``notin``/``!=``
    match when the key is absent or has another value; ``gt``/``lt`` need the key present with
    an integer value compared against the requirement's.
    """

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.key, str):
            _fail(f"a requirement's key must be a string, not {self.key!r}")
        operator = _OPERATORS.get(self.operator)
        if operator is None:
            allowed = ", ".join(repr(op.value) for op in Operator)
            _fail(f"{self.key}: unsupported operator {self.operator!r}: supported: {allowed}")
        values = self.values
        if isinstance(values, str) or not all(isinstance(v, str) for v in values):
            _fail(f"{self.key}: values must be a sequence of strings, not {values!r}")
        errors = [f"key {self.key!r}: {e}" for e in label_key_errors(self.key)]
        if operator in _SET and not values:
            errors.append("for 'in', 'notin' operators, values set can't be empty")
        elif operator in _EXACT and len(values) != 1:
            errors.append("exact-match compatibility requires one single value")
        elif operator in _UNARY and values:
            errors.append("values set must be empty for exists and does not exist")
        elif operator in _NUMERIC:
            if len(values) != 1:
                errors.append("for 'gt', 'lt' operators, exactly one value is required")
            errors.extend(
                f"value {v!r}: for 'gt', 'lt' operators, the value must be an integer"
                for v in values
                if parse_int64(v) is None
            )
        errors.extend(f"value {v!r}: {e}" for v in values for e in label_value_errors(v))
        if errors:
            _fail(f"invalid requirement on {self.key!r}: " + "; ".join(errors))
        object.__setattr__(self, "operator", operator)
        object.__setattr__(self, "values", tuple(sorted(set(values))))

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether ``labels`` satisfy this one requirement (a reference implementation;
        :meth:`Selector.matches` is the fast path)."""
        labels = labels or {}
        present = self.key in labels
        op = self.operator
        if op in (Operator.IN, Operator.EQUALS, Operator.DOUBLE_EQUALS):
            return present and labels[self.key] in self.values
        if op in (Operator.NOT_IN, Operator.NOT_EQUALS):
            return not present or labels[self.key] not in self.values
        if op is Operator.EXISTS:
            return present
        if op is Operator.DOES_NOT_EXIST:
            return not present
        if not present:
            return False
        actual, bound = parse_int64(labels[self.key]), parse_int64(self.values[0])
        if actual is None or bound is None:
            return False
        return actual > bound if op is Operator.GREATER_THAN else actual < bound

    def __str__(self) -> str:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key
        if op is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        joined = ",".join(self.values)
        if op in _SET:
            return f"{self.key} {op.value} ({joined})"
        symbol = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}.get(op, op.value)
        return f"{self.key}{symbol}{joined}"


def _fail(message: str) -> NoReturn:
    raise SelectorError(message)


# Compiled check kinds for Selector.matches; ints compare fastest in the loop.
_CHECK_IN: Final = 0
_CHECK_NOT_IN: Final = 1
_CHECK_EXISTS: Final = 2
_CHECK_ABSENT: Final = 3
_CHECK_GT: Final = 4
_CHECK_LT: Final = 5

_MISSING: Final[Any] = object()
_NO_LABELS: Mapping[str, str] = {}

_Check = tuple[int, str, Any]


def _sort_key(requirement: Requirement) -> tuple[str, str, tuple[str, ...]]:
    return requirement.key, requirement.operator.value, requirement.values


class Selector:
    """An immutable conjunction of :class:`Requirement`s, sorted by key.

    ``Selector()`` (or :func:`everything`) has no requirements and matches every label set.
    Selectors compare equal when their requirements are equal, and are hashable. ``str()``
    gives the canonical string form accepted by :func:`~kcontrol.labels.parse`; requirements
    sharing a key are ordered by operator then values, so the form does not depend on input
    order.
    """

    __slots__ = ("_checks", "_equals", "_requirements")

    _requirements: tuple[Requirement, ...]
    # Invariant: _equals holds one value per key, from the single-valued '=', '==' and 'in'
    # requirements; a second such requirement on the same key goes to _checks instead.
    _equals: Any  # the items view of a dict[str, str]
    _checks: tuple[_Check, ...]

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        reqs = tuple(sorted(requirements, key=_sort_key))
        equals: dict[str, str] = {}
        checks: list[_Check] = []
        for req in reqs:
            op, key, values = req.operator, req.key, req.values
            if op in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN):
                if len(values) == 1 and key not in equals:
                    equals[key] = values[0]
                else:
                    checks.append((_CHECK_IN, key, frozenset(values)))
            elif op in (Operator.NOT_EQUALS, Operator.NOT_IN):
                checks.append((_CHECK_NOT_IN, key, frozenset(values)))
            elif op is Operator.EXISTS:
                checks.append((_CHECK_EXISTS, key, None))
            elif op is Operator.DOES_NOT_EXIST:
                checks.append((_CHECK_ABSENT, key, None))
            else:
                kind = _CHECK_GT if op is Operator.GREATER_THAN else _CHECK_LT
                checks.append((kind, key, parse_int64(values[0])))
        object.__setattr__(self, "_requirements", reqs)
        object.__setattr__(self, "_equals", equals.items() if equals else None)
        object.__setattr__(self, "_checks", tuple(checks))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        """The requirements, sorted by key."""
        return self._requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether ``labels`` (``None`` meaning no labels) satisfy every requirement."""
        if labels is None:
            labels = _NO_LABELS
        equals = self._equals
        if equals is not None and not equals <= labels.items():
            return False
        if not self._checks:
            return True
        get = labels.get
        for kind, key, arg in self._checks:
            value = get(key, _MISSING)
            if kind == _CHECK_IN:
                if value not in arg:
                    return False
            elif kind == _CHECK_NOT_IN:
                if value in arg:
                    return False
            elif kind == _CHECK_EXISTS:
                if value is _MISSING:
                    return False
            elif kind == _CHECK_ABSENT:
                if value is not _MISSING:
                    return False
            else:
                number = None if value is _MISSING else parse_int64(value)
                if number is None or not (number > arg if kind == _CHECK_GT else number < arg):
                    return False
        return True

    def empty(self) -> bool:
        """True when the selector does not restrict anything (it is :func:`everything`)."""
        return not self._requirements

    def selects_nothing(self) -> bool:
        """True only for :func:`nothing`, the selector no label set matches."""
        return False

    def add(self, *requirements: Requirement) -> Selector:
        """A new selector with ``requirements`` added to these."""
        return Selector(self._requirements + requirements)

    def requires_exact_match(self, key: str) -> str | None:
        """The single value the selector requires ``key`` to have, if it requires one.

        Like upstream, only the first requirement on ``key`` is considered, and it counts only
        if it is ``=``, ``==`` or an ``in`` with one value.
        """
        for req in self._requirements:
            if req.key == key:
                exact = req.operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN)
                return req.values[0] if exact and len(req.values) == 1 else None
        return None

    def __str__(self) -> str:
        return ",".join(str(req) for req in self._requirements)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Selector):
            return NotImplemented
        return type(self) is type(other) and self._requirements == other._requirements

    def __hash__(self) -> int:
        return hash((type(self), self._requirements))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Selector, (self._requirements,))


class _NothingSelector(Selector):
    """The selector that matches no label set (upstream's ``nothingSelector``)."""

    __slots__ = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return False

    def empty(self) -> bool:
        return False

    def selects_nothing(self) -> bool:
        return True

    def add(self, *requirements: Requirement) -> Selector:
        return self

    def requires_exact_match(self, key: str) -> str | None:
        return None

    def __repr__(self) -> str:
        return "nothing()"

    def __reduce__(self) -> tuple[Any, ...]:
        return (nothing, ())


_EVERYTHING = Selector()
_NOTHING = _NothingSelector()


def everything() -> Selector:
    """The selector that matches every label set (no requirements)."""
    return _EVERYTHING


def nothing() -> Selector:
    """The selector that matches no label set. Its ``str()`` is ``""``, as upstream; see
    :meth:`Selector.selects_nothing`."""
    return _NOTHING


def selector_from_set(labels: Mapping[str, str] | None, *, validate: bool = True) -> Selector:
    """The selector requiring exactly these ``key=value`` pairs (``labels.SelectorFromSet``).

    ``None`` or an empty mapping gives :func:`everything`. Keys and values are validated unless
    ``validate`` is false (upstream's ``SelectorFromValidatedSet``, for sets already known to
    be valid, e.g. labels read from a stored object).
    """
    if not labels:
        return _EVERYTHING
    if validate:
        return Selector(Requirement(k, Operator.EQUALS, (v,)) for k, v in labels.items())
    return Selector(_unchecked(k, Operator.EQUALS, (v,)) for k, v in labels.items())


def _unchecked(key: str, operator: Operator, values: Sequence[str]) -> Requirement:
    """A Requirement built without validation; the caller vouches for the input."""
    req = object.__new__(Requirement)
    object.__setattr__(req, "key", key)
    object.__setattr__(req, "operator", operator)
    object.__setattr__(req, "values", tuple(values))
    return req
