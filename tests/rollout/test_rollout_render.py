"""The rollout view's frame, rendered without a terminal: snapshot dicts in, text out."""

from __future__ import annotations

import pytest
from rich.console import Console

from kcontrol.rollout import Snapshot, render, take_snapshot
from kcontrol.rollout._render import format_age
from tests.rollout.rollout_fixtures import (
    NOW,
    condition,
    deployment,
    event,
    replicaset,
)

NEW = replicaset("web-new", "registry.k8s.io/pause:3.10", revision=2, desired=4, ready=3)
OLD = replicaset("web-old", "registry.k8s.io/pause:3.9", revision=1, desired=3, ready=2)


def text_of(snapshot: Snapshot, width: int = 120) -> str:
    console = Console(record=True, width=width, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(render(snapshot))
    console.file.close()
    return console.export_text()


def line_with(text: str, needle: str) -> str:
    lines = [line for line in text.splitlines() if needle in line]
    assert lines, f"no line with {needle!r} in:\n{text}"
    return lines[0]


def snapshot(**overrides: object) -> Snapshot:
    values: dict[str, object] = {
        "deployments": [deployment()],
        "replicasets": [OLD, NEW],
        "events": [],
        "now": NOW,
    }
    values.update(overrides)
    return take_snapshot("demo", "web", **values)  # type: ignore[arg-type]


def test_one_bar_per_replicaset_new_first_with_ratio_revision_and_image() -> None:
    text = text_of(snapshot())
    new, old = line_with(text, "web-new"), line_with(text, "web-old")
    assert text.index("web-new") < text.index("web-old")
    assert new.split()[1:3] == ["new", "web-new"] or "new" in new.split()[:3]
    assert "3/4" in new and "registry.k8s.io/pause:3.10" in new and "━" in new
    assert "old" in old.split()[:3] and "2/3" in old and "pause:3.9" in old and "━" in old
    assert " 2 " in new and " 1 " in old  # revisions


def test_deployment_line_counts_strategy_and_rollout_verdict() -> None:
    text = text_of(snapshot())
    assert "deployment demo/web" in text
    counts = line_with(text, "generation 2")
    for part in ("(observed 2)", "replicas 7/6", "updated 4", "ready 5", "available 5"):
        assert part in counts
    assert "RollingUpdate (maxSurge 2, maxUnavailable 1)" in text
    assert "4 out of 6 new replicas have been updated" in text


def test_conditions_table() -> None:
    text = text_of(snapshot())
    available = line_with(text, "MinimumReplicasAvailable")
    assert available.split()[1:5] == ["Available", "True", "MinimumReplicasAvailable", "30s"]
    assert "Deployment has minimum availability." in available
    assert "ReplicaSetUpdated" in line_with(text, "Progressing")


def test_latest_events_oldest_first_with_object_and_count() -> None:
    events = [
        event("ScalingReplicaSet", f"Scaled up replica set web-new from {i} to {i + 1}", age=60 - i)
        for i in range(10)
    ]
    events.append(
        event(
            "SuccessfulCreate",
            "Created pod: web-new-x",
            kind="ReplicaSet",
            name="web-new",
            uid="uid-web-new",
            age=1,
            count=3,
        )
    )
    text = text_of(snapshot(events=events))
    assert "from 1 to 2" not in text  # only the 8 latest: 3 ScalingReplicaSet dropped
    assert "from 2 to 3" not in text
    assert "from 3 to 4" in text
    assert text.index("from 3 to 4") < text.index("from 9 to 10") < text.index("web-new-x")
    created = line_with(text, "Created pod")
    assert "1s (x3)" in created and "replicaset/web-new" in created
    assert "57s" in line_with(text, "from 3 to 4")


def test_events_of_other_objects_and_foreign_replicasets_are_left_out() -> None:
    foreign = replicaset("other-1", "x", revision=1, desired=1, ready=1, owner_uid="uid-other")
    events = [
        event("Mine", "about web", age=3),
        event("Predecessor", "an older web", uid="uid-deleted-web", age=2),
        event("Foreign", "about other", kind="ReplicaSet", name="other-1", uid="uid-other-1"),
    ]
    text = text_of(snapshot(replicasets=[NEW, foreign], events=events))
    assert "other-1" not in text
    assert "about web" in text
    assert "an older web" not in text
    assert "about other" not in text


def test_missing_deployment_waits_instead_of_failing() -> None:
    text = text_of(snapshot(deployments=[]))
    assert "waiting for demo/web" in text


def test_not_synced_yet() -> None:
    text = text_of(snapshot(synced=False))
    assert "syncing informers for demo/web" in text


def test_complete_rollout_full_bar_and_success_message() -> None:
    done = deployment(updated=6, ready=6, available=6, total=6)
    new = replicaset("web-new", "registry.k8s.io/pause:3.10", revision=2, desired=6, ready=6)
    old = replicaset("web-old", "registry.k8s.io/pause:3.9", revision=1, desired=0, ready=0)
    text = text_of(snapshot(deployments=[done], replicasets=[old, new]))
    assert 'deployment "web" successfully rolled out' in text
    assert "6/6" in line_with(text, "web-new")
    assert "0/0" in line_with(text, "web-old")


def test_no_replicaset_and_no_conditions_yet() -> None:
    fresh = deployment(generation=1, observed=0, updated=0, ready=0, available=0, total=0)
    fresh["status"] = {}
    text = text_of(snapshot(deployments=[fresh], replicasets=[]))
    assert "no ReplicaSet yet" in text
    assert "none yet" in text
    assert "no events yet" in text
    assert "Waiting for deployment spec update to be observed..." in text


def test_header_and_notice() -> None:
    text = text_of(snapshot(header=("export KUBECONFIG=/tmp/k",), notice="applying v2 in 3 s"))
    lines = text.splitlines()
    assert lines[0] == "export KUBECONFIG=/tmp/k"
    assert lines[-1] == "applying v2 in 3 s"


def test_failed_condition_and_warning_event() -> None:
    conditions = [
        condition("Available", "False", "MinimumReplicasUnavailable", "not enough", 5),
        condition("Progressing", "False", "ProgressDeadlineExceeded", "too slow", 1),
        condition("ReplicaFailure", "True", "FailedCreate", "quota exceeded", 1),
    ]
    warning = event("FailedCreate", "pods forbidden", type_="Warning", age=1)
    text = text_of(snapshot(deployments=[deployment(conditions=conditions)], events=[warning]))
    assert 'deployment "web" exceeded its progress deadline' in text
    assert "ProgressDeadlineExceeded" in line_with(text, "Progressing")
    assert "Warning" in line_with(text, "pods forbidden")
    assert "quota exceeded" in line_with(text, "ReplicaFailure")


def test_narrow_terminal_still_shows_the_ratios() -> None:
    text = text_of(snapshot(), width=80)
    assert "3/4" in text and "2/3" in text


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        pytest.param(-3, "0s", id="clock-skew"),
        pytest.param(0, "0s", id="zero"),
        pytest.param(59, "59s", id="seconds"),
        pytest.param(119, "119s", id="under-two-minutes"),
        pytest.param(130, "2m10s", id="minutes-and-seconds"),
        pytest.param(180, "3m", id="whole-minutes"),
        pytest.param(45 * 60 + 5, "45m", id="minutes"),
        pytest.param(3 * 3600 + 12 * 60, "3h12m", id="hours-and-minutes"),
        pytest.param(10 * 3600, "10h", id="hours"),
        pytest.param(5 * 86400, "5d", id="days"),
    ],
)
def test_format_age(seconds: float, shown: str) -> None:
    assert format_age(seconds) == shown
