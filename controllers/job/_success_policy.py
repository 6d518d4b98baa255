"""Declaring an Indexed Job successful before every index succeeded: ``spec.successPolicy``.
A port of ``success_policy.go``.

Rules are tried in order; the first that holds wins:

- with ``succeededIndexes``: every listed index succeeded, or - with ``succeededCount`` - at
  least that many of them did;
- with ``succeededCount`` alone: at least that many indexes succeeded.

A rule whose index list parses to nothing is skipped. The message names the rule:
``Matched rules at index <i>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._indexed import OrderedIntervals, parse_indexes

__all__ = ["match_succeeded_indexes_rule", "match_success_policy"]


def match_succeeded_indexes_rule(
    rule_indexes: OrderedIntervals, succeeded: OrderedIntervals, succeeded_count: int | None
) -> bool:
    """Whether ``succeeded`` covers all of ``rule_indexes``, or at least ``succeeded_count``
    of them."""
    rule, done = rule_indexes.intervals, succeeded.intervals
    contains = 0
    r = s = 0
    while r < len(rule) and s < len(done):
        overlap = min(rule[r][1], done[s][1]) - max(rule[r][0], done[s][0]) + 1
        if overlap > 0:
            contains += overlap
        if done[s][1] < rule[r][1]:
            s += 1
        elif done[s][1] > rule[r][1]:
            r += 1
        else:
            s += 1
            r += 1
    return contains == rule_indexes.total() or (
        succeeded_count is not None and contains >= succeeded_count
    )


def match_success_policy(
    policy: Mapping[str, Any] | None, completions: int, succeeded: OrderedIntervals
) -> str | None:
    """The success message if ``succeeded`` (the Job's succeeded indexes) satisfies a rule of
    ``policy``, else ``None``."""
    if policy is None or len(succeeded) == 0:
        return None
    for index, rule in enumerate(policy.get("rules") or ()):
        count = rule.get("succeededCount")
        count = int(count) if isinstance(count, int) else None
        indexes = rule.get("succeededIndexes")
        if indexes is not None:
            required = parse_indexes(str(indexes), completions)
            if len(required) == 0:
                continue
            if match_succeeded_indexes_rule(required, succeeded, count):
                return f"Matched rules at index {index}"
        elif count is not None and succeeded.total() >= count:
            return f"Matched rules at index {index}"
    return None
