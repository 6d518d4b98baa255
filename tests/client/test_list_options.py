"""ListOptions: the query parameters of a LIST and of a WATCH, and what it refuses."""

from __future__ import annotations

import dataclasses

import pytest

from kcontrol.client import ListOptions

EVERY_OPTION = ListOptions(
    label_selector="app=web",
    field_selector="spec.nodeName=n1",
    resource_version="42",
    resource_version_match="NotOlderThan",
    limit=50,
    continue_="tok",
    timeout_seconds=30,
    allow_watch_bookmarks=True,
    send_initial_events=True,
)


@pytest.mark.parametrize(
    ("options", "watch", "expected"),
    [
        pytest.param(ListOptions(), False, {}, id="list: nothing set"),
        pytest.param(
            ListOptions(), True, {"watch": "true", "allowWatchBookmarks": "true"}, id="watch"
        ),
        pytest.param(
            EVERY_OPTION,
            False,
            {
                "labelSelector": "app=web",
                "fieldSelector": "spec.nodeName=n1",
                "resourceVersion": "42",
                "resourceVersionMatch": "NotOlderThan",
                "limit": "50",
                "continue": "tok",
                "timeoutSeconds": "30",
            },
            id="list: no watch-only options",
        ),
        pytest.param(
            EVERY_OPTION,
            True,
            {
                "labelSelector": "app=web",
                "fieldSelector": "spec.nodeName=n1",
                "watch": "true",
                "resourceVersion": "42",
                "resourceVersionMatch": "NotOlderThan",
                "timeoutSeconds": "30",
                "allowWatchBookmarks": "true",
                "sendInitialEvents": "true",
            },
            id="watch: no limit or continue",
        ),
        pytest.param(
            ListOptions(label_selector="", resource_version="", limit=0),
            False,
            {},
            id="empty strings and a zero limit are unset",
        ),
        pytest.param(ListOptions(limit=-1), False, {}, id="a negative limit is no limit"),
        pytest.param(
            ListOptions(allow_watch_bookmarks=False, send_initial_events=False),
            True,
            {"watch": "true", "sendInitialEvents": "false"},
            id="watch: bookmarks off, initial events explicitly off",
        ),
    ],
)
def test_query(options: ListOptions, watch: bool, expected: dict[str, str]) -> None:
    assert options.query(watch=watch) == expected


def test_derived_with_replace_keeps_the_selectors() -> None:
    base = ListOptions(label_selector="app=web")
    page = dataclasses.replace(base, resource_version="0", limit=500)
    assert page.query() == {"labelSelector": "app=web", "resourceVersion": "0", "limit": "500"}
    assert base == ListOptions(label_selector="app=web"), "frozen: the base is unchanged"


def test_hashable_and_compared_by_value() -> None:
    assert ListOptions(label_selector="a=b") == ListOptions(label_selector="a=b")
    assert len({ListOptions(), ListOptions(), ListOptions(field_selector="x=y")}) == 2


def test_keyword_only() -> None:
    with pytest.raises(TypeError):
        ListOptions("app=web")  # type: ignore[call-arg]


@pytest.mark.parametrize("match", ["NotOlderThan", "Exact", "", None])
def test_resource_version_match_values(match: str | None) -> None:
    ListOptions(resource_version="1", resource_version_match=match)


def test_unknown_resource_version_match_is_refused() -> None:
    with pytest.raises(ValueError, match="resource_version_match"):
        ListOptions(resource_version="1", resource_version_match="notolderthan")
