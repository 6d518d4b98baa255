"""The fake API server's patch application: RFC 7386, RFC 6902, and the strategic subset."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kcontrol.client import PatchType
from kcontrol.errors import ApiError, BadRequest, Invalid
from kcontrol.testing.fake._patch import apply_patch, json_merge_patch, json_patch

# RFC 7386 appendix A, plus a nested case.
MERGE_CASES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), MERGE_CASES, ids=range(len(MERGE_CASES)))
def test_json_merge_patch_rfc7386_examples(target: Any, patch: Any, expected: Any) -> None:
    assert json_merge_patch(copy.deepcopy(target), patch) == expected


DOC = {"metadata": {"name": "x", "labels": {"a/b": "1"}}, "list": [1, 2, 3]}


@pytest.mark.parametrize(
    ("operations", "expected"),
    [
        pytest.param([{"op": "add", "path": "/new", "value": 1}], {**DOC, "new": 1}, id="add-key"),
        pytest.param(
            [{"op": "add", "path": "/list/-", "value": 4}],
            {**DOC, "list": [1, 2, 3, 4]},
            id="append",
        ),
        pytest.param(
            [{"op": "add", "path": "/list/0", "value": 0}],
            {**DOC, "list": [0, 1, 2, 3]},
            id="insert",
        ),
        pytest.param(
            [{"op": "remove", "path": "/list/1"}], {**DOC, "list": [1, 3]}, id="remove-index"
        ),
        pytest.param(
            [{"op": "remove", "path": "/metadata/labels/a~1b"}],
            {**DOC, "metadata": {"name": "x", "labels": {}}},
            id="remove-escaped-key",
        ),
        pytest.param(
            [{"op": "replace", "path": "/metadata/name", "value": "y"}],
            {**DOC, "metadata": {"name": "y", "labels": {"a/b": "1"}}},
            id="replace",
        ),
        pytest.param(
            [{"op": "move", "from": "/list", "path": "/moved"}],
            {"metadata": DOC["metadata"], "moved": [1, 2, 3]},
            id="move",
        ),
        pytest.param(
            [{"op": "copy", "from": "/list/2", "path": "/list/0"}],
            {**DOC, "list": [3, 1, 2, 3]},
            id="copy",
        ),
        pytest.param(
            [
                {"op": "test", "path": "/metadata/name", "value": "x"},
                {"op": "replace", "path": "/metadata/name", "value": "z"},
            ],
            {**DOC, "metadata": {"name": "z", "labels": {"a/b": "1"}}},
            id="test-then-replace",
        ),
        pytest.param([{"op": "replace", "path": "", "value": {"a": 1}}], {"a": 1}, id="root"),
    ],
)
def test_json_patch(operations: list[Any], expected: Any) -> None:
    assert json_patch(copy.deepcopy(DOC), operations) == expected


@pytest.mark.parametrize(
    ("operations", "error"),
    [
        pytest.param([{"op": "remove", "path": "/missing"}], Invalid, id="remove-missing"),
        pytest.param([{"op": "replace", "path": "/missing", "value": 1}], Invalid, id="replace"),
        pytest.param([{"op": "add", "path": "/a/b", "value": 1}], Invalid, id="add-no-parent"),
        pytest.param([{"op": "add", "path": "/list/9", "value": 1}], Invalid, id="index-range"),
        pytest.param([{"op": "add", "path": "/list/01", "value": 1}], Invalid, id="leading-zero"),
        pytest.param([{"op": "test", "path": "/list/0", "value": 2}], Invalid, id="test-fails"),
        pytest.param(
            [{"op": "test", "path": "/list/0", "value": True}], Invalid, id="test-true-is-not-1"
        ),
        pytest.param([{"op": "frob", "path": "/a"}], Invalid, id="unknown-op"),
        pytest.param([{"op": "add", "path": "/a"}], BadRequest, id="add-without-value"),
        pytest.param([{"op": "move", "path": "/a"}], BadRequest, id="move-without-from"),
        pytest.param([{"op": "remove"}], BadRequest, id="without-path"),
        pytest.param(["remove"], BadRequest, id="not-an-object"),
        pytest.param(
            [{"op": "move", "from": "/metadata", "path": "/metadata/x"}], Invalid, id="into-child"
        ),
        pytest.param([{"op": "add", "path": "x", "value": 1}], Invalid, id="bad-pointer"),
    ],
)
def test_json_patch_errors(operations: list[Any], error: type[ApiError]) -> None:
    with pytest.raises(error):
        json_patch(copy.deepcopy(DOC), operations)


def _ref(uid: str, name: str = "owner", controller: bool = False) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": uid} | (
        {"controller": True} if controller else {}
    )


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        pytest.param(
            {"metadata": {"ownerReferences": [_ref("1")]}},
            {"metadata": {"ownerReferences": [_ref("2")]}},
            {"metadata": {"ownerReferences": [_ref("1"), _ref("2")]}},
            id="owner-references-merge-by-uid",
        ),
        pytest.param(
            {"metadata": {"ownerReferences": [_ref("1")]}},
            {"metadata": {"ownerReferences": [_ref("1", controller=True)]}},
            {"metadata": {"ownerReferences": [_ref("1", controller=True)]}},
            id="owner-reference-updated-in-place",
        ),
        pytest.param(
            {"metadata": {"ownerReferences": [_ref("1"), _ref("2")]}},
            {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "1"}]}},
            {"metadata": {"ownerReferences": [_ref("2")]}},
            id="owner-reference-delete-directive",
        ),
        pytest.param(
            {"metadata": {"ownerReferences": [_ref("1"), _ref("2")]}},
            {"metadata": {"ownerReferences": [_ref("3"), {"$patch": "replace"}]}},
            {"metadata": {"ownerReferences": [_ref("3")]}},
            id="list-replace-directive",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}},
            {"spec": {"containers": [{"name": "b", "image": "2"}]}},
            {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]}},
            id="containers-merge-by-name",
        ),
        pytest.param(
            {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
            {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": None}]}},
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            id="conditions-merge-by-type",
        ),
        pytest.param(
            {"metadata": {"finalizers": ["a", "b"]}},
            {"metadata": {"finalizers": ["b", "c", "c"]}},
            {"metadata": {"finalizers": ["a", "b", "c"]}},
            id="finalizers-union",
        ),
        pytest.param(
            {"metadata": {"finalizers": ["a", "b"]}},
            {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
            {"metadata": {"finalizers": ["b"]}},
            id="delete-from-primitive-list",
        ),
        pytest.param(
            {"spec": {"args": ["a", "b"]}},
            {"spec": {"args": ["c"]}},
            {"spec": {"args": ["c"]}},
            id="other-lists-replaced",
        ),
        pytest.param(
            {"spec": {"selector": {"a": "1", "b": "2"}}},
            {"spec": {"selector": {"$patch": "replace", "c": "3"}}},
            {"spec": {"selector": {"c": "3"}}},
            id="map-replace-directive",
        ),
        pytest.param(
            {"spec": {"selector": {"a": "1"}, "x": 1}},
            {"spec": {"selector": {"$patch": "delete"}}},
            {"spec": {"x": 1}},
            id="map-delete-directive",
        ),
        pytest.param(
            {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}},
            {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
            {"spec": {"strategy": {"type": "Recreate"}}},
            id="retain-keys",
        ),
        pytest.param(
            {"metadata": {"labels": {"a": "1", "b": "2"}}},
            {"metadata": {"labels": {"a": None, "c": "3"}}},
            {"metadata": {"labels": {"b": "2", "c": "3"}}},
            id="null-deletes",
        ),
        pytest.param(
            {"metadata": {"finalizers": ["a"]}},
            {"$setElementOrder/finalizers": ["a"], "metadata": {}},
            {"metadata": {"finalizers": ["a"]}},
            id="set-element-order-ignored",
        ),
        pytest.param(
            {},
            {"metadata": {"ownerReferences": [_ref("1"), {"$patch": "delete", "uid": "2"}]}},
            {"metadata": {"ownerReferences": [_ref("1")]}},
            id="merge-into-missing-list",
        ),
    ],
)
def test_strategic_merge_patch(target: Any, patch: Any, expected: Any) -> None:
    assert apply_patch(copy.deepcopy(target), patch, PatchType.STRATEGIC) == expected


@pytest.mark.parametrize(
    ("patch", "patch_type", "error"),
    [
        pytest.param(
            {"metadata": {"ownerReferences": [{"name": "x"}]}},
            PatchType.STRATEGIC,
            BadRequest,
            id="smp-missing-merge-key",
        ),
        pytest.param({"$patch": "frob"}, PatchType.STRATEGIC, BadRequest, id="smp-bad-directive"),
        pytest.param([1], PatchType.MERGE, BadRequest, id="merge-not-object"),
        pytest.param({"op": "add"}, PatchType.JSON, BadRequest, id="json-not-list"),
        pytest.param("{not json", PatchType.MERGE, BadRequest, id="undecodable"),
        pytest.param({"a": 1}, PatchType.APPLY, ApiError, id="apply-unsupported"),
    ],
)
def test_patch_errors(patch: Any, patch_type: PatchType, error: type[ApiError]) -> None:
    with pytest.raises(error):
        apply_patch({"metadata": {}}, patch, patch_type)


def test_apply_is_415_unsupported_media_type() -> None:
    with pytest.raises(ApiError) as caught:
        apply_patch({}, {}, PatchType.APPLY)
    assert (caught.value.code, caught.value.reason) == (415, "UnsupportedMediaType")


def test_patch_accepts_json_text_and_bytes() -> None:
    assert apply_patch({"a": 1}, '{"b": 2}', PatchType.MERGE) == {"a": 1, "b": 2}
    assert apply_patch({"a": 1}, b'[{"op":"remove","path":"/a"}]', PatchType.JSON) == {}


def test_patch_values_do_not_alias_the_callers_patch() -> None:
    patch = {"spec": {"template": {"labels": {"a": "1"}}}}
    result = apply_patch({}, patch, PatchType.MERGE)
    result["spec"]["template"]["labels"]["a"] = "changed"
    assert patch == {"spec": {"template": {"labels": {"a": "1"}}}}
