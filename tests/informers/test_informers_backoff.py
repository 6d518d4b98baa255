"""ExponentialBackoff (wait.NewExponentialBackoffManager)."""

from __future__ import annotations

import random

import pytest

from kcontrol.clock import FakeClock
from kcontrol.informers import ExponentialBackoff


class FixedRandom(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


@pytest.mark.parametrize(
    ("jitter_draw", "expected"),
    [
        pytest.param(0.0, [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0], id="no-jitter"),
        pytest.param(0.5, [1.2, 2.4, 4.8, 9.6, 19.2, 30.0, 30.0, 30.0], id="half-jitter"),
    ],
)
def test_backoff_doubles_from_800ms_and_caps_the_wait_at_30s(
    jitter_draw: float, expected: list[float]
) -> None:
    clock = FakeClock()
    backoff = ExponentialBackoff(clock, rng=FixedRandom(jitter_draw))
    delays = []
    for _ in expected:
        delays.append(round(backoff.next_delay(), 6))
        clock.step(1.0)  # failures keep coming: no reset
    assert delays == expected


def test_backoff_jitter_stays_within_one_base_delay_and_the_cap() -> None:
    clock = FakeClock()
    backoff = ExponentialBackoff(clock, rng=random.Random(7))
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6] + [30.0] * 20
    for base in bases:
        delay = backoff.next_delay()
        assert min(base, 30.0) <= delay < min(2 * base, 30.0 + 1e-9)
        clock.step(1.0)


def test_backoff_resets_after_two_healthy_minutes() -> None:
    clock = FakeClock()
    backoff = ExponentialBackoff(clock, rng=FixedRandom(0.0))
    for _ in range(5):
        backoff.next_delay()
    clock.step(119.0)
    assert backoff.next_delay() == pytest.approx(25.6), "not healthy long enough"
    clock.step(120.5)
    assert backoff.next_delay() == pytest.approx(0.8)


def test_backoff_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="backoff"):
        ExponentialBackoff(FakeClock(), initial=0)
