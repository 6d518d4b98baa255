"""labels.parse: the string syntax, its canonical form, and its errors."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kcontrol.labels
from kcontrol.labels import (
    Operator,
    Requirement,
    Selector,
    SelectorError,
    everything,
    parse,
)


def test_public_surface() -> None:
    assert sorted(kcontrol.labels.__all__) == [
        "Operator",
        "Requirement",
        "Selector",
        "SelectorError",
        "everything",
        "nothing",
        "parse",
        "selector_from_label_selector",
        "selector_from_set",
    ]


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param("", "", id="empty"),
        pytest.param("   \t\n", "", id="only-whitespace"),
        pytest.param("a=b", "a=b", id="equals"),
        pytest.param("a==b", "a==b", id="double-equals"),
        pytest.param("a!=b", "a!=b", id="not-equals"),
        pytest.param("a", "a", id="exists"),
        pytest.param("!a", "!a", id="does-not-exist"),
        pytest.param("a in (x)", "a in (x)", id="in-one"),
        pytest.param("a in (z,x,y)", "a in (x,y,z)", id="in-values-sorted"),
        pytest.param("a in (x,x)", "a in (x)", id="in-values-deduplicated"),
        pytest.param("a notin (y,x)", "a notin (x,y)", id="notin"),
        pytest.param("a>1", "a>1", id="greater-than"),
        pytest.param("a<10", "a<10", id="less-than"),
        pytest.param("a=", "a=", id="empty-value"),
        pytest.param("a in ()", "a in ()", id="in-empty-parens"),
        pytest.param("a in (,)", "a in ()", id="in-only-comma"),
        pytest.param("x in (foo,,baz)", "x in (,baz,foo)", id="in-inner-empty-value"),
        pytest.param("x in (foo,)", "x in (,foo)", id="in-trailing-comma"),
        pytest.param("x in (,foo)", "x in (,foo)", id="in-leading-comma"),
        pytest.param(
            "a=b,c!=d,e in (f,g),!h,i,j notin (k)",
            "a=b,c!=d,e in (f,g),!h,i,j notin (k)",
            id="brief-example",
        ),
        pytest.param("z=1,a=2,m", "a=2,m,z=1", id="sorted-by-key"),
        pytest.param("  a = b , c  in ( x , y )  ", "a=b,c in (x,y)", id="whitespace"),
        pytest.param("in in (in),notin notin (notin)", "in in (in),notin notin (notin)", id="kw"),
        pytest.param("a=in", "a=in", id="keyword-as-value"),
        pytest.param("example.com/app=web", "example.com/app=web", id="prefixed-key"),
        pytest.param("a.B_c-9=X.y_z-0", "a.B_c-9=X.y_z-0", id="all-name-characters"),
        pytest.param("a=1,a!=2", "a!=2,a=1", id="same-key-by-operator"),
    ],
)
def test_parse_canonical(text: str, canonical: str) -> None:
    selector = parse(text)
    assert str(selector) == canonical
    assert parse(str(selector)) == selector


@pytest.mark.parametrize(
    ("text", "requirements"),
    [
        pytest.param("a=b", [("a", Operator.EQUALS, ("b",))], id="equals"),
        pytest.param("!a", [("a", Operator.DOES_NOT_EXIST, ())], id="not-exists"),
        pytest.param("a", [("a", Operator.EXISTS, ())], id="exists"),
        pytest.param("a in ()", [("a", Operator.IN, ("",))], id="empty-set-is-empty-value"),
        pytest.param(
            "b notin (x),a>3",
            [("a", Operator.GREATER_THAN, ("3",)), ("b", Operator.NOT_IN, ("x",))],
            id="two-sorted",
        ),
    ],
)
def test_parse_requirements(
    text: str, requirements: list[tuple[str, Operator, tuple[str, ...]]]
) -> None:
    assert [(r.key, r.operator, r.values) for r in parse(text).requirements] == requirements


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("a=b=c", "expected: ',' or end of string", id="two-equals"),
        pytest.param("!a=b", "found '='", id="negated-with-value"),
        pytest.param("a in b", "expected: '('", id="in-without-parens"),
        pytest.param("a in (b", "expected: ',' or ')'", id="unclosed-paren"),
        pytest.param("a in (b c)", "found 'c'", id="missing-comma-in-set"),
        pytest.param("a in (=)", "found '='", id="operator-in-set"),
        pytest.param("a,", "identifier after ','", id="trailing-comma"),
        pytest.param(",a", "expected: !, identifier", id="leading-comma"),
        pytest.param("a,,b", "identifier after ','", id="double-comma"),
        pytest.param("a b", "expected: in, notin", id="missing-operator"),
        pytest.param("a = = b", "expected: identifier", id="operator-as-value"),
        pytest.param("!", "expected: identifier", id="bare-not"),
        pytest.param("(", "found '('", id="bare-paren"),
        pytest.param("a>x", "must be an integer", id="gt-not-integer"),
        pytest.param("a<", "must be an integer", id="lt-empty"),
        pytest.param("A/b=c", "prefix part", id="uppercase-prefix"),
        pytest.param("/b", "prefix part must be non-empty", id="empty-prefix"),
        pytest.param("a/", "name part must be non-empty", id="empty-name"),
        pytest.param("a/b/c", "qualified name", id="two-slashes"),
        pytest.param("-a", "name part must consist", id="key-starts-with-dash"),
        pytest.param("a" * 64, "no more than 63", id="key-too-long"),
        pytest.param("a" * 254 + "/b", "no more than 253", id="prefix-too-long"),
        pytest.param("a=" + "b" * 64, "no more than 63", id="value-too-long"),
        pytest.param("a=b-", "a valid label", id="value-ends-with-dash"),
        pytest.param("a=b c", "found 'c'", id="space-in-value"),
        pytest.param("a=é", "a valid label", id="non-ascii-value"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorError, match=re.escape(message)):
        parse(text)


def test_selector_error_is_value_error() -> None:
    with pytest.raises(ValueError):
        parse("a=b=c")


def test_parse_rejects_non_string() -> None:
    with pytest.raises(SelectorError):
        parse(None)  # type: ignore[arg-type]


def test_parse_empty_is_everything() -> None:
    assert parse("") is everything()
    assert parse("").empty()


@pytest.mark.parametrize(
    ("key", "operator", "values", "message"),
    [
        pytest.param("a", Operator.IN, (), "can't be empty", id="in-no-values"),
        pytest.param("a", Operator.NOT_IN, (), "can't be empty", id="notin-no-values"),
        pytest.param("a", Operator.EQUALS, ("x", "y"), "one single value", id="equals-two"),
        pytest.param("a", Operator.NOT_EQUALS, (), "one single value", id="not-equals-none"),
        pytest.param("a", Operator.EXISTS, ("x",), "must be empty", id="exists-with-value"),
        pytest.param("a", Operator.DOES_NOT_EXIST, ("x",), "must be empty", id="dne-with-value"),
        pytest.param("a", Operator.GREATER_THAN, ("1", "2"), "exactly one", id="gt-two"),
        pytest.param("a", Operator.LESS_THAN, ("9" * 20,), "integer", id="lt-overflows-int64"),
        pytest.param("a", "like", (), "unsupported operator", id="unknown-operator"),
        pytest.param("a", Operator.IN, "xy", "sequence of strings", id="values-is-a-string"),
        pytest.param("a", Operator.IN, (1,), "sequence of strings", id="values-not-strings"),
        pytest.param("", Operator.EXISTS, (), "non-empty", id="empty-key"),
    ],
)
def test_requirement_validation(key: str, operator: Operator, values: object, message: str) -> None:
    with pytest.raises(SelectorError, match=message):
        Requirement(key, operator, values)  # type: ignore[arg-type]


def test_requirement_accepts_operator_strings() -> None:
    req = Requirement("a", "notin", ["y", "x"])  # type: ignore[arg-type]
    assert req.operator is Operator.NOT_IN
    assert req.values == ("x", "y")
    assert str(req) == "a notin (x,y)"


def test_selector_is_immutable_and_hashable() -> None:
    selector = parse("a=b")
    with pytest.raises(AttributeError):
        selector._checks = ()
    assert {parse("a=b,c"), parse("c,a=b")} == {selector.add(Requirement("c", Operator.EXISTS))}


def test_add_returns_new_sorted_selector() -> None:
    base = parse("b=1")
    added = base.add(Requirement("a", Operator.EXISTS))
    assert str(base) == "b=1"
    assert str(added) == "a,b=1"


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        pytest.param("a=x", "a", "x", id="equals"),
        pytest.param("a==x", "a", "x", id="double-equals"),
        pytest.param("a in (x)", "a", "x", id="in-one"),
        pytest.param("a in (x,y)", "a", None, id="in-two"),
        pytest.param("a!=x", "a", None, id="not-equals"),
        pytest.param("a=x", "b", None, id="other-key"),
    ],
)
def test_requires_exact_match(text: str, key: str, expected: str | None) -> None:
    assert parse(text).requires_exact_match(key) == expected


# -- property tests ------------------------------------------------------------------------

_alnum = st.sampled_from(string.ascii_letters + string.digits)
_name = (
    st.builds(
        lambda first, middle, last: first + middle + last,
        _alnum,
        st.text(string.ascii_letters + string.digits + "-_.", max_size=8),
        _alnum,
    )
    | _alnum
)
_prefix = st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=8)
_key = _name | st.builds(lambda p, n: f"{p}.io/{n}", _prefix, _name)
_value = st.one_of(st.just(""), _name)


@st.composite
def _requirements(draw: st.DrawFn) -> Requirement:
    key = draw(_key)
    op = draw(st.sampled_from(list(Operator)))
    if op in (Operator.IN, Operator.NOT_IN):
        values = draw(st.lists(_value, min_size=1, max_size=4))
    elif op in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        values = []
    elif op in (Operator.GREATER_THAN, Operator.LESS_THAN):
        values = [str(draw(st.integers(0, 10**6)))]
    else:
        values = [draw(_value)]
    return Requirement(key, op, tuple(values))


_selectors = st.lists(_requirements(), max_size=5).map(Selector)
_label_sets = st.dictionaries(
    st.one_of(st.sampled_from(["a", "b", "x.io/a"]), _key),
    st.one_of(_value, st.integers(0, 10**6).map(str)),
    max_size=5,
)


@given(_selectors)
def test_round_trip(selector: Selector) -> None:
    assert parse(str(selector)) == selector


@given(_selectors, _label_sets)
def test_compiled_matching_agrees_with_requirements(
    selector: Selector, labels: dict[str, str]
) -> None:
    expected = all(req.matches(labels) for req in selector.requirements)
    assert selector.matches(labels) is expected
