"""Success policies of Indexed Jobs: upstream's success_policy_test.go (``JobSuccessPolicy``
is GA in 1.36: the "disabled" case is gone)."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol_controllers.job._indexed import OrderedIntervals
from kcontrol_controllers.job._success_policy import match_success_policy


def iv(*pairs: tuple[int, int]) -> OrderedIntervals:
    return OrderedIntervals(tuple(pairs))


def rule(indexes: str | None = None, count: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if indexes is not None:
        out["succeededIndexes"] = indexes
    if count is not None:
        out["succeededCount"] = count
    return out


def rules(*items: dict[str, Any]) -> dict[str, Any]:
    return {"rules": list(items)}


MATCHED_0 = "Matched rules at index 0"


@pytest.mark.parametrize(
    ("success_policy", "succeeded", "want"),
    [
        pytest.param(None, iv((0, 0)), None, id="successPolicy is null"),
        pytest.param(rules(), iv((0, 0)), None, id="any rules are nothing"),
        pytest.param(
            rules(rule("invalid-form")),
            iv((0, 0)),
            None,
            id="rules.succeededIndexes is invalid format",
        ),
        pytest.param(
            rules(rule("0-2")),
            iv((0, 2), (4, 7)),
            MATCHED_0,
            id="rules.succeededIndexes is specified; succeededIndexes matched rules",
        ),
        pytest.param(
            rules(rule("3")),
            iv((0, 2)),
            None,
            id="rules.succeededIndexes is specified; succeededIndexes didn't match rules",
        ),
        pytest.param(
            rules(rule(count=2)),
            iv((0, 2)),
            MATCHED_0,
            id="rules.succeededCount is specified; succeededIndexes matched rules",
        ),
        pytest.param(
            rules(rule(count=4)),
            iv((0, 2)),
            None,
            id="rules.succeededCount is specified; succeededIndexes didn't match rules",
        ),
        pytest.param(
            rules(rule("9"), rule("4,6")),
            iv((0, 2), (4, 7)),
            "Matched rules at index 1",
            id="multiple rules; rules.succeededIndexes is specified; succeededIndexes met one "
            "of rules",
        ),
        pytest.param(
            rules(rule("0,1"), rule("5")),
            iv((0, 2), (4, 7)),
            MATCHED_0,
            id="multiple rules; rules.succeededIndexes is specified; succeededIndexes met all "
            "rules",
        ),
        pytest.param(
            rules(rule("3-6", 2)),
            iv((0, 2), (4, 7)),
            MATCHED_0,
            id="rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes "
            "met all rules",
        ),
        pytest.param(
            rules(rule("3-6", 2)),
            iv((0, 2), (6, 7)),
            None,
            id="rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes "
            "didn't match rules",
        ),
        pytest.param(
            rules(rule(count=4)),
            iv(),
            None,
            id="rules.succeededIndexes is specified; succeededIndexes are nothing",
        ),
        pytest.param(
            rules(rule("2-4,6-8")),
            iv((1, 5), (6, 9)),
            MATCHED_0,
            id="rules.succeededIndexes is specified; succeededIndexes matched rules; rules is "
            "proper subset of succeededIndexes",
        ),
        pytest.param(
            rules(rule("2-4,6-9")),
            iv((2, 4), (6, 9)),
            MATCHED_0,
            id="rules.succeededIndexes is specified; succeededIndexes matched rules; rules equals "
            "succeededIndexes",
        ),
        pytest.param(
            rules(rule("2-4,8-12")),
            iv((2, 5), (7, 15)),
            MATCHED_0,
            id="rules.succeededIndexes is specified; succeededIndexes matched rules; rules is "
            "subset of succeededIndexes",
        ),
        pytest.param(
            rules(rule("")),
            iv((1, 3)),
            None,
            id="rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules "
            "is an empty set",
        ),
        pytest.param(
            rules(rule("")),
            iv(),
            None,
            id="rules.succeededIndexes is specified; succeededIndexes didn't match rules; "
            "succeededIndexes is an empty set",
        ),
        pytest.param(
            rules(rule("10-12,14-16")),
            iv((1, 3), (5, 7)),
            None,
            id="rules.succeededIndexes is specified; succeededIndexes didn't match rules; all "
            "elements of rules.succeededIndexes aren't included in succeededIndexes",
        ),
        pytest.param(
            rules(rule("1-3,5-7")),
            iv((2, 4), (6, 8)),
            None,
            id="rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules "
            "overlaps succeededIndexes at first",
        ),
        pytest.param(
            rules(rule("1-3,5-7", 4)),
            iv((2, 4), (6, 8)),
            MATCHED_0,
            id="rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes "
            "matched rules; rules overlaps succeededIndexes at first",
        ),
        pytest.param(
            rules(rule("2-4,6-9")),
            iv((1, 3), (5, 7)),
            None,
            id="rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules "
            "overlaps succeededIndexes at last",
        ),
        pytest.param(
            rules(rule("2-4,6-9", 4)),
            iv((1, 3), (5, 7)),
            MATCHED_0,
            id="rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes "
            "matched rules; rules overlaps succeededIndexes at last",
        ),
        pytest.param(
            rules(rule("0-4,6-9")),
            iv((1, 3), (7, 8)),
            None,
            id="rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules "
            "completely overlaps succeededIndexes",
        ),
        pytest.param(
            rules(rule("0-4,6-9", 5)),
            iv((1, 3), (7, 8)),
            MATCHED_0,
            id="rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes "
            "matched rules; rules completely overlaps succeededIndexes",
        ),
        pytest.param(
            rules(rule("0-6,8-9")),
            iv((1, 3), (5, 9)),
            None,
            id="rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules "
            "overlaps multiple succeededIndexes at last",
        ),
    ],
)
def test_match_success_policy(
    success_policy: dict[str, Any] | None, succeeded: OrderedIntervals, want: str | None
) -> None:
    assert match_success_policy(success_policy, 10, succeeded) == want
