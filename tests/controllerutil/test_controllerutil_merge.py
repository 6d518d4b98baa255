"""merge_patch: the RFC 7386 diff, table-tested, and checked against an RFC 7386 applier
(applying the patch to ``before`` gives ``after``) on generated documents."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcontrol.controllerutil import merge_patch
from kcontrol.controllerutil._merge import json_equal
from kcontrol.testing.fake._patch import json_merge_patch

CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    ("equal", {"a": 1, "b": {"c": [1, 2]}}, {"a": 1, "b": {"c": [1, 2]}}, {}),
    ("both-empty", {}, {}, {}),
    ("changed-scalar", {"a": 1, "b": 2}, {"a": 1, "b": 3}, {"b": 3}),
    ("added-member", {"a": 1}, {"a": 1, "b": {"c": 2}}, {"b": {"c": 2}}),
    ("removed-member-is-null", {"a": 1, "b": 2}, {"a": 1}, {"b": None}),
    ("nested-change-only", {"m": {"x": 1, "y": 2}}, {"m": {"x": 1, "y": 5}}, {"m": {"y": 5}}),
    ("nested-removal", {"m": {"x": 1, "y": 2}}, {"m": {"x": 1}}, {"m": {"y": None}}),
    ("array-replaced-whole", {"l": [1, 2, 3]}, {"l": [1, 2]}, {"l": [1, 2]}),
    (
        "array-of-objects-replaced-whole",
        {"l": [{"n": "a", "v": 1}]},
        {"l": [{"n": "a", "v": 2}]},
        {"l": [{"n": "a", "v": 2}]},
    ),
    ("object-to-scalar", {"a": {"b": 1}}, {"a": "x"}, {"a": "x"}),
    ("scalar-to-object", {"a": "x"}, {"a": {"b": 1}}, {"a": {"b": 1}}),
    ("object-to-array", {"a": {"b": 1}}, {"a": [1]}, {"a": [1]}),
    ("emptied-object", {"a": {"b": 1}}, {"a": {}}, {"a": {"b": None}}),
    ("bool-is-not-int", {"a": 1}, {"a": True}, {"a": True}),
    ("int-to-bool-false", {"a": 0}, {"a": False}, {"a": False}),
    ("int-equals-float", {"a": 1}, {"a": 1.0}, {}),
    ("string-number-differ", {"a": "1"}, {"a": 1}, {"a": 1}),
    ("null-and-missing-are-alike", {"a": None, "b": 1}, {"b": 1, "c": None}, {}),
    ("null-to-value", {"a": None}, {"a": 2}, {"a": 2}),
    ("value-to-null-removes", {"a": 2}, {"a": None}, {"a": None}),
    ("nested-null-only-difference", {"m": {"x": None}}, {"m": {}}, {}),
    (
        "deployment-scale-and-label",
        {
            "metadata": {"name": "web", "labels": {"app": "web"}, "resourceVersion": "7"},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"image": "a"}]}}},
        },
        {
            "metadata": {
                "name": "web",
                "labels": {"app": "web", "tier": "fe"},
                "resourceVersion": "7",
            },
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"image": "a"}]}}},
        },
        {"metadata": {"labels": {"tier": "fe"}}, "spec": {"replicas": 3}},
    ),
]


@pytest.mark.parametrize(
    ("before", "after", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_merge_patch(before: dict[str, Any], after: dict[str, Any], expected: Any) -> None:
    patch = merge_patch(before, after)
    assert json_equal(patch, expected), patch


def test_merge_patch_shares_nothing_with_after() -> None:
    after = {"l": [1], "m": {"n": {"o": 1}}}
    patch = merge_patch({}, after)
    patch["l"].append(2)
    patch["m"]["n"]["o"] = 2
    assert after == {"l": [1], "m": {"n": {"o": 1}}}


def test_merge_patch_leaves_its_inputs_alone() -> None:
    before, after = {"a": {"b": 1}, "c": 1}, {"a": {"b": 2}}
    merge_patch(before, after)
    assert (before, after) == ({"a": {"b": 1}, "c": 1}, {"a": {"b": 2}})


JSON_EQUAL_CASES = [
    ("ints", 1, 1, True),
    ("int-float", 1, 1.0, True),
    ("bool-int", True, 1, False),
    ("int-bool", 0, False, False),
    ("bools", False, False, True),
    ("nested-bool", {"a": [True]}, {"a": [1]}, False),
    ("key-sets", {"a": 1}, {"a": 1, "b": 1}, False),
    ("list-lengths", [1], [1, 1], False),
    ("list-vs-object", [], {}, False),
    ("object-vs-list", {}, [], False),
    ("null", None, None, True),
    ("null-vs-zero", None, 0, False),
    ("string", "a", "a", True),
]


@pytest.mark.parametrize(
    ("a", "b", "equal"), [c[1:] for c in JSON_EQUAL_CASES], ids=[c[0] for c in JSON_EQUAL_CASES]
)
def test_json_equal(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


# -- the property: apply(before, merge_patch(before, after)) == after ------------------------------

KEYS = st.sampled_from(["a", "b", "c", "spec", "status"])
SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "x", "y"])
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
OBJECTS = st.dictionaries(KEYS, VALUES, max_size=5)


def without_null_members(value: Any) -> Any:
    """What the API server keeps of a document: object members that are null are dropped
    (arrays are kept as they are: a merge patch replaces them whole)."""
    if isinstance(value, dict):
        return {k: without_null_members(v) for k, v in value.items() if v is not None}
    return value


@given(OBJECTS, OBJECTS)
def test_applying_the_patch_to_before_gives_after(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    patch = merge_patch(before, after)
    patched = json_merge_patch(copy.deepcopy(before), copy.deepcopy(patch))
    assert json_equal(without_null_members(patched), without_null_members(after))


@given(OBJECTS, OBJECTS)
def test_the_patch_is_empty_exactly_when_nothing_differs(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    patch = merge_patch(before, after)
    same = json_equal(without_null_members(before), without_null_members(after))
    assert (patch == {}) is same
