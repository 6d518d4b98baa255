"""bench/syncs: every controller's fixture converges, so its timed syncs write nothing."""

from __future__ import annotations

import pytest

from bench.syncs import CONTROLLERS, measure


@pytest.mark.parametrize("name", sorted(CONTROLLERS))
async def test_a_converged_object_syncs_without_writing(name: str) -> None:
    # measure() raises when a timed sync writes: the fixture did not converge.
    assert await measure(name, syncs=3, repeat=1, profile=False) > 0
