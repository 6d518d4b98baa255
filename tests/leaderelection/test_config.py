"""LeaderElectionConfig validation, as client-go's NewLeaderElector validates."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol.errors import KcontrolError
from kcontrol.leaderelection import (
    InvalidLeaderElectionConfig,
    LeaderElectionConfig,
    LeaseLock,
)
from kcontrol.testing import FakeClient


def _lock(identity: str = "me") -> LeaseLock:
    return LeaseLock(FakeClient(), "ns", "lease", identity)


VALID = [
    pytest.param({}, id="kube-controller-manager-defaults"),
    pytest.param({"lease_duration": 3, "renew_deadline": 2, "retry_period": 0.5}, id="short"),
    pytest.param(
        {"lease_duration": 15, "renew_deadline": 2.41, "retry_period": 2}, id="just-above-jitter"
    ),
    pytest.param(
        {"lease_duration": 1, "renew_deadline": 0.5, "retry_period": 0.1}, id="one-second-lease"
    ),
]

INVALID = [
    pytest.param(
        {"lease_duration": 10, "renew_deadline": 10},
        "greater than renew_deadline",
        id="lease-equals-renew",
    ),
    pytest.param(
        {"lease_duration": 5, "renew_deadline": 10},
        "greater than renew_deadline",
        id="lease-below-renew",
    ),
    pytest.param(
        {"renew_deadline": 2.4, "retry_period": 2},
        "1.2 \\* retry_period",
        id="renew-equals-jittered-retry",
    ),
    pytest.param(
        {"renew_deadline": 3, "retry_period": 3}, "1.2 \\* retry_period", id="renew-equals-retry"
    ),
    pytest.param({"retry_period": 0}, "retry_period must be greater than zero", id="zero-retry"),
    pytest.param(
        {"retry_period": -1}, "retry_period must be greater than zero", id="negative-retry"
    ),
    pytest.param(
        {"renew_deadline": 0}, "renew_deadline must be greater than zero", id="zero-renew"
    ),
    pytest.param(
        {"lease_duration": -15}, "lease_duration must be greater than zero", id="negative-lease"
    ),
    pytest.param(
        {"lease_duration": 0.9, "renew_deadline": 0.5, "retry_period": 0.1},
        "at least 1",
        id="sub-second-lease",
    ),
    pytest.param(
        {"lease_duration": float("nan")}, "lease_duration must be greater than zero", id="nan-lease"
    ),
]


@pytest.mark.parametrize("overrides", VALID)
def test_valid_configs_are_accepted(overrides: dict[str, Any]) -> None:
    config = LeaderElectionConfig(lock=_lock(), **overrides)
    assert config.lease_duration > config.renew_deadline > 1.2 * config.retry_period > 0


@pytest.mark.parametrize(("overrides", "message"), INVALID)
def test_invalid_configs_are_rejected(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidLeaderElectionConfig, match=message) as caught:
        LeaderElectionConfig(lock=_lock(), **overrides)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, KcontrolError)


def test_empty_identity_is_rejected() -> None:
    with pytest.raises(InvalidLeaderElectionConfig, match="identity is empty"):
        LeaderElectionConfig(lock=_lock(""))


def test_defaults_are_kube_controller_manager_s() -> None:
    config = LeaderElectionConfig(lock=_lock())
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (15, 10, 2)
    assert config.release_on_cancel is True
    assert config.metric_name == "ns/lease"
    assert LeaderElectionConfig(lock=_lock(), name="kcm").metric_name == "kcm"


@pytest.mark.parametrize(
    ("lease_duration", "seconds"),
    [
        pytest.param(15, 15, id="whole"),
        pytest.param(2.5, 3, id="fraction-rounds-up"),
        pytest.param(1.001, 2, id="just-above-a-second"),
        pytest.param(0.1 * 30, 3, id="float-noise-is-not-a-fraction"),
    ],
)
def test_lease_duration_seconds_is_never_below_the_configured_duration(
    lease_duration: float, seconds: int
) -> None:
    """The Lease holds whole seconds; a standby waits what it says, so it must not be less
    than the duration the leader's renew deadline was checked against."""
    config = LeaderElectionConfig(
        lock=_lock(), lease_duration=lease_duration, renew_deadline=0.9, retry_period=0.1
    )
    assert config.lease_duration_seconds == seconds
    assert config.lease_duration_seconds >= config.lease_duration - 1e-9
