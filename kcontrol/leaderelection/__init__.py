"""Leader election on a ``coordination.k8s.io/v1`` Lease (client-go ``tools/leaderelection``).

::

    lock = LeaseLock(client, "kube-system", "my-controller", identity=f"{host}_{uuid4()}")
    elector = LeaderElector(LeaderElectionConfig(lock=lock, name="my-controller"))
    await elector.run(run_controllers)   # returns/raises only when leadership ends

The guarded work (``run_controllers``) runs only while this process leads and is cancelled,
and awaited, before leadership is given up; a failed renewal raises :class:`LeadershipLost`.
"""

from kcontrol.leaderelection._config import (
    JITTER_FACTOR,
    InvalidLeaderElectionConfig,
    LeaderCallbacks,
    LeaderElectionConfig,
    validate_timings,
)
from kcontrol.leaderelection._elector import LeaderElector, LeadershipLost
from kcontrol.leaderelection._healthz import HealthzAdaptor
from kcontrol.leaderelection._lock import LeaseLock, LockNotInitialized, ResourceLock
from kcontrol.leaderelection._options import LeaderElectionOptions
from kcontrol.leaderelection._record import LeaderElectionRecord
from kcontrol.leaderelection._sharded import (
    ELECTION_LABEL,
    ShardedElection,
    ShardedElectionConfig,
    ShardWork,
    shard_lease_name,
    wait_for_no_shards,
)
from kcontrol.leaderelection._shardset import ShardSet, server_filters_shards

__all__ = [
    "ELECTION_LABEL",
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
    "ShardSet",
    "ShardWork",
    "ShardedElection",
    "ShardedElectionConfig",
    "server_filters_shards",
    "shard_lease_name",
    "validate_timings",
    "wait_for_no_shards",
]
