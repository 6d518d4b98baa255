"""Rate limiters, after client-go's default_rate_limiters_test.go, as named table cases."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from kcontrol.clock import FakeClock
from kcontrol.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
)

MS = 0.001


@dataclass(frozen=True)
class Step:
    """One call on a limiter and what it must return."""

    call: str  # "when", "num_requeues" or "forget"
    item: Any
    expect: float | int | None = None


def when(item: Any, expect: float) -> Step:
    return Step("when", item, expect)


def requeues(item: Any, expect: int) -> Step:
    return Step("num_requeues", item, expect)


def forget(item: Any) -> Step:
    return Step("forget", item)


@dataclass(frozen=True)
class Case:
    name: str
    limiter: Callable[[], RateLimiter[Any]]
    steps: list[Step]


CASES = [
    Case(
        "exponential doubles per item and forget resets",
        lambda: ItemExponentialFailureRateLimiter(1 * MS, 1.0),
        [
            when("one", 1 * MS),
            when("one", 2 * MS),
            when("one", 4 * MS),
            when("one", 8 * MS),
            when("one", 16 * MS),
            requeues("one", 5),
            when("two", 1 * MS),
            when("two", 2 * MS),
            requeues("two", 2),
            forget("one"),
            requeues("one", 0),
            when("one", 1 * MS),
            requeues("never-seen", 0),
        ],
    ),
    Case(
        "exponential is capped at max",
        lambda: ItemExponentialFailureRateLimiter(1 * MS, 10 * MS),
        [when("x", 1 * MS), when("x", 2 * MS), when("x", 4 * MS), when("x", 8 * MS)]
        + [when("x", 10 * MS)] * 3,
    ),
    Case(
        "fast then slow per item",
        lambda: ItemFastSlowRateLimiter(5 * MS, 10.0, 3),
        [
            when("one", 5 * MS),
            when("one", 5 * MS),
            when("one", 5 * MS),
            when("one", 10.0),
            when("one", 10.0),
            requeues("one", 5),
            when("two", 5 * MS),
            when("two", 5 * MS),
            requeues("two", 2),
            forget("one"),
            requeues("one", 0),
            when("one", 5 * MS),
        ],
    ),
    Case(
        "max of takes the longest wait and the most requeues",
        lambda: MaxOfRateLimiter(
            ItemFastSlowRateLimiter(5 * MS, 3.0, 3),
            ItemExponentialFailureRateLimiter(1 * MS, 1.0),
        ),
        [
            when("one", 5 * MS),
            when("one", 5 * MS),
            when("one", 5 * MS),
            when("one", 3.0),
            when("one", 3.0),
            requeues("one", 5),
            when("two", 5 * MS),
            when("two", 5 * MS),
            requeues("two", 2),
            forget("one"),
            requeues("one", 0),
            when("one", 5 * MS),
        ],
    ),
    Case(
        "max of nothing waits zero",
        MaxOfRateLimiter,
        [when("x", 0.0), requeues("x", 0), forget("x")],
    ),
    Case(
        "with max wait caps the wrapped limiter",
        lambda: WithMaxWaitRateLimiter(ItemFastSlowRateLimiter(5 * MS, 1000.0, 2), 500.0),
        [when("x", 5 * MS), when("x", 5 * MS), when("x", 500.0), requeues("x", 3)],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_limiter(case: Case) -> None:
    limiter = case.limiter()
    for i, step in enumerate(case.steps):
        result = getattr(limiter, step.call)(step.item)
        if step.call == "forget":
            continue
        assert result == pytest.approx(step.expect, abs=1e-12), f"step {i}: {step}"


@pytest.mark.parametrize(
    ("base", "max_delay", "warmup", "expect"),
    [
        pytest.param(1 * MS, 1000.0, 5, 32 * MS, id="6th failure of 1ms base"),
        pytest.param(1 * MS, 1000.0, 1000, 1000.0, id="1000 failures cap at max"),
        pytest.param(60.0, 1000 * 3600.0, 2, 240.0, id="3rd failure of 1min base"),
        pytest.param(60.0, 1000 * 3600.0, 1000, 1000 * 3600.0, id="overflow returns max"),
        pytest.param(1 * MS, 1000.0, 5000, 1000.0, id="float overflow returns max"),
    ],
)
def test_exponential_overflow(base: float, max_delay: float, warmup: int, expect: float) -> None:
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(
        base, max_delay
    )
    for _ in range(warmup):
        limiter.when("x")
    assert limiter.when("x") == pytest.approx(expect)
    assert limiter.num_requeues("x") == warmup + 1


def test_bucket_allows_a_burst_then_spreads_at_qps() -> None:
    clock = FakeClock()
    limiter: BucketRateLimiter[str] = BucketRateLimiter(10, 3, clock=clock)
    # The bucket starts full: a burst of 3 passes at once, for any items.
    assert [limiter.when(item) for item in "abc"] == [0.0, 0.0, 0.0]
    # Then each reservation waits 1/qps longer than the one before.
    assert limiter.when("a") == pytest.approx(0.1)
    assert limiter.when("a") == pytest.approx(0.2)
    assert limiter.num_requeues("a") == 0
    limiter.forget("a")  # items are not tracked: no effect
    # After 0.3 s the two reserved tokens are paid back and one is free again.
    clock.step(0.3)
    assert limiter.when("b") == pytest.approx(0.0, abs=1e-9)
    assert limiter.when("b") == pytest.approx(0.1)
    # A long idle period refills at most `burst` tokens.
    clock.step(100)
    assert [limiter.when("c") for _ in range(4)] == pytest.approx([0, 0, 0, 0.1], abs=1e-9)


def test_bucket_with_infinite_qps_never_waits() -> None:
    limiter: BucketRateLimiter[str] = BucketRateLimiter(float("inf"), 1, clock=FakeClock())
    assert [limiter.when("x") for _ in range(1000)] == [0.0] * 1000


@pytest.mark.parametrize(("qps", "burst"), [(0, 1), (-1, 1), (1, 0), (float("nan"), 1)])
def test_bucket_rejects_bad_parameters(qps: float, burst: int) -> None:
    with pytest.raises(ValueError):
        BucketRateLimiter(qps, burst)


def test_default_controller_rate_limiter() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock=clock)
    # Per item: 5 ms doubling.
    assert [limiter.when("a") for _ in range(4)] == pytest.approx([0.005, 0.010, 0.020, 0.040])
    assert limiter.num_requeues("a") == 4
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    # Overall: 100 retries pass (4 already used), then 10 per second.
    for i in range(96):
        assert limiter.when(("burst", i)) == pytest.approx(0.005)
    assert limiter.when("over-burst") == pytest.approx(0.1)
    assert limiter.when("over-burst-2") == pytest.approx(0.2)
    # The per-item cap is 1000 s.
    for _ in range(40):
        limiter.when("stuck")
    assert limiter.when("stuck") == pytest.approx(1000.0)
