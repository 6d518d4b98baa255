"""kcontrol.rollout's public surface is deliberate (CONVENTIONS.md item 3)."""

from __future__ import annotations

import kcontrol.rollout
import kcontrol.rollout.local


def test_public_surface_is_deliberate() -> None:
    assert sorted(kcontrol.rollout.__all__) == [
        "RolloutView",
        "Snapshot",
        "is_new_replicaset",
        "main",
        "render",
        "rollout_status",
        "take_snapshot",
    ]
    assert sorted(kcontrol.rollout.local.__all__) == ["LocalOptions", "main", "run_local"]
