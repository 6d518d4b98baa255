"""The public surface of kcontrol.workqueue: nothing is exported by accident."""

from __future__ import annotations

import kcontrol.workqueue as workqueue

EXPECTED = {
    "DURATION_BUCKETS",
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "Queue",
    "RateLimiter",
    "RateLimitingQueue",
    "ShutDown",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
}


def test_all_is_the_intended_surface() -> None:
    assert set(workqueue.__all__) == EXPECTED
    assert len(workqueue.__all__) == len(EXPECTED)


def test_every_export_exists_and_is_documented() -> None:
    for name in workqueue.__all__:
        obj = getattr(workqueue, name)
        if callable(obj):
            assert obj.__doc__, f"{name} has no docstring"


def test_no_other_public_names() -> None:
    public = {
        name
        for name in vars(workqueue)
        if not name.startswith("_") and not isinstance(getattr(workqueue, name), type(workqueue))
    }
    assert public == EXPECTED
