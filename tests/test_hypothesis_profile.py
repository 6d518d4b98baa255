"""The property tests' settings cannot fail on a slow machine and reproduce their failures."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings


@pytest.mark.skipif(
    os.environ.get("HYPOTHESIS_PROFILE", "ci") != "ci", reason="another profile was asked for"
)
def test_default_profile_is_deterministic_and_has_no_speed_checks() -> None:
    active = settings.default
    assert active.deadline is None
    assert HealthCheck.too_slow in active.suppress_health_check
    assert active.derandomize, "a failing example must come back on the next run"
