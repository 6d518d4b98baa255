"""Annotations and revisions (upstream deployment_util_test.go: TestAnnotationUtils,
TestReplicasAnnotationsNeedUpdate, TestGetNonNegativeInt32FromAnnotation; revision helpers)."""

from __future__ import annotations

from typing import Any

import pytest
from deployment_fixtures import new_deployment, new_replica_set

from kcontrol_controllers.deployment._annotations import (
    DESIRED_REPLICAS_ANNOTATION,
    LAST_APPLIED_CONFIG_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    REVISION_ANNOTATION,
    REVISION_HISTORY_ANNOTATION,
    ROLLBACK_TO_ANNOTATION,
    AnnotationError,
    copy_deployment_annotations_to_replica_set,
    get_desired_replicas_annotation,
    get_max_replicas_annotation,
    non_negative_int32_from_annotation,
    replicas_annotations_need_update,
    rollback_to,
    set_deployment_annotations_to,
    set_replicas_annotations,
)
from kcontrol_controllers.deployment._replicas import replica_set_fraction
from kcontrol_controllers.deployment._replicasets import is_saturated
from kcontrol_controllers.deployment._revisions import (
    RevisionError,
    last_revision,
    max_revision,
    revision,
    set_deployment_revision,
    set_new_replica_set_annotations,
    sorted_by_revision,
)


def with_annotations(annotations: dict[str, str] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": "hello", "namespace": "test"}}
    if annotations is not None:
        obj["metadata"]["annotations"] = annotations
    return obj


@pytest.mark.parametrize(
    ("annotations", "value", "error"),
    [
        pytest.param(None, None, None, id="invalid empty"),
        pytest.param({"test": "invalid", "foo": "2"}, None, "invalid syntax", id="invalid"),
        pytest.param({"test": "-1", "foo": "2"}, None, "invalid syntax", id="invalid negative"),
        pytest.param({"test": "+1"}, None, "invalid syntax", id="sign not allowed"),
        pytest.param({"test": ""}, None, "invalid syntax", id="empty value"),
        pytest.param({"test": "0", "foo": "2"}, 0, None, id="valid zero"),
        pytest.param({"test": "13", "foo": "2"}, 13, None, id="valid"),
        pytest.param({"test": str(2**31 - 1)}, 2**31 - 1, None, id="valid max"),
        pytest.param({"test": str(2**31)}, None, "out of range", id="invalid max out of range"),
        pytest.param({"test": str(2**32)}, None, "out of range", id="invalid out of range 2"),
        # Go's ParseUint reads any number of digits; Python converts at most 4,300
        pytest.param({"test": "9" * 5000}, None, "out of range", id="5000 digits"),
        pytest.param({"test": "0" * 5000 + "7"}, 7, None, id="5000 leading zeros"),
    ],
)
def test_non_negative_int32_from_annotation(
    annotations: dict[str, str] | None, value: int | None, error: str | None
) -> None:
    obj = with_annotations(annotations)
    if error is not None:
        with pytest.raises(AnnotationError, match=error):
            non_negative_int32_from_annotation(obj, "test")
    else:
        assert non_negative_int32_from_annotation(obj, "test") == value


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        pytest.param(None, True, id="annotations nil"),
        pytest.param(
            {DESIRED_REPLICAS_ANNOTATION: "8", MAX_REPLICAS_ANNOTATION: "20"}, True, id="desired"
        ),
        pytest.param(
            {DESIRED_REPLICAS_ANNOTATION: "10", MAX_REPLICAS_ANNOTATION: "16"}, True, id="max"
        ),
        pytest.param(
            {DESIRED_REPLICAS_ANNOTATION: "10", MAX_REPLICAS_ANNOTATION: "20"}, False, id="no need"
        ),
    ],
)
def test_replicas_annotations_need_update(
    annotations: dict[str, str] | None, expected: bool
) -> None:
    assert replicas_annotations_need_update(with_annotations(annotations), 10, 20) is expected


@pytest.mark.parametrize("key", [DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION])
def test_replicas_annotations_of_any_length_are_malformed_not_fatal(key: str) -> None:
    # A tenant's 5000-digit value is skipped as upstream skips a value ParseUint rejects.
    d = new_deployment("nginx", 3)
    rs = new_replica_set(d, "rs", 3, available=3)
    rs["metadata"]["annotations"] = {key: "9" * 5000}
    assert get_desired_replicas_annotation(rs) is None
    assert get_max_replicas_annotation(rs) is None
    assert not is_saturated(d, rs)  # no desired-replicas: not saturated, as upstream
    assert replica_set_fraction(rs, d) == 0  # no max-replicas: status.replicas (0) stands in


