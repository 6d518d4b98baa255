"""Node selectors and required node affinity (component-helpers nodeaffinity_test.go:
TestNodeSelectorMatch, TestNodeSelectorRequirementsAsSelector,
TestPodMatchesNodeSelectorAndAffinityTerms; helpers_test.go: TestMatchNodeSelectorTerms,
TestMatchNodeSelectorTermsStateless)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kcontrol.errors import SelectorError
from kcontrol_controllers.scheduling import (
    NODE_NAME_FIELD,
    NodeSelector,
    RequiredNodeAffinity,
    match_node_selector_terms,
)


def _node(name: str = "", labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    if name:
        metadata["name"] = name
    if labels is not None:
        metadata["labels"] = labels
    return {"metadata": metadata}


def _req(key: str, operator: str, *values: str) -> dict[str, Any]:
    requirement: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        requirement["values"] = list(values)
    return requirement


def _term(
    expressions: list[dict[str, Any]] | None = None, fields: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    term: dict[str, Any] = {}
    if expressions is not None:
        term["matchExpressions"] = expressions
    if fields is not None:
        term["matchFields"] = fields
    return term


def _selector(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeSelectorTerms": list(terms)}


LABEL_1_IN = _req("label_1", "In", "label_1_val")
HOST_1_IN = _req(NODE_NAME_FIELD, "In", "host_1")


@pytest.mark.parametrize(
    ("node_selector", "node", "want"),
    [
        pytest.param(None, None, False, id="nil terms"),
        pytest.param(
            _selector(_term([LABEL_1_IN])),
            _node(labels={"label_1": "label_1_val"}),
            True,
            id="node label matches matchExpressions terms",
        ),
        pytest.param(
            _selector(_term(fields=[HOST_1_IN])),
            _node("host_1"),
            True,
            id="node field matches matchFields terms",
        ),
        pytest.param(
            _selector(_term(fields=[_req(NODE_NAME_FIELD, "In", "host_1", "host_2")])),
            _node("host_1"),
            False,
            id="invalid node field requirement",
        ),
        pytest.param(
            _selector(_term(fields=[HOST_1_IN])),
            _node("not_host_1", {"metadata.name": "host_1"}),
            False,
            id="fieldSelectorTerm with node labels",
        ),
        pytest.param(
            _selector(_term([_req("metadata.name", "In", "host_1")])),
            _node("host_1"),
            False,
            id="labelSelectorTerm with node fields",
        ),
        pytest.param(
            _selector(_term([LABEL_1_IN], [HOST_1_IN])),
            _node("host_1"),
            False,
            id="both set, only node fields",
        ),
        pytest.param(
            _selector(_term([LABEL_1_IN], [HOST_1_IN])),
            _node("host_1", {"label_1": "label_1_val"}),
            True,
            id="both set, fields and labels both match",
        ),
        pytest.param(
            _selector(_term([LABEL_1_IN], [HOST_1_IN])),
            _node("host_1", {"label_1": "label_1_val-failed"}),
            False,
            id="both set, labels mismatched",
        ),
        pytest.param(
            _selector(_term([LABEL_1_IN]), _term(fields=[HOST_1_IN])),
            _node("host_1", {"label_1": "label_1_val-failed"}),
            True,
            id="terms are ORed: the field term matches",
        ),
        pytest.param(
            _selector(_term(fields=[_req(NODE_NAME_FIELD, "NotIn", "host_2")])),
            _node("host_1"),
            True,
            id="NotIn on the node name",
        ),
        pytest.param(
            _selector(_term(fields=[_req(NODE_NAME_FIELD, "NotIn", "host_1")])),
            _node("host_1"),
            False,
            id="NotIn excludes the named node",
        ),
        pytest.param(
            _selector(_term(fields=[HOST_1_IN])),
            _node(labels={}),
            True,
            id="a node without a name has no fields: matchFields are not checked",
        ),
        pytest.param(
            _selector(_term(fields=[_req("metadata.foo", "In", "bar")])),
            _node("host_1"),
            False,
            id="an unknown field reads as empty",
        ),
        pytest.param(
            _selector(_term(fields=[_req("metadata.foo", "NotIn", "bar")])),
            _node("host_1"),
            True,
            id="an unknown field is not the value",
        ),
        pytest.param(
            _selector(_term([]), _term(fields=[])),
            _node("host_1", {"a": "b"}),
            False,
            id="empty terms match nothing",
        ),
        pytest.param(
            _selector(_term(fields=[_req(NODE_NAME_FIELD, "Exists")]), _term([LABEL_1_IN])),
            _node("host_1", {"label_1": "label_1_val"}),
            True,
            id="a term that does not parse does not stop the others",
        ),
    ],
)
def test_match_node_selector_terms(
    node_selector: dict[str, Any] | None, node: dict[str, Any] | None, want: bool
) -> None:
    before = copy.deepcopy(node_selector)
    assert match_node_selector_terms(node, node_selector) is want
    assert node_selector == before  # never reordered or modified


def test_node_selector_errors_name_every_bad_term() -> None:
    selector = NodeSelector(
        _selector(
            _term(fields=[_req(NODE_NAME_FIELD, "In", "host_1", "host_2")]),
            _term([LABEL_1_IN], [HOST_1_IN]),
            _term([_req("invalid key", "In", "label_value")]),
        )
    )
    assert len(selector.errors) == 2
    first, second = selector.errors
    assert first.startswith("nodeSelectorTerms[0].matchFields[0].values: Invalid value")
    assert "must have one element" in first
    assert second.startswith("nodeSelectorTerms[2].matchExpressions[0]")
    assert "name part must consist of alphanumeric characters" in second
    with pytest.raises(SelectorError, match=r"nodeSelectorTerms\[0\].*nodeSelectorTerms\[2\]"):
        selector.validate()
    # Lazily: the valid middle term still matches.
    assert selector.match(_node("host_1", {"label_1": "label_1_val"}))
    assert not selector.match(_node("host_2", {"label_1": "label_1_val"}))


@pytest.mark.parametrize(
    ("node", "want"),
    [
        pytest.param(None, False, id="nil node"),
        pytest.param(_node("host_1"), False, id="node matches field selector, but not labels"),
        pytest.param(
            _node("host_1", {"label_1": "label_1_val"}),
            True,
            id="node matches field selector and label selector",
        ),
    ],
)
def test_node_selector_match(node: dict[str, Any] | None, want: bool) -> None:
    selector = NodeSelector(_selector(_term([LABEL_1_IN], [HOST_1_IN])))
    selector.validate()  # valid: nothing raised
    assert selector.errors == ()
    assert selector.match(node) is want


def test_second_term_matches() -> None:
    selector = NodeSelector(_selector(_term([LABEL_1_IN]), _term(fields=[HOST_1_IN])))
    assert selector.match(_node("host_1"))


@pytest.mark.parametrize(
    ("expressions", "node_labels", "error"),
    [
        pytest.param(
            [_req("foo", "In", "bar", "baz")], {"foo": "baz"}, None, id="In with two values"
        ),
        pytest.param(
            [_req("foo", "Exists", "bar", "baz")],
            {"foo": "bar"},
            "values set must be empty for exists and does not exist",
            id="Exists with values",
        ),
        pytest.param([_req("foo", "Gt", "1")], {"foo": "2"}, None, id="Gt"),
        pytest.param([_req("bar", "Lt", "7")], {"bar": "6"}, None, id="Lt"),
        pytest.param(
            [_req("baz", "invalid", "5")],
            {"baz": "5"},
            '.operator: Unsupported value: "invalid": supported values: "In", "NotIn", '
            '"Exists", "DoesNotExist", "Gt", "Lt"',
            id="unknown operator",
        ),
        pytest.param(
            [_req("foo", "Gt", "one")], {"foo": "2"}, "must be an integer", id="Gt not a number"
        ),
        pytest.param([_req("foo", "In")], {"foo": ""}, "can't be empty", id="In without values"),
    ],
)
def test_match_expressions_parsing(
    expressions: list[dict[str, Any]], node_labels: dict[str, str], error: str | None
) -> None:
    selector = NodeSelector(_selector(_term(expressions)))
    if error is None:
        assert selector.errors == ()
        assert selector.match(_node("n", node_labels))
    else:
        (message,) = selector.errors
        assert message.startswith("nodeSelectorTerms[0].matchExpressions[0]")
        assert error in message
        assert not selector.match(_node("n", node_labels))


def _pod(
    node_selector: dict[str, str] | None = None, required: dict[str, Any] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if required is not None:
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
        }
    return {"spec": spec}


@pytest.mark.parametrize(
    ("pod", "labels", "node_name", "want"),
    [
        pytest.param(_pod(), {}, "", True, id="no selector"),
        pytest.param(_pod({"foo": "bar"}), {}, "", False, id="missing labels"),
        pytest.param(_pod({"foo": "bar"}), {"foo": "bar"}, "", True, id="same labels"),
        pytest.param(
            _pod({"foo": "bar"}), {"foo": "bar", "baz": "blah"}, "", True, id="labels superset"
        ),
        pytest.param(
            _pod({"foo": "bar", "baz": "blah"}), {"foo": "bar"}, "", False, id="labels subset"
        ),
        pytest.param(
            _pod(required=_selector(_term([_req("foo", "In", "bar", "value2")]))),
            {"foo": "bar"},
            "",
            True,
            id="In matches",
        ),
        pytest.param(
            _pod(required=_selector(_term([_req("kernel-version", "Gt", "0204")]))),
            {"kernel-version": "0206"},
            "",
            True,
            id="Gt matches (leading zeros read as decimal)",
        ),
        pytest.param(
            _pod(required=_selector(_term([_req("mem-type", "NotIn", "DDR", "DDR2")]))),
            {"mem-type": "DDR3"},
            "",
            True,
            id="NotIn matches",
        ),
        pytest.param(
            _pod(required=_selector(_term([_req("GPU", "Exists")]))),
            {"GPU": "NVIDIA-GRID-K1"},
            "",
            True,
            id="Exists matches",
        ),
        pytest.param(
            _pod(required=_selector(_term([_req("GPU", "DoesNotExist")]))),
            {"GPU": "NVIDIA-GRID-K1"},
            "",
            False,
            id="DoesNotExist fails on a present label",
        ),
        pytest.param(
            _pod(required=_selector(_term([_req("foo", "In", "value1", "value2")]))),
            {"foo": "bar"},
            "",
            False,
            id="affinity that does not match the node's labels",
        ),
        pytest.param(
            _pod(required={"nodeSelectorTerms": None}),
            {"foo": "bar"},
            "",
            False,
            id="nil NodeSelectorTerms",
        ),
        pytest.param(
            _pod(required=_selector()), {"foo": "bar"}, "", False, id="empty NodeSelectorTerms"
        ),
        pytest.param(
            _pod(required=_selector(_term([]))),
            {"foo": "bar"},
            "",
            False,
            id="empty matchExpressions match no node",
        ),
        pytest.param(
            {"spec": {"affinity": {"nodeAffinity": {}}}},
            {"foo": "bar"},
            "",
            True,
            id="affinity without a node selector",
        ),
        pytest.param(
            _pod(required=_selector(_term([_req("GPU", "Exists"), _req("GPU", "NotIn", "AMD")]))),
            {"GPU": "NVIDIA-GRID-K1"},
            "",
            True,
            id="expressions ANDed, all match",
        ),
        pytest.param(
            _pod(required=_selector(_term([_req("GPU", "Exists"), _req("GPU", "In", "AMD")]))),
            {"GPU": "NVIDIA-GRID-K1"},
            "",
            False,
            id="expressions ANDed, one fails",
        ),
        pytest.param(
            _pod(
                required=_selector(
                    _term([_req("foo", "In", "bar", "value2")]),
                    _term([_req("diffkey", "In", "wrong", "value2")]),
                )
            ),
            {"foo": "bar"},
            "",
            True,
            id="terms ORed",
        ),
        pytest.param(
            _pod({"foo": "bar"}, _selector(_term([_req("foo", "Exists")]))),
            {"foo": "bar"},
            "",
            True,
            id="nodeSelector and affinity both match",
        ),
        pytest.param(
            _pod({"foo": "bar"}, _selector(_term([_req("foo", "Exists")]))),
            {"foo": "barrrrrr"},
            "",
            False,
            id="affinity matches but nodeSelector does not",
        ),
        pytest.param(
            _pod(required=_selector(_term([_req("foo", "NotIn", "invalid value: ___@#$%^")]))),
            {"foo": "bar"},
            "",
            False,
            id="an invalid value in the term",
        ),
        pytest.param(
            _pod(required=_selector(_term(fields=[_req(NODE_NAME_FIELD, "In", "node_1")]))),
            {},
            "node_1",
            True,
            id="matchFields In matches",
        ),
        pytest.param(
            _pod(required=_selector(_term(fields=[_req(NODE_NAME_FIELD, "In", "node_1")]))),
            {},
            "node_2",
            False,
            id="matchFields In does not match",
        ),
        pytest.param(
            _pod(
                required=_selector(
                    _term(fields=[_req(NODE_NAME_FIELD, "In", "node_1")]),
                    _term([_req("foo", "In", "bar")]),
                )
            ),
            {"foo": "bar"},
            "node_2",
            True,
            id="two terms: the expression term matches",
        ),
        pytest.param(
            _pod(
                required=_selector(
                    _term([_req("foo", "In", "bar")], [_req(NODE_NAME_FIELD, "In", "node_1")])
                )
            ),
            {"foo": "bar"},
            "node_2",
            False,
            id="one term: fields fail, expressions match",
        ),
        pytest.param(
            _pod(
                required=_selector(
                    _term([_req("foo", "In", "bar")], [_req(NODE_NAME_FIELD, "In", "node_1")])
                )
            ),
            {"foo": "bar"},
            "node_1",
            True,
            id="one term: both match",
        ),
        pytest.param(
            _pod(
                required=_selector(
                    _term(fields=[_req(NODE_NAME_FIELD, "In", "node_1")]),
                    _term([_req("foo", "In", "not-match-to-bar")]),
                )
            ),
            {"foo": "bar"},
            "node_2",
            False,
            id="two terms: neither matches",
        ),
    ],
)
def test_required_node_affinity(
    pod: dict[str, Any], labels: dict[str, str], node_name: str, want: bool
) -> None:
    assert RequiredNodeAffinity(pod).match(_node(node_name, labels)) is want


def test_required_node_affinity_reports_parse_errors() -> None:
    broken = _pod(required=_selector(_term([_req("foo", "Near", "x")])))
    assert RequiredNodeAffinity(broken).errors != ()
    assert RequiredNodeAffinity(_pod({"a": "b"})).errors == ()


def test_node_selector_labels_are_not_validated() -> None:
    # spec.nodeSelector is matched as given (labels.SelectorFromSet does not validate).
    pod = _pod({"not a valid key": "x"})
    assert RequiredNodeAffinity(pod).match(_node("n", {"not a valid key": "x"}))
    assert not RequiredNodeAffinity(pod).match(_node("n", {"other": "x"}))
