"""The pod-recreation backoff and pod finish times: upstream's backoff_utils_test.go."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from job_fixtures import new_pod

from kcontrol_controllers.job._backoff import (
    BackoffRecord,
    BackoffStore,
    remaining_time_per_index,
)
from kcontrol_controllers.job._pods import finished_time

T = datetime(2009, 11, 10, 23, 0, 0, tzinfo=UTC)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def ms(n: int) -> datetime:
    return T + timedelta(milliseconds=n)


def finished(phase: str, at: datetime) -> dict[str, Any]:
    return {
        "metadata": {},
        "status": {
            "phase": phase,
            "containerStatuses": [{"state": {"terminated": {"finishedAt": iso(at)}}}],
        },
    }


@pytest.mark.parametrize(
    ("stored", "succeeded", "failed", "want"),
    [
        pytest.param(
            None, [], [T], BackoffRecord("key", 1, T), id="Empty backoff store and one new failure"
        ),
        pytest.param(
            None,
            [],
            [T, ms(-1)],
            BackoffRecord("key", 2, T),
            id="Empty backoff store and two new failures",
        ),
        pytest.param(
            None,
            [T],
            [ms(-2), ms(-1)],
            BackoffRecord("key", 0),
            id="Empty backoff store, two failures followed by success",
        ),
        pytest.param(
            None,
            [ms(-2)],
            [T, ms(-4), ms(-3), ms(-1)],
            BackoffRecord("key", 2, T),
            id="Empty backoff store, two failures, one success and two more failures",
        ),
        pytest.param(
            BackoffRecord("key", 2),
            [],
            [T],
            BackoffRecord("key", 3, T),
            id="Backoff store having failure count 2 and one new failure",
        ),
        pytest.param(
            None,
            [T],
            [T],
            BackoffRecord("key", 0),
            id="Empty backoff store with success and failure at same timestamp",
        ),
        pytest.param(
            None, [], [], BackoffRecord("key", 0), id="Empty backoff store with no success/failure"
        ),
        pytest.param(
            None, [T], [], BackoffRecord("key", 0), id="Empty backoff store with one success"
        ),
        pytest.param(
            BackoffRecord("key", 4, ms(-100)),
            [],
            [],
            BackoffRecord("key", 4, ms(-100)),
            id="nothing new keeps the stored record",
        ),
    ],
)
def test_new_backoff_record(
    stored: BackoffRecord | None,
    succeeded: list[datetime],
    failed: list[datetime],
    want: BackoffRecord,
) -> None:
    store = BackoffStore()
    if stored is not None:
        store.update(stored)
    got = store.new_record(
        "key",
        [finished("Succeeded", t) for t in succeeded],
        [finished("Failed", t) for t in failed],
    )
    assert got == want


def test_store_update_and_remove() -> None:
    store = BackoffStore()
    store.update(BackoffRecord("a", 1, T))
    assert store.get("a") == BackoffRecord("a", 1, T)
    store.remove("a")
    store.remove("a")
    assert store.get("a") is None
    assert store.new_record("a", [], []) == BackoffRecord("a")


def _containers(*states: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": f"c{i}", "state": s} for i, s in enumerate(states)]


def _term(at: datetime | None = None) -> dict[str, Any]:
    return {"terminated": {"finishedAt": iso(at)} if at else {}}


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(
            {
                "status": {
                    "containerStatuses": _containers(
                        _term(T - timedelta(seconds=1)), _term(T), _term(T - timedelta(seconds=2))
                    )
                }
            },
            T,
            id="Pod with multiple containers and all containers terminated",
        ),
        pytest.param(
            {
                "metadata": {"deletionTimestamp": iso(T)},
                "status": {
                    "containerStatuses": _containers(
                        _term(T - timedelta(seconds=1)),
                        {"running": {}},
                        _term(T - timedelta(seconds=2)),
                    )
                },
            },
            T,
            id="Pod with multiple containers; two containers in terminated state and one in "
            "running state; fallback to deletionTimestamp",
        ),
        pytest.param(
            {
                "metadata": {"deletionTimestamp": iso(T)},
                "status": {"containerStatuses": _containers({"running": {}})},
            },
            T,
            id="fallback to deletionTimestamp",
        ),
        pytest.param(
            {
                "metadata": {"deletionTimestamp": iso(T), "deletionGracePeriodSeconds": 30},
                "status": {"containerStatuses": _containers({"running": {}})},
            },
            T - timedelta(seconds=30),
            id="fallback to deletionTimestamp, decremented by grace period",
        ),
        pytest.param(
            {
                "status": {
                    "containerStatuses": _containers(_term()),
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "False",
                            "reason": "PodFailed",
                            "lastTransitionTime": iso(T),
                        }
                    ],
                }
            },
            T,
            id="fallback to PodReady.LastTransitionTime when status of the condition is False",
        ),
        pytest.param(
            {
                "metadata": {"deletionTimestamp": iso(T)},
                "status": {
                    "containerStatuses": _containers(_term()),
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "lastTransitionTime": iso(T - timedelta(seconds=30)),
                        }
                    ],
                },
            },
            T,
            id="skip fallback to PodReady.LastTransitionTime when status of the condition is True",
        ),
        pytest.param(
            {
                "metadata": {"creationTimestamp": iso(T)},
                "status": {"containerStatuses": _containers(_term())},
            },
            T,
            id="fallback to creationTimestamp",
        ),
        pytest.param(
            {
                "spec": {"initContainers": [{"name": "sidecar", "restartPolicy": "Always"}]},
                "status": {
                    "containerStatuses": _containers(_term(T - timedelta(seconds=1))),
                    "initContainerStatuses": [{"name": "sidecar", "state": _term(T)}],
                },
            },
            T,
            id="Pod with sidecar container and all containers terminated",
        ),
    ],
)
def test_finished_time(pod: dict[str, Any], want: datetime) -> None:
    assert finished_time(pod) == want


@pytest.mark.parametrize(
    ("record", "now", "want"),
    [
        pytest.param(BackoffRecord("k", 0), T, 0.0, id="no failures"),
        pytest.param(
            BackoffRecord("k", 1, T),
            T,
            5.0,
            id="one failure; current time and failure time are same",
        ),
        pytest.param(
            BackoffRecord("k", 1, T),
            T + timedelta(seconds=1),
            4.0,
            id="one failure; current time == 1 second + failure time",
        ),
        pytest.param(
            BackoffRecord("k", 1, T),
            T + timedelta(seconds=5),
            0.0,
            id="one failure; current time == expected backoff time",
        ),
        pytest.param(
            BackoffRecord("k", 1, T),
            T + timedelta(seconds=6),
            0.0,
            id="one failure; current time == expected backoff time + 1 Second",
        ),
        pytest.param(
            BackoffRecord("k", 3, T),
            T,
            20.0,
            id="three failures; current time and failure time are same",
        ),
        pytest.param(
            BackoffRecord("k", 8, T),
            T,
            640.0,
            id="eight failures; current time and failure time are same; backoff not exceeding "
            "maxBackoff",
        ),
        pytest.param(
            BackoffRecord("k", 9, T),
            T,
            700.0,
            id="nine failures; current time and failure time are same; backoff exceeding "
            "maxBackoff",
        ),
    ],
)
def test_remaining_backoff_time(record: BackoffRecord, now: datetime, want: float) -> None:
    assert record.remaining_time(now, 5.0, 700.0) == want


def test_default_backoff_is_10s_doubling_capped_at_10_minutes() -> None:
    waits = [BackoffRecord("k", n, T).remaining_time(T) for n in range(1, 10)]
    assert waits == [10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 600.0, 600.0, 600.0]


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(None, 0.0, id="no failures"),
        pytest.param(
            new_pod(phase="Failed", failure_count="2", deleted_at=iso(T)),
            20.0,
            id="two prev failures; current time and failure time are same",
        ),
        pytest.param(
            new_pod(phase="Failed", failure_count="1", ignored_count="1", deleted_at=iso(T)),
            20.0,
            id="one prev failure counted and one ignored; current time and failure time are same",
        ),
    ],
)
def test_remaining_backoff_time_per_index(pod: dict[str, Any] | None, want: float) -> None:
    if pod is not None:
        del pod["status"]["containerStatuses"]  # the finish time comes from the deletion
    assert remaining_time_per_index(T, pod, 5.0, 700.0) == want
