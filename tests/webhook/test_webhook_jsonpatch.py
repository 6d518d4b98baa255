"""json_patch: table cases (controller-runtime computes the same with gomodules/jsonpatch),
and patches that, applied, give the document back."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kcontrol.webhook import json_patch
from kcontrol.webhook._jsonpatch import pointer


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        pytest.param({"a": 1}, {"a": 1}, [], id="equal"),
        pytest.param(
            {}, {"a": {"b": 1}}, [{"op": "add", "path": "/a", "value": {"b": 1}}], id="add"
        ),
        pytest.param({"a": 1, "b": 2}, {"b": 2}, [{"op": "remove", "path": "/a"}], id="remove"),
        pytest.param(
            {"a": 1}, {"a": 2}, [{"op": "replace", "path": "/a", "value": 2}], id="replace"
        ),
        pytest.param(
            {"spec": {"replicas": 1, "x": "y"}},
            {"spec": {"replicas": 3, "x": "y"}},
            [{"op": "replace", "path": "/spec/replicas", "value": 3}],
            id="nested",
        ),
        pytest.param(
            {"metadata": {"labels": {}}},
            {"metadata": {"labels": {"app.kubernetes.io/name": "web", "a~b": "c"}}},
            [
                {"op": "add", "path": "/metadata/labels/app.kubernetes.io~1name", "value": "web"},
                {"op": "add", "path": "/metadata/labels/a~0b", "value": "c"},
            ],
            id="escaped keys",
        ),
        pytest.param(
            {"l": [1, 2]},
            {"l": [1, 2, 3]},
            [{"op": "replace", "path": "/l", "value": [1, 2, 3]}],
            id="arrays whole",
        ),
        pytest.param({"n": 1}, {"n": 1.0}, [], id="numbers by value"),
        pytest.param(
            {"n": 1},
            {"n": True},
            [{"op": "replace", "path": "/n", "value": True}],
            id="1 is not true",
        ),
        pytest.param(
            {"n": None}, {"n": 0}, [{"op": "replace", "path": "/n", "value": 0}], id="null to zero"
        ),
    ],
)
def test_json_patch(before: dict[str, Any], after: dict[str, Any], expected: list[Any]) -> None:
    assert json_patch(before, after) == expected
    assert apply(before, json_patch(before, after)) == after


def test_the_patch_shares_nothing_with_the_document() -> None:
    after = {"spec": {"template": {"labels": {"a": "b"}}}}
    patch = json_patch({}, after)
    patch[0]["value"]["template"]["labels"]["a"] = "changed"
    assert after["spec"]["template"]["labels"]["a"] == "b"


def test_pointer_escapes_rfc_6901() -> None:
    assert pointer("a/b", "c~d", "") == "/a~1b/c~0d/"


def apply(document: dict[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
    """A minimal RFC 6902 applier (add, remove, replace on objects), for the round trips."""
    result = copy.deepcopy(document)
    for operation in patch:
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in operation["path"].split("/")[1:]]
        parent = result
        for token in tokens[:-1]:
            parent = parent[token]
        if operation["op"] == "remove":
            del parent[tokens[-1]]
        else:
            parent[tokens[-1]] = copy.deepcopy(operation["value"])
    return result