def test_set_replicas_annotations_and_saturation() -> None:
    d = new_deployment("nginx", 1)
    rs = new_replica_set(d, "rs", 1)
    assert set_replicas_annotations(rs, 10, 11) is True
    assert rs["metadata"]["annotations"][DESIRED_REPLICAS_ANNOTATION] == "10"
    assert rs["metadata"]["annotations"][MAX_REPLICAS_ANNOTATION] == "11"
    assert set_replicas_annotations(rs, 10, 11) is False
    rs["metadata"]["annotations"][DESIRED_REPLICAS_ANNOTATION] = "1"
    rs["status"]["availableReplicas"] = 1
    assert is_saturated(d, rs)
    assert get_desired_replicas_annotation(rs) == 1


def test_set_new_replica_set_annotations_history() -> None:
    # upstream TestAnnotationUtils/SetNewReplicaSetAnnotations with a 5-character limit
    d = new_deployment("nginx", 1)
    d["metadata"]["annotations"] = {REVISION_ANNOTATION: "1"}
    rs = new_replica_set(d, "rs", 0)
    for i in range(10, 20):
        next_revision = str(i + 1)
        set_new_replica_set_annotations(d, rs, next_revision, True, 5)
        annotations = rs["metadata"]["annotations"]
        if i >= 12:
            assert annotations[REVISION_HISTORY_ANNOTATION] == f"{i - 1},{i}"
        assert annotations[REVISION_ANNOTATION] == next_revision
    assert DESIRED_REPLICAS_ANNOTATION not in rs["metadata"]["annotations"]  # exists=True


@pytest.mark.parametrize(
    ("current", "history", "new", "expected_revision", "expected_history", "changed"),
    [
        pytest.param(None, None, "3", "3", None, True, id="first revision, no history"),
        pytest.param("2", None, "3", "3", "2", True, id="rollback starts the history"),
        pytest.param("4", "1,2", "5", "5", "1,2,4", True, id="history appended"),
        pytest.param("5", None, "3", "5", None, False, id="never lowered"),
        pytest.param("5", None, "5", "5", None, False, id="unchanged"),
        pytest.param("x", None, "5", "x", None, False, id="unparseable revision left alone"),
    ],
)
def test_set_new_replica_set_annotations_revision(
    current: str | None,
    history: str | None,
    new: str,
    expected_revision: str,
    expected_history: str | None,
    changed: bool,
) -> None:
    d = new_deployment("nginx", 1)
    rs = new_replica_set(d, "rs", 0)
    annotations: dict[str, str] = {}
    if current is not None:
        annotations[REVISION_ANNOTATION] = current
    if history is not None:
        annotations[REVISION_HISTORY_ANNOTATION] = history
    rs["metadata"]["annotations"] = annotations
    assert set_new_replica_set_annotations(d, rs, new, True) is changed
    assert rs["metadata"]["annotations"].get(REVISION_ANNOTATION) == expected_revision
    assert rs["metadata"]["annotations"].get(REVISION_HISTORY_ANNOTATION) == expected_history


def test_history_drops_oldest_entries_past_the_limit() -> None:
    d = new_deployment("nginx", 1)
    rs = new_replica_set(d, "rs", 0)
    rs["metadata"]["annotations"] = {
        REVISION_ANNOTATION: "9",
        REVISION_HISTORY_ANNOTATION: "1,2,3,4",
    }
    set_new_replica_set_annotations(d, rs, "10", True, 6)  # "3,4,9" fits, "2,3,4,9" does not
    assert rs["metadata"]["annotations"][REVISION_HISTORY_ANNOTATION] == "3,4,9"


def test_new_replica_set_gets_copied_annotations_and_size() -> None:
    d = new_deployment("nginx", 4, max_surge=1, max_unavailable=0)
    d["metadata"]["annotations"] = {
        "team": "a",
        LAST_APPLIED_CONFIG_ANNOTATION: "{}",
        REVISION_ANNOTATION: "7",
        ROLLBACK_TO_ANNOTATION: "1",
    }
    rs: dict[str, Any] = {"metadata": {}}
    assert set_new_replica_set_annotations(d, rs, "3", False) is True
    assert rs["metadata"]["annotations"] == {
        "team": "a",
        REVISION_ANNOTATION: "3",
        DESIRED_REPLICAS_ANNOTATION: "4",
        MAX_REPLICAS_ANNOTATION: "5",
    }


def test_copy_annotations_reports_changes_only() -> None:
    d = with_annotations({"a": "1", REVISION_ANNOTATION: "4"})
    rs = with_annotations({"a": "1", "b": "2"})
    assert copy_deployment_annotations_to_replica_set(d, rs) is False
    d["metadata"]["annotations"]["a"] = "changed"
    assert copy_deployment_annotations_to_replica_set(d, rs) is True
    assert rs["metadata"]["annotations"] == {"a": "changed", "b": "2"}


