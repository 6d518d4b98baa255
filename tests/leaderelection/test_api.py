"""The public surface of kcontrol.leaderelection: nothing is exported by accident."""

from __future__ import annotations

import kcontrol.leaderelection as leaderelection

EXPECTED = {
    "JITTER_FACTOR",
    "HealthzAdaptor",
    "InvalidLeaderElectionConfig",
    "LeaderCallbacks",
    "LeaderElectionConfig",
    "LeaderElectionOptions",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeadershipLost",
    "LeaseLock",
    "LockNotInitialized",
    "ResourceLock",
    "validate_timings",
    # the sharded election
    "ELECTION_LABEL",
    "ShardSet",
    "ShardWork",
    "ShardedElection",
    "ShardedElectionConfig",
    "server_filters_shards",
    "shard_lease_name",
    "wait_for_no_shards",
}


def test_all_is_the_intended_surface() -> None:
    assert set(leaderelection.__all__) == EXPECTED
    assert len(leaderelection.__all__) == len(EXPECTED)


def test_every_export_exists_and_classes_are_documented() -> None:
    for name in leaderelection.__all__:
        obj = getattr(leaderelection, name)
        if isinstance(obj, type):
            assert obj.__doc__, f"{name} has no docstring"


def test_no_other_public_names() -> None:
    public = {
        name
        for name in vars(leaderelection)
        if not name.startswith("_")
        and not isinstance(getattr(leaderelection, name), type(leaderelection))
    }
    assert public == EXPECTED
