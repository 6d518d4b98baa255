"""The stock predicates, table-driven as controller-runtime's predicate_test.go: which
updates each one passes, and how they combine."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol.builder import (
    Funcs,
    and_,
    annotations_changed,
    generation_changed,
    labels_changed,
    new_predicate_funcs,
    not_,
    or_,
    resource_version_changed,
)


def obj(**metadata: Any) -> dict[str, Any]:
    return {"metadata": {"name": "a", "namespace": "ns", **metadata}}


UPDATES = [
    # (case, predicate factory, old, new, passes)
    ("generation moved", generation_changed, obj(generation=1), obj(generation=2), True),
    (
        "generation same (status write)",
        generation_changed,
        obj(generation=2),
        obj(generation=2),
        False,
    ),
    ("no generation on old", generation_changed, obj(), obj(generation=1), True),
    # controller-runtime's GenerationChangedPredicate: 0 == 0, dropped.
    ("no generation at all (ConfigMap)", generation_changed, obj(), obj(), False),
    ("labels added", labels_changed, obj(), obj(labels={"a": "b"}), True),
    ("labels value changed", labels_changed, obj(labels={"a": "b"}), obj(labels={"a": "c"}), True),
    ("labels same", labels_changed, obj(labels={"a": "b"}), obj(labels={"a": "b"}), False),
    ("labels empty vs missing", labels_changed, obj(labels={}), obj(), False),
    (
        "labels same, annotations moved",
        labels_changed,
        obj(annotations={"x": "1"}),
        obj(annotations={"x": "2"}),
        False,
    ),
    (
        "annotations changed",
        annotations_changed,
        obj(annotations={"x": "1"}),
        obj(annotations={"x": "2"}),
        True,
    ),
    ("annotations removed", annotations_changed, obj(annotations={"x": "1"}), obj(), True),
    (
        "annotations same",
        annotations_changed,
        obj(annotations={"x": "1"}),
        obj(annotations={"x": "1"}),
        False,
    ),
    (
        "resourceVersion moved",
        resource_version_changed,
        obj(resourceVersion="1"),
        obj(resourceVersion="2"),
        True,
    ),
    (
        "resync (same resourceVersion)",
        resource_version_changed,
        obj(resourceVersion="2"),
        obj(resourceVersion="2"),
        False,
    ),
]


@pytest.mark.parametrize(
    ("predicate", "old", "new", "passes"),
    [case[1:] for case in UPDATES],
    ids=[case[0] for case in UPDATES],
)
def test_update_predicates(predicate: Any, old: Any, new: Any, passes: bool) -> None:
    assert predicate().update(old, new) is passes


@pytest.mark.parametrize(
    "predicate",
    [generation_changed, labels_changed, annotations_changed, resource_version_changed],
)
def test_stock_predicates_pass_creates_and_deletes(predicate: Any) -> None:
    assert predicate().create(obj()) is True
    assert predicate().delete(obj()) is True


def test_funcs_default_to_passing_and_call_what_is_given() -> None:
    seen: list[str] = []
    funcs = Funcs(create_func=lambda o: seen.append("create") is not None)
    assert funcs.create(obj()) is False
    assert funcs.update(obj(), obj()) is True
    assert funcs.delete(obj()) is True
    assert seen == ["create"]


def test_new_predicate_funcs_tests_the_new_object_of_an_update() -> None:
    keep = new_predicate_funcs(lambda o: o["metadata"].get("labels", {}).get("keep") == "yes")
    kept, other = obj(labels={"keep": "yes"}), obj(labels={"keep": "no"})
    assert keep.create(kept) and not keep.create(other)
    assert keep.delete(kept) and not keep.delete(other)
    assert keep.update(other, kept) is True
    assert keep.update(kept, other) is False


def test_and_or_not() -> None:
    old, new = obj(generation=1, labels={"a": "1"}), obj(generation=1, labels={"a": "2"})
    assert and_(generation_changed(), labels_changed()).update(old, new) is False
    assert or_(generation_changed(), labels_changed()).update(old, new) is True
    assert not_(generation_changed()).update(old, new) is True
    assert and_().update(old, new) is True  # nothing to veto
    assert or_().update(old, new) is False  # nothing to pass it
    assert not_(labels_changed()).create(obj()) is False
