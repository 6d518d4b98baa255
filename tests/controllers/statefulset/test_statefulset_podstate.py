"""Pod states (upstream TestIsRunningAndReady, TestIsRunningAndAvailable, and the phase
predicates' tables)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from statefulset_fixtures import NOW, make_running, new_stateful_set, terminate

from kcontrol.client import Object
from kcontrol.metatime import format_time
from kcontrol_controllers.statefulset._pods import new_stateful_set_pod
from kcontrol_controllers.statefulset._podstate import (
    get_min_ready_seconds,
    is_created,
    is_failed,
    is_healthy,
    is_pending,
    is_running_and_available,
    is_running_and_ready,
    is_succeeded,
    is_terminating,
    is_unavailable,
)


def pod_with(phase: str | None = None, *, ready: bool | None = None, **meta: Any) -> Object:
    pod: Object = {"metadata": {"name": "foo-0", **meta}, "status": {}}
    if phase is not None:
        pod["status"]["phase"] = phase
    if ready is not None:
        pod["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return pod


def test_is_running_and_ready() -> None:
    pod = new_stateful_set_pod(new_stateful_set(3), 1)
    assert not is_running_and_ready(pod), "a pod not created has no phase"
    pod["status"] = {"phase": "Running"}
    assert not is_running_and_ready(pod), "no Ready condition"
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert is_running_and_ready(pod)
    pod["status"]["phase"] = "Pending"
    assert not is_running_and_ready(pod), "ready but not running"


def ready_pod(ready: bool, ready_for_seconds: int) -> Object:
    return make_running(pod_with(), ready=ready, ready_for=timedelta(seconds=ready_for_seconds))


@pytest.mark.parametrize(
    ("ready", "ready_for", "min_ready_seconds", "available"),
    [
        pytest.param(False, 0, 0, False, id="not ready"),
        pytest.param(True, 0, 1, False, id="ready now, minReadySeconds 1"),
        pytest.param(True, 0, 0, True, id="ready now, minReadySeconds 0"),
        pytest.param(True, 51, 50, True, id="ready 51s, minReadySeconds 50"),
        pytest.param(True, 50, 50, True, id="ready exactly minReadySeconds"),
        pytest.param(True, 49, 50, False, id="ready 49s, minReadySeconds 50"),
    ],
)
def test_is_running_and_available(
    ready: bool, ready_for: int, min_ready_seconds: int, available: bool
) -> None:
    pod = ready_pod(ready, ready_for)
    assert is_running_and_available(pod, min_ready_seconds, NOW) is available
    assert is_unavailable(pod, min_ready_seconds, NOW) is not available


def test_available_follows_the_injected_clock() -> None:
    pod = ready_pod(True, 10)
    assert not is_running_and_available(pod, 30, NOW)
    assert is_running_and_available(pod, 30, NOW + timedelta(seconds=20))


def test_available_ignores_the_phase_as_upstream() -> None:
    pod = ready_pod(True, 100)
    pod["status"]["phase"] = "Pending"
    assert is_running_and_available(pod, 10, NOW)
    assert is_unavailable(pod, 10, NOW), "but a pod that is not running is unavailable"


@pytest.mark.parametrize(
    ("phase", "created", "pending", "failed", "succeeded"),
    [
        (None, False, False, False, False),
        ("", False, False, False, False),
        ("Pending", True, True, False, False),
        ("Running", True, False, False, False),
        ("Failed", True, False, True, False),
        ("Succeeded", True, False, False, True),
    ],
)
def test_phases(
    phase: str | None, created: bool, pending: bool, failed: bool, succeeded: bool
) -> None:
    pod = pod_with(phase)
    assert (is_created(pod), is_pending(pod), is_failed(pod), is_succeeded(pod)) == (
        created,
        pending,
        failed,
        succeeded,
    )


def test_is_terminating() -> None:
    assert not is_terminating(pod_with("Running"))
    assert is_terminating(pod_with("Running", deletionTimestamp=format_time(NOW)))
    assert is_terminating(pod_with("Failed", deletionTimestamp=format_time(NOW)))


@pytest.mark.parametrize(
    ("pod", "healthy"),
    [
        pytest.param(pod_with("Running", ready=True), True, id="running and ready"),
        pytest.param(pod_with("Failed", ready=True), False, id="failed"),
        pytest.param(pod_with("Running", ready=False), False, id="not ready"),
        pytest.param(
            pod_with("Running", ready=True, deletionTimestamp=format_time(NOW)),
            False,
            id="terminating",
        ),
    ],
)
def test_is_healthy(pod: Object, healthy: bool) -> None:
    assert is_healthy(pod) is healthy


def test_a_terminating_available_pod_is_unavailable() -> None:
    pod = terminate(ready_pod(True, 100))
    assert is_running_and_available(pod, 0, NOW)
    assert is_unavailable(pod, 0, NOW)


def test_get_min_ready_seconds() -> None:
    set_ = new_stateful_set(1)
    assert get_min_ready_seconds(set_) == 0
    set_["spec"]["minReadySeconds"] = 30
    assert get_min_ready_seconds(set_) == 30
