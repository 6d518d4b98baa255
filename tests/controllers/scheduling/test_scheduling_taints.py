"""Taints and tolerations (k8s.io/api toleration_test.go: TestTolerationToleratesTaint,
TestCompareNumericValues; component-helpers helpers_test.go: TestFindMatchingUntoleratedTaint;
AddOrUpdateTolerationInPodSpec)."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol_controllers.scheduling import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    TaintFilter,
    add_or_update_toleration,
    do_not_schedule_taints_filter,
    find_matching_untolerated_taint,
    tolerates_taint,
    toleration_matches,
    tolerations_tolerate_taint,
)
from kcontrol_controllers.scheduling._taints import _compare_numeric_values

Taint = dict[str, Any]
Toleration = dict[str, Any]

SLA = "node.kubernetes.io/sla"


def _taint(key: str, effect: str, value: str = "") -> Taint:
    return (
        {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}
    )


@pytest.mark.parametrize(
    ("toleration", "taint", "comparison", "tolerated"),
    [
        pytest.param(
            {"key": "foo", "operator": "Exists", "effect": NO_SCHEDULE},
            _taint("foo", NO_SCHEDULE),
            False,
            True,
            id="same key and effect, Exists, taint without value",
        ),
        pytest.param(
            {"key": "foo", "operator": "Exists", "effect": NO_SCHEDULE},
            _taint("foo", NO_SCHEDULE, "bar"),
            False,
            True,
            id="same key and effect, Exists, taint with a value",
        ),
        pytest.param(
            {"key": "", "operator": "Exists", "effect": NO_SCHEDULE},
            _taint("foo", NO_SCHEDULE, "bar"),
            False,
            True,
            id="empty key with Exists matches every key",
        ),
        pytest.param(
            {"operator": "Exists"},
            _taint("foo", NO_EXECUTE, "bar"),
            False,
            True,
            id="empty key and effect with Exists tolerates everything",
        ),
        pytest.param(
            {"key": "foo", "operator": "Equal", "value": "bar", "effect": NO_SCHEDULE},
            _taint("foo", NO_SCHEDULE, "bar"),
            False,
            True,
            id="same key, effect and value, Equal",
        ),
        pytest.param(
            {"key": "foo", "operator": "Equal", "value": "value1", "effect": NO_SCHEDULE},
            _taint("foo", NO_SCHEDULE, "value2"),
            False,
            False,
            id="Equal with a different value",
        ),
        pytest.param(
            {"key": "foo", "operator": "Equal", "value": "bar", "effect": NO_SCHEDULE},
            _taint("foo", NO_EXECUTE, "bar"),
            False,
            False,
            id="same key and value, different effect",
        ),
        pytest.param(
            {"key": "foo", "value": "bar", "effect": NO_SCHEDULE},
            _taint("foo", NO_SCHEDULE, "bar"),
            False,
            True,
            id="empty operator is Equal: same value",
        ),
        pytest.param(
            {"key": "foo", "value": "bar", "effect": NO_SCHEDULE},
            _taint("foo", NO_SCHEDULE, "baz"),
            False,
            False,
            id="empty operator is Equal: other value",
        ),
        pytest.param(
            {"key": "foo", "operator": "Exists"},
            _taint("foo", PREFER_NO_SCHEDULE),
            False,
            True,
            id="empty effect matches every effect",
        ),
        pytest.param(
            {"key": "foo", "operator": "Exists", "effect": NO_SCHEDULE},
            _taint("bar", NO_SCHEDULE),
            False,
            False,
            id="different key",
        ),
        pytest.param(
            {"key": "foo", "operator": "Sometimes", "effect": NO_SCHEDULE},
            _taint("foo", NO_SCHEDULE),
            False,
            False,
            id="unknown operator tolerates nothing",
        ),
        pytest.param(
            {"key": SLA, "operator": "Gt", "value": "950", "effect": NO_SCHEDULE},
            _taint(SLA, NO_SCHEDULE, "800"),
            True,
            False,
            id="Gt: taint value below the threshold",
        ),
        pytest.param(
            {"key": SLA, "operator": "Gt", "value": "750", "effect": NO_SCHEDULE},
            _taint(SLA, NO_SCHEDULE, "950"),
            True,
            True,
            id="Gt: taint value above the threshold",
        ),
        pytest.param(
            {"key": SLA, "operator": "Gt", "value": "750", "effect": NO_SCHEDULE},
            _taint(SLA, NO_SCHEDULE, "950"),
            False,
            False,
            id="Gt without the feature tolerates nothing",
        ),
        pytest.param(
            {"key": SLA, "operator": "Lt", "value": "800", "effect": NO_SCHEDULE},
            _taint(SLA, NO_SCHEDULE, "950"),
            True,
            False,
            id="Lt: taint value above the threshold",
        ),
        pytest.param(
            {"key": SLA, "operator": "Lt", "value": "950", "effect": NO_SCHEDULE},
            _taint(SLA, NO_SCHEDULE, "800"),
            True,
            True,
            id="Lt: taint value below the threshold",
        ),
        pytest.param(
            {"key": SLA, "operator": "Gt", "value": "950", "effect": NO_SCHEDULE},
            _taint(SLA, NO_SCHEDULE, "950"),
            True,
            False,
            id="Gt: equal values",
        ),
        pytest.param(
            {"key": SLA, "operator": "Gt", "value": "950", "effect": NO_SCHEDULE},
            _taint(SLA, NO_SCHEDULE, "high"),
            True,
            False,
            id="Gt: taint value not a number",
        ),
        pytest.param(
            {"key": "test-key", "operator": "Gt", "value": "-100", "effect": NO_SCHEDULE},
            _taint("test-key", NO_SCHEDULE, "-200"),
            True,
            False,
            id="Gt: negative values, taint below",
        ),
        pytest.param(
            {
                "key": "test-key",
                "operator": "Gt",
                "value": "9223372036854775806",
                "effect": NO_SCHEDULE,
            },
            _taint("test-key", NO_SCHEDULE, "100"),
            True,
            False,
            id="Gt: large int64 threshold",
        ),
        pytest.param(
            {"key": SLA, "operator": "Gt", "value": "750", "effect": NO_EXECUTE},
            _taint(SLA, NO_SCHEDULE, "950"),
            True,
            False,
            id="Gt: the effect must still match",
        ),
    ],
)
def test_tolerates_taint(
    toleration: Toleration, taint: Taint, comparison: bool, tolerated: bool
) -> None:
    assert tolerates_taint(toleration, taint, comparison_operators=comparison) is tolerated


@pytest.mark.parametrize(
    ("toleration_value", "taint_value", "operator", "expected"),
    [
        pytest.param("100", "200", "Gt", True, id="Gt taint greater"),
        pytest.param("200", "100", "Gt", False, id="Gt taint less"),
        pytest.param("100", "100", "Gt", False, id="Gt equal"),
        pytest.param("-100", "-50", "Gt", True, id="Gt negative, taint greater"),
        pytest.param("-50", "-100", "Gt", False, id="Gt negative, taint less"),
        pytest.param("0", "1", "Gt", True, id="Gt zero and positive"),
        pytest.param("9223372036854775806", "9223372036854775807", "Gt", True, id="Gt large"),
        pytest.param("200", "100", "Lt", True, id="Lt taint less"),
        pytest.param("100", "200", "Lt", False, id="Lt taint greater"),
        pytest.param("100", "100", "Lt", False, id="Lt equal"),
        pytest.param("-50", "-100", "Lt", True, id="Lt negative, taint less"),
        pytest.param("-100", "-50", "Lt", False, id="Lt negative, taint greater"),
        pytest.param("0", "-1", "Lt", True, id="Lt zero and negative"),
        pytest.param("abc", "100", "Gt", False, id="toleration not numeric"),
        pytest.param("", "100", "Gt", False, id="toleration empty"),
        pytest.param("0100", "200", "Gt", False, id="toleration leading zero"),
        pytest.param("+100", "200", "Gt", False, id="toleration plus sign"),
        pytest.param("100.5", "200", "Gt", False, id="toleration floating point"),
        pytest.param("-", "100", "Gt", False, id="toleration just a minus sign"),
        pytest.param("100", "xyz", "Gt", False, id="taint not numeric"),
        pytest.param("100", "", "Gt", False, id="taint empty"),
        pytest.param("100", "0200", "Gt", False, id="taint leading zero"),
        pytest.param("100", "+200", "Lt", False, id="taint plus sign"),
        pytest.param("100", " 200 ", "Lt", False, id="taint spaces"),
        pytest.param("-0", "1", "Gt", False, id="minus zero is not canonical"),
        pytest.param("0", "9223372036854775808", "Gt", False, id="taint beyond int64"),
        pytest.param("0", "١٢", "Gt", False, id="non-ASCII digits"),
        pytest.param("100", "100", "Equal", False, id="Equal is no comparison"),
        pytest.param("100", "100", "Exists", False, id="Exists is no comparison"),
        pytest.param("0", "0", "Gt", False, id="Gt both zero"),
        pytest.param("0", "0", "Lt", False, id="Lt both zero"),
        pytest.param("0", "9223372036854775807", "Gt", True, id="Gt max int64 taint"),
        pytest.param("0", "-9223372036854775808", "Lt", True, id="Lt min int64 taint"),
    ],
)
def test_compare_numeric_values(
    toleration_value: str, taint_value: str, operator: str, expected: bool
) -> None:
    assert _compare_numeric_values(toleration_value, taint_value, operator) is expected


def _all(taint: dict[str, Any]) -> bool:
    return True


def _none(taint: dict[str, Any]) -> bool:
    return False


def _no_execute(taint: dict[str, Any]) -> bool:
    return taint.get("effect") == NO_EXECUTE


FOO_EXISTS_NO_SCHEDULE = {"key": "foo", "operator": "Exists", "effect": NO_SCHEDULE}


@pytest.mark.parametrize(
    ("tolerations", "taints", "inclusion", "comparison", "untolerated_key"),
    [
        pytest.param([], [], _all, False, None, id="empty tolerations, empty taints"),
        pytest.param([FOO_EXISTS_NO_SCHEDULE], [], _all, False, None, id="tolerations, no taints"),
        pytest.param(
            [FOO_EXISTS_NO_SCHEDULE],
            [_taint("foo", NO_SCHEDULE)],
            _all,
            False,
            None,
            id="every taint tolerated",
        ),
        pytest.param(
            [FOO_EXISTS_NO_SCHEDULE],
            [_taint("bar", NO_SCHEDULE)],
            _none,
            False,
            None,
            id="untolerated taint filtered out",
        ),
        pytest.param(
            [FOO_EXISTS_NO_SCHEDULE],
            [_taint("bar", NO_SCHEDULE)],
            None,
            False,
            "bar",
            id="no filter: every taint counts",
        ),
        pytest.param(
            [{"key": "foo", "operator": "Exists", "effect": NO_EXECUTE}],
            [_taint("foo", NO_EXECUTE), _taint("bar", NO_SCHEDULE)],
            _no_execute,
            False,
            None,
            id="only the NoExecute taint counts, and it is tolerated",
        ),
        pytest.param(
            [],
            [_taint("first", NO_SCHEDULE), _taint("second", NO_SCHEDULE)],
            _all,
            False,
            "first",
            id="the first untolerated taint is returned",
        ),
        pytest.param(
            [{"key": SLA, "operator": "Gt", "value": "950", "effect": NO_SCHEDULE}],
            [_taint(SLA, NO_SCHEDULE, "800")],
            _all,
            True,
            SLA,
            id="Gt below the threshold",
        ),
        pytest.param(
            [{"key": SLA, "operator": "Gt", "value": "750", "effect": NO_SCHEDULE}],
            [_taint(SLA, NO_SCHEDULE, "950")],
            _all,
            True,
            None,
            id="Gt above the threshold",
        ),
        pytest.param(
            [{"key": SLA, "operator": "Lt", "value": "800", "effect": NO_SCHEDULE}],
            [_taint(SLA, NO_SCHEDULE, "950")],
            _all,
            True,
            SLA,
            id="Lt above the threshold",
        ),
        pytest.param(
            [{"key": SLA, "operator": "Gt", "value": "950", "effect": NO_SCHEDULE}],
            [_taint(SLA, NO_SCHEDULE, "high")],
            _all,
            True,
            SLA,
            id="Gt with a taint value that is no number",
        ),
    ],
)
def test_find_matching_untolerated_taint(
    tolerations: list[Toleration],
    taints: list[Taint],
    inclusion: TaintFilter | None,
    comparison: bool,
    untolerated_key: str | None,
) -> None:
    found = find_matching_untolerated_taint(
        taints, tolerations, inclusion, comparison_operators=comparison
    )
    assert (None if found is None else found["key"]) == untolerated_key


def test_missing_lists_are_empty() -> None:
    assert find_matching_untolerated_taint(None, None) is None
    assert not tolerations_tolerate_taint(None, _taint("foo", NO_SCHEDULE))
    assert find_matching_untolerated_taint([_taint("foo", NO_SCHEDULE)], None) is not None


@pytest.mark.parametrize(
    ("effect", "kept"),
    [(NO_SCHEDULE, True), (NO_EXECUTE, True), (PREFER_NO_SCHEDULE, False), ("", False)],
)
def test_do_not_schedule_taints_filter(effect: str, kept: bool) -> None:
    assert do_not_schedule_taints_filter({"key": "k", "effect": effect}) is kept


@pytest.mark.parametrize(
    ("other", "same"),
    [
        pytest.param({"key": "k", "operator": "Exists", "effect": NO_EXECUTE}, True, id="same"),
        pytest.param(
            {"key": "k", "operator": "Exists", "effect": NO_EXECUTE, "tolerationSeconds": 5},
            True,
            id="tolerationSeconds is not part of the identity",
        ),
        pytest.param({"key": "k", "operator": "Equal", "effect": NO_EXECUTE}, False, id="op"),
        pytest.param({"key": "k", "effect": NO_EXECUTE}, False, id="empty operator is not Exists"),
        pytest.param({"key": "x", "operator": "Exists", "effect": NO_EXECUTE}, False, id="key"),
        pytest.param({"key": "k", "operator": "Exists", "effect": NO_SCHEDULE}, False, id="eff"),
        pytest.param(
            {"key": "k", "operator": "Exists", "effect": NO_EXECUTE, "value": "v"},
            False,
            id="value",
        ),
    ],
)
def test_toleration_matches(other: Toleration, same: bool) -> None:
    toleration = {"key": "k", "operator": "Exists", "effect": NO_EXECUTE}
    assert toleration_matches(toleration, other) is same
    assert toleration_matches(other, toleration) is same


NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": NO_EXECUTE}


def test_add_toleration_appends_when_none_matches() -> None:
    original = [{"key": "a", "operator": "Exists"}]
    spec: dict[str, Any] = {"tolerations": original}
    assert add_or_update_toleration(spec, NOT_READY)
    assert spec["tolerations"] == [{"key": "a", "operator": "Exists"}, NOT_READY]
    assert original == [{"key": "a", "operator": "Exists"}]  # a new list, the old one intact
    assert spec["tolerations"][1] is not NOT_READY  # a copy


def test_add_toleration_to_a_spec_without_tolerations() -> None:
    spec: dict[str, Any] = {}
    assert add_or_update_toleration(spec, NOT_READY)
    assert spec == {"tolerations": [NOT_READY]}


def test_add_toleration_replaces_matching_entries_in_place() -> None:
    limited = {**NOT_READY, "tolerationSeconds": 300}
    spec: dict[str, Any] = {"tolerations": [limited, {"key": "b", "operator": "Exists"}, limited]}
    assert add_or_update_toleration(spec, NOT_READY)
    # As upstream: every matching entry is replaced, the seconds dropped, the order kept.
    assert spec["tolerations"] == [NOT_READY, {"key": "b", "operator": "Exists"}, NOT_READY]


def test_add_toleration_reports_no_change_for_an_identical_entry() -> None:
    spec: dict[str, Any] = {"tolerations": [dict(NOT_READY)]}
    assert not add_or_update_toleration(spec, NOT_READY)
    assert spec["tolerations"] == [NOT_READY]
