"""Revisions as values (upstream TestFindEqualRevisions, TestSortControllerRevisions), plus
building a revision, equality across byte layouts, and the next revision number."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from history_fixtures import NS, PARENT_KIND, SS1, SS2, raw_template, revision_of

from kcontrol.client import Object, encode_json
from kcontrol_controllers.history import (
    CONTROLLER_REVISION_HASH_LABEL,
    body_to_create,
    controller_revision_name,
    equal_revision,
    find_equal_revisions,
    hash_controller_revision,
    new_controller_revision,
    next_revision,
    sort_controller_revisions,
)

# -- body_to_create ----------------------------------------------------------------------------


def test_body_to_create_sends_data_as_go_writes_it() -> None:
    template = {"$patch": "replace", "metadata": {"annotations": {"x": "a && b"}}}
    data = {"spec": {"template": template}}
    revision = {"metadata": {"name": "web-1"}, "data": data, "revision": 1}
    body = encode_json(body_to_create(revision))
    # Go: keys sorted, "&" as \u0026 - the bytes KCM's DaemonSet controller compares.
    expected = (
        b'{"spec":{"template":{"$patch":"replace","metadata":{"annotations":'
        b'{"x":"a \\u0026\\u0026 b"}}}}}'
    )
    assert b'"data":' + expected in body
    assert orjson.loads(body)["data"] == data
    assert revision["data"] is data, "the revision itself is left as it was"
    assert body_to_create({"revision": 2}) == {"revision": 2}


# -- new_controller_revision -------------------------------------------------------------------


def test_new_controller_revision() -> None:
    labels = {"foo": "bar"}
    data = raw_template(SS1)
    cr = new_controller_revision(SS1, PARENT_KIND, labels, data, 4, 2)

    hash_ = hash_controller_revision({"data": data}, 2)
    assert cr["apiVersion"] == "apps/v1"
    assert cr["kind"] == "ControllerRevision"
    assert cr["metadata"]["name"] == controller_revision_name("ss1", hash_)
    assert cr["metadata"]["namespace"] == NS
    assert cr["metadata"]["labels"] == {"foo": "bar", CONTROLLER_REVISION_HASH_LABEL: hash_}
    assert cr["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "name": "ss1",
            "uid": "ss1-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert cr["data"] == data
    assert cr["revision"] == 4


def test_new_controller_revision_copies_what_it_is_given() -> None:
    labels = {"foo": "bar"}
    data = raw_template(SS1)
    cr = new_controller_revision(SS1, PARENT_KIND, labels, data, 1, None)
    assert labels == {"foo": "bar"}  # the hash label went into a copy
    data["spec"]["containers"][0]["image"] = "changed"
    labels["foo"] = "changed"
    assert cr["data"]["spec"]["containers"][0]["image"] == "nginx"
    assert cr["metadata"]["labels"]["foo"] == "bar"


def test_new_controller_revision_name_follows_collision_count() -> None:
    names = {revision_of(SS1, 1, count)["metadata"]["name"] for count in (None, 0, 1)}
    assert len(names) == 3


# -- equal_revision ----------------------------------------------------------------------------


def with_hash_label(revision: Object, value: str) -> Object:
    revision = copy.deepcopy(revision)
    revision["metadata"]["labels"][CONTROLLER_REVISION_HASH_LABEL] = value
    return revision


def with_data(revision: Object, data: Any) -> Object:
    revision = copy.deepcopy(revision)
    revision["data"] = data
    return revision


REV = revision_of(SS1, 1)
GO_ORDER = '{"spec":{"containers":[{"image":"nginx","name":"nginx"}]},"metadata":{"x":1}}'
OTHER_ORDER = '{"metadata":{"x":1},"spec":{"containers":[{"name":"nginx","image":"nginx"}]}}'


@dataclass
class EqualCase:
    name: str
    a: Object | None
    b: Object | None
    equal: bool


EQUAL_CASES = [
    EqualCase("both None", None, None, True),
    EqualCase("one None", REV, None, False),
    EqualCase("the other None", None, REV, False),
    EqualCase("same revision", REV, copy.deepcopy(REV), True),
    EqualCase("other parent, other data", REV, revision_of(SS2, 1), False),
    EqualCase(
        "same data, keys in another order",
        with_data(REV, orjson.loads(GO_ORDER)),
        with_data(REV, orjson.loads(OTHER_ORDER)),
        True,
    ),
    EqualCase(
        "same data, other names, revisions, owners and safe-encoded hash labels",
        with_hash_label(revision_of(SS1, 1, 0), "5d8f7c9b"),
        with_hash_label(revision_of(SS1, 9, 3, orphan=True), "74764dfb79"),
        True,
    ),
    EqualCase(
        "same data, different numeric hash labels",
        with_hash_label(REV, "1234"),
        with_hash_label(REV, "5678"),
        False,
    ),
    EqualCase(
        "same data, same numeric hash labels",
        with_hash_label(REV, "1234"),
        with_hash_label(REV, "+1234"),
        True,
    ),
    EqualCase(
        "numeric labels beyond int32 are not read as hashes",
        with_hash_label(REV, "4294967295"),
        with_hash_label(REV, "4294967294"),
        True,
    ),
    EqualCase(
        "same data, one numeric hash label",
        with_hash_label(REV, "1234"),
        with_hash_label(REV, "bcd"),
        True,
    ),
    EqualCase(
        "numeric hash labels agree, data differs",
        with_hash_label(with_data(REV, {"a": 1}), "7"),
        with_hash_label(with_data(REV, {"a": 2}), "7"),
        False,
    ),
    EqualCase("true is not 1", with_data(REV, {"a": True}), with_data(REV, {"a": 1}), False),
    EqualCase("0 is not false", with_data(REV, [0]), with_data(REV, [False]), False),
    EqualCase(
        "1 and 1.0 are one JSON number", with_data(REV, {"a": 1}), with_data(REV, {"a": 1.0}), True
    ),
    EqualCase("list order matters", with_data(REV, [1, 2]), with_data(REV, [2, 1]), False),
    EqualCase("a missing member differs", with_data(REV, {"a": None}), with_data(REV, {}), False),
    EqualCase("no data on either side", with_data(REV, None), with_data(REV, None), True),
    EqualCase("no data on one side", with_data(REV, None), with_data(REV, {}), False),
    EqualCase("string is not number", with_data(REV, {"a": "1"}), with_data(REV, {"a": 1}), False),
]


@pytest.mark.parametrize("case", EQUAL_CASES, ids=lambda c: c.name)
def test_equal_revision(case: EqualCase) -> None:
    assert equal_revision(case.a, case.b) is case.equal
    assert equal_revision(case.b, case.a) is case.equal


def test_revision_written_by_kube_controller_manager_is_equal() -> None:
    # kube-controller-manager wrote the data with Go's escaping and named the revision by
    # the hash of those bytes; read back, it is the same JSON as the one computed here.
    data = {"metadata": {"annotations": {"note": "a<b&c"}}}
    ours = revision_of(SS1, 2, data=data)
    go_bytes = b'{"metadata":{"annotations":{"note":"a\\u003cb\\u0026c"}}}'
    theirs = with_hash_label(with_data(ours, orjson.loads(go_bytes)), "86dbf8f595")
    theirs["metadata"]["name"] = "ss1-86dbf8f595"
    assert ours["metadata"]["name"] != theirs["metadata"]["name"]
    assert equal_revision(ours, theirs)


# -- find_equal_revisions ----------------------------------------------------------------------

SS1_REV1 = revision_of(SS1, 1)
SS1_REV2 = revision_of(SS1, 2, orphan=True)
SS2_REV1 = revision_of(SS2, 1)
SS2_REV2 = revision_of(SS2, 2)


@pytest.mark.parametrize(
    ("revisions", "want"),
    [
        pytest.param([SS1_REV1, SS2_REV1, SS2_REV2], [SS1_REV1], id="finds equivalent"),
        pytest.param([], [], id="finds nothing when empty"),
        pytest.param([SS2_REV2, SS2_REV1], [], id="finds nothing with no matches"),
        pytest.param(
            [SS1_REV2, SS2_REV1, SS1_REV1], [SS1_REV2, SS1_REV1], id="keeps the order given"
        ),
    ],
)
def test_find_equal_revisions(revisions: list[Object], want: list[Object]) -> None:
    found = find_equal_revisions(revisions, SS1_REV1)
    assert [id(r) for r in found] == [id(r) for r in want]


# -- sort_controller_revisions -----------------------------------------------------------------


def rev(name: str, revision: int, created: str | None = None) -> Object:
    metadata: dict[str, Any] = {"name": name}
    if created is not None:
        metadata["creationTimestamp"] = created
    return {"metadata": metadata, "revision": revision}


T0 = "2026-01-01T10:00:00Z"
T1 = "2026-01-01T10:00:01Z"


@pytest.mark.parametrize(
    ("revisions", "want"),
    [
        pytest.param([rev("b", 2), rev("a", 1), rev("c", 3)], ["a", "b", "c"], id="out of order"),
        pytest.param([rev("a", 1), rev("b", 2), rev("c", 3)], ["a", "b", "c"], id="sorted"),
        pytest.param([rev("c", 3), rev("b", 2), rev("a", 1)], ["a", "b", "c"], id="reversed"),
        pytest.param([rev("a", 10), rev("b", 9)], ["b", "a"], id="numbers, not strings"),
        pytest.param(
            [rev("x", 3, T1), rev("y", 3, T0), rev("z", 2, T1)],
            ["z", "y", "x"],
            id="revision ties broken by creation time",
        ),
        pytest.param(
            [rev("y", 3, T0), rev("x", 3, T0), rev("w", 3, T1)],
            ["x", "y", "w"],
            id="time ties broken by name",
        ),
        pytest.param([rev("a", 1, T0), rev("b", 1)], ["b", "a"], id="no creation time sorts first"),
        pytest.param(
            [rev("a", 1, "2026-01-01T09:00:00-02:00"), rev("b", 1, T0)],
            ["b", "a"],
            id="times compared as times (09:00-02:00 is 11:00Z)",
        ),
        pytest.param([], [], id="empty"),
    ],
)
def test_sort_controller_revisions(revisions: list[Object], want: list[str]) -> None:
    given = copy.deepcopy(revisions)
    ordered = sort_controller_revisions(revisions)
    assert [r["metadata"]["name"] for r in ordered] == want
    assert revisions == given  # the input keeps its order


def test_sort_is_stable() -> None:
    first, second = rev("same", 1, T0), rev("same", 1, T0)
    ordered = sort_controller_revisions([first, second])
    assert ordered[0] is first
    assert ordered[1] is second


# -- next_revision -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("numbers", "want"),
    [
        pytest.param([], 1, id="empty history starts at 1"),
        pytest.param([1], 2, id="one revision"),
        pytest.param([1, 2, 3], 4, id="sorted"),
        pytest.param([5, 2, 3], 6, id="unsorted: one past the highest"),
    ],
)
def test_next_revision(numbers: list[int], want: int) -> None:
    assert next_revision([rev(f"r{n}", n) for n in numbers]) == want
