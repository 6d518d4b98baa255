"""Selector.matches, everything/nothing, selector_from_set and metav1.LabelSelector conversion."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest

from kcontrol.labels import (
    SelectorError,
    everything,
    nothing,
    parse,
    selector_from_label_selector,
    selector_from_set,
)

WEB = {"app": "web", "tier": "frontend", "replicas": "3"}


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        pytest.param("", WEB, True, id="everything"),
        pytest.param("", None, True, id="everything-none-labels"),
        pytest.param("app=web", WEB, True, id="equals-hit"),
        pytest.param("app=db", WEB, False, id="equals-miss"),
        pytest.param("app==web", WEB, True, id="double-equals"),
        pytest.param("missing=x", WEB, False, id="equals-absent-key"),
        pytest.param("app=", {"app": ""}, True, id="equals-empty-value"),
        pytest.param("app=", {}, False, id="equals-empty-value-absent"),
        pytest.param("app!=db", WEB, True, id="not-equals-hit"),
        pytest.param("app!=web", WEB, False, id="not-equals-miss"),
        pytest.param("missing!=x", WEB, True, id="not-equals-absent-key"),
        pytest.param("tier in (frontend,backend)", WEB, True, id="in-hit"),
        pytest.param("tier in (backend,cache)", WEB, False, id="in-miss"),
        pytest.param("missing in (x,y)", WEB, False, id="in-absent"),
        pytest.param("tier notin (backend)", WEB, True, id="notin-hit"),
        pytest.param("tier notin (frontend,x)", WEB, False, id="notin-miss"),
        pytest.param("missing notin (x)", WEB, True, id="notin-absent"),
        pytest.param("app", WEB, True, id="exists"),
        pytest.param("missing", WEB, False, id="exists-absent"),
        pytest.param("!missing", WEB, True, id="not-exists"),
        pytest.param("!app", WEB, False, id="not-exists-present"),
        pytest.param("!app", None, True, id="not-exists-none-labels"),
        pytest.param("replicas>2", WEB, True, id="gt-hit"),
        pytest.param("replicas>3", WEB, False, id="gt-equal"),
        pytest.param("replicas<4", WEB, True, id="lt-hit"),
        pytest.param("replicas<3", WEB, False, id="lt-equal"),
        pytest.param("app>1", WEB, False, id="gt-non-integer-label"),
        pytest.param("missing<1", WEB, False, id="lt-absent"),
        pytest.param("n>0", {"n": "+1"}, True, id="gt-signed-label"),
        pytest.param("n<0", {"n": "-5"}, True, id="lt-negative-label"),
        pytest.param("n>0", {"n": "1_0"}, False, id="gt-underscore-not-int"),
        pytest.param("app=web,tier=frontend", WEB, True, id="all-equal"),
        pytest.param("app=web,tier=backend", WEB, False, id="one-equal-fails"),
        pytest.param("app=web,app=db", WEB, False, id="contradictory-equals"),
        pytest.param("app=web,app in (web,db)", WEB, True, id="equals-and-in-same-key"),
        pytest.param("app=web,!canary,tier notin (x)", WEB, True, id="mixed"),
        pytest.param("app=web,canary", WEB, False, id="mixed-fails-on-check"),
    ],
)
def test_matches(text: str, labels: Mapping[str, str] | None, expected: bool) -> None:
    selector = parse(text)
    assert selector.matches(labels) is expected
    assert all(r.matches(labels) for r in selector.requirements) is expected


def test_matches_accepts_any_mapping() -> None:
    assert parse("app=web,tier").matches(MappingProxyType(WEB))
    assert not parse("app=db").matches(MappingProxyType(WEB))


def test_nothing_matches_nothing() -> None:
    selector = nothing()
    assert not selector.matches({})
    assert not selector.matches(WEB)
    assert not selector.empty()
    assert selector.selects_nothing()
    assert str(selector) == ""  # as upstream; selects_nothing() tells it apart
    assert selector != everything()
    assert selector.add(*parse("a").requirements) is selector
    assert selector.requires_exact_match("a") is None


def test_everything_matches_everything() -> None:
    selector = everything()
    assert selector.matches({}) and selector.matches(WEB) and selector.matches(None)
    assert selector.empty()
    assert not selector.selects_nothing()


def test_selectors_pickle() -> None:
    assert pickle.loads(pickle.dumps(nothing())) is nothing()
    selector = parse("a in (x,y),!b")
    assert pickle.loads(pickle.dumps(selector)) == selector


@pytest.mark.parametrize(
    ("labels", "canonical"),
    [
        pytest.param(None, "", id="none"),
        pytest.param({}, "", id="empty"),
        pytest.param({"b": "2", "a": "1"}, "a=1,b=2", id="sorted"),
        pytest.param({"a": ""}, "a=", id="empty-value"),
    ],
)
def test_selector_from_set(labels: dict[str, str] | None, canonical: str) -> None:
    selector = selector_from_set(labels)
    assert str(selector) == canonical
    if labels:
        assert selector.matches(labels)
        assert selector.matches({**labels, "extra": "x"})
        assert not selector.matches({})


def test_selector_from_set_validates() -> None:
    with pytest.raises(SelectorError):
        selector_from_set({"bad key": "v"})
    unchecked = selector_from_set({"bad key": "v"}, validate=False)
    assert unchecked.matches({"bad key": "v"})


@pytest.mark.parametrize(
    ("label_selector", "canonical"),
    [
        pytest.param({}, "", id="empty-dict"),
        pytest.param({"matchLabels": {}, "matchExpressions": []}, "", id="empty-fields"),
        pytest.param({"matchLabels": None}, "", id="null-fields"),
        pytest.param({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2", id="match-labels"),
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "In", "values": ["y", "x"]}]},
            "t in (x,y)",
            id="in",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "NotIn", "values": ["x"]}]},
            "t notin (x)",
            id="notin",
        ),
        pytest.param({"matchExpressions": [{"key": "t", "operator": "Exists"}]}, "t", id="exists"),
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "DoesNotExist", "values": []}]},
            "!t",
            id="does-not-exist",
        ),
        pytest.param(
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "app", "operator": "Exists"}],
            },
            "app=web,app",
            id="labels-and-expressions",
        ),
    ],
)
def test_selector_from_label_selector(label_selector: dict[str, Any], canonical: str) -> None:
    selector = selector_from_label_selector(label_selector)
    assert str(selector) == canonical
    assert not selector.selects_nothing()


def test_nil_label_selector_selects_nothing_and_empty_selects_everything() -> None:
    assert selector_from_label_selector(None) is nothing()
    assert not selector_from_label_selector(None).matches({"a": "b"})
    assert selector_from_label_selector({}) is everything()
    assert selector_from_label_selector({}).matches({"a": "b"})


@pytest.mark.parametrize(
    ("label_selector", "message"),
    [
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "Gt", "values": ["1"]}]},
            "not a valid label selector operator",
            id="gt-not-allowed",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "in", "values": ["1"]}]},
            "not a valid label selector operator",
            id="lowercase-operator",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "In"}]},
            "can't be empty",
            id="in-without-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "NotIn", "values": []}]},
            "can't be empty",
            id="notin-empty-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "Exists", "values": ["x"]}]},
            "must be empty",
            id="exists-with-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "DoesNotExist", "values": ["x"]}]},
            "must be empty",
            id="does-not-exist-with-values",
        ),
        pytest.param(
            {"matchExpressions": [{"operator": "Exists"}]}, "string key", id="missing-key"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "In", "values": "x"}]},
            "list of strings",
            id="values-not-a-list",
        ),
        pytest.param({"matchLabels": {"a": "-x"}}, "a valid label", id="bad-label-value"),
        pytest.param({"matchLabels": ["a"]}, "must be a mapping", id="match-labels-list"),
        pytest.param({"matchExpressions": "x"}, "must be a list", id="expressions-str"),
        pytest.param({"matchExpressions": ["x"]}, "must be a mapping", id="expression-str"),
        pytest.param("app=web", "must be a mapping", id="string-selector"),
        # Unhashable values cannot be remembered; they still get the validation's error.
        pytest.param({"matchLabels": {"a": ["x"]}}, "sequence of strings", id="label-list"),
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "In", "values": [{"x": 1}]}]},
            "sequence of strings",
            id="values-of-mappings",
        ),
        pytest.param({"matchLabels": {5: "a"}}, "key must be a string", id="label-key-int"),
    ],
)
def test_selector_from_label_selector_errors(label_selector: Any, message: str) -> None:
    with pytest.raises(SelectorError, match=message):
        selector_from_label_selector(label_selector)
    with pytest.raises(SelectorError, match=message):  # and again: no error is remembered
        selector_from_label_selector(label_selector)


def test_equal_label_selectors_share_one_selector_and_changes_are_seen() -> None:
    label_selector: dict[str, Any] = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
    }
    first = selector_from_label_selector(label_selector)
    assert selector_from_label_selector(copy.deepcopy(label_selector)) is first
    # Remembered by value, never by identity: a mapping changed in place is converted anew.
    label_selector["matchLabels"]["app"] = "db"
    label_selector["matchExpressions"][0]["values"].append("c")
    changed = selector_from_label_selector(label_selector)
    assert str(changed) == "app=db,tier in (a,b,c)"
    assert str(first) == "app=web,tier in (a,b)"