def test_set_deployment_annotations_to_keeps_skipped_ones() -> None:
    d = with_annotations({"change-cause": "edit", REVISION_ANNOTATION: "2", "only-on-d": "x"})
    rs = with_annotations({"change-cause": "create", REVISION_ANNOTATION: "1", "on-rs": "y"})
    set_deployment_annotations_to(d, rs)
    assert d["metadata"]["annotations"] == {
        "change-cause": "create",
        REVISION_ANNOTATION: "2",
        "on-rs": "y",
    }


def test_revisions() -> None:
    rss = [
        with_annotations({REVISION_ANNOTATION: "3"}),
        with_annotations({REVISION_ANNOTATION: "7"}),
        with_annotations({REVISION_ANNOTATION: "x"}),
        with_annotations(None),
        with_annotations({REVISION_ANNOTATION: "5"}),
    ]
    assert revision(rss[0]) == 3
    assert max_revision(rss) == 7
    assert last_revision(rss) == 5
    assert max_revision([]) == 0
    assert last_revision([rss[0]]) == 0
    assert last_revision([rss[0], with_annotations({REVISION_ANNOTATION: "3"})]) == 3


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(None, 0, id="none is revision 0"),
        pytest.param("7", 7, id="a revision"),
        pytest.param("+7", 7, id="plus sign"),
        pytest.param("-7", -7, id="minus sign"),
        pytest.param("0" * 5000 + "7", 7, id="5000 leading zeros"),
        pytest.param(str(2**63 - 1), 2**63 - 1, id="int64 max"),
        pytest.param(str(-(2**63)), -(2**63), id="int64 min"),
        pytest.param(str(2**63), "value out of range", id="past int64 max"),
        pytest.param("9" * 5000, "value out of range", id="5000 digits"),
        pytest.param("-" + "9" * 5000, "value out of range", id="minus 5000 digits"),
        pytest.param("", "invalid syntax", id="empty"),
        pytest.param("x", "invalid syntax", id="not a number"),
    ],
)
def test_revision(value: str | None, expected: int | str) -> None:
    obj = with_annotations(None if value is None else {REVISION_ANNOTATION: value})
    if isinstance(expected, str):
        with pytest.raises(RevisionError, match=expected):
            revision(obj)
    else:
        assert revision(obj) == expected


def test_revisions_of_any_length_are_skipped() -> None:
    rss = [
        with_annotations({REVISION_ANNOTATION: "3"}),
        with_annotations({REVISION_ANNOTATION: "9" * 5000}),
        with_annotations({REVISION_ANNOTATION: "2"}),
    ]
    assert max_revision(rss) == 3
    assert last_revision(rss) == 2
    d = new_deployment("nginx", 1)
    rs = new_replica_set(d, "rs", 0)
    rs["metadata"]["annotations"] = {REVISION_ANNOTATION: "9" * 5000}
    assert set_new_replica_set_annotations(d, rs, "4", True) is False  # left alone
    assert rs["metadata"]["annotations"][REVISION_ANNOTATION] == "9" * 5000


def test_sorted_by_revision_then_creation() -> None:
    d = new_deployment("foo", 1)
    r3 = new_replica_set(d, "r3", 0, created=1, revision=3)
    r1 = new_replica_set(d, "r1", 0, created=2, revision=1)
    r2a = new_replica_set(d, "r2a", 0, created=4, revision=2)
    r2b = new_replica_set(d, "r2b", 0, created=3, revision=2)
    names = [rs["metadata"]["name"] for rs in sorted_by_revision([r3, r1, r2a, r2b])]
    assert names == ["r1", "r2b", "r2a", "r3"]


def test_set_deployment_revision() -> None:
    d = new_deployment("foo", 1)
    assert set_deployment_revision(d, "2") is True
    assert set_deployment_revision(d, "2") is False
    assert d["metadata"]["annotations"][REVISION_ANNOTATION] == "2"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(None, None, id="absent"),
        pytest.param("", None, id="empty"),
        pytest.param("0", 0, id="previous revision"),
        pytest.param("4", 4, id="a revision"),
        pytest.param("four", None, id="invalid is ignored"),
        pytest.param("9" * 5000, None, id="5000 digits are ignored"),
        pytest.param(str(2**63), None, id="past int64 is ignored"),
        pytest.param("0" * 5000 + "2", 2, id="5000 leading zeros"),
    ],
)
def test_rollback_to(value: str | None, expected: int | None) -> None:
    d = with_annotations(None if value is None else {ROLLBACK_TO_ANNOTATION: value})
    assert rollback_to(d) == expected
