"""The controller toolkit: a runner that syncs queued keys with workers, and its helpers.

- :class:`Controller` is the loop every controller needs: wait for informer caches, take keys
  from a rate-limited work queue, call ``sync(key)`` under a timeout, and decide retries in one
  place. Build one from :class:`ControllerOptions`, feed its queue from informer event handlers
  with :meth:`Controller.enqueue_object`, and run it inside a task group (or hand it to
  :mod:`kcontrol.manager`).
- :class:`ControllerRefManager` claims (adopts and releases) the objects a controller owns.
- :class:`ControllerExpectations` / :class:`UIDTrackingControllerExpectations` hold a sync
  back until the creations and deletions it asked for have been observed;
  :class:`ConsistencyStore` holds it back until the informers have seen the controller's own
  last writes (read your own writes), and :func:`superseded` tells a sync that its key was
  queued again meanwhile (:class:`SupersededWrites` leaves out, on that ground, a status
  write the next sync supersedes - never two in a row).
- :class:`PerRegistry` creates a controller's own metric families once per Prometheus
  registry: a manager may build its controllers more than once on one registry (a sharded
  kcontrol-manager does, whenever the shards it holds change).
"""

from kcontrol._registry import PerRegistry
from kcontrol.controller._consistency import (
    ConsistencyStore,
    LastSyncResourceVersion,
    compare_resource_versions,
)
from kcontrol.controller._expectations import (
    EXPECTATIONS_TIMEOUT,
    ControlleeExpectations,
    ControllerExpectations,
    UIDTrackingControllerExpectations,
)
from kcontrol.controller._metrics import RECONCILE_TIME_BUCKETS
from kcontrol.controller._refmanager import (
    CanAdopt,
    CannotAdopt,
    ClaimError,
    ControllerRefManager,
    get_controller_of,
    recheck_deletion_timestamp,
    recheck_owner,
    resolve_controller_ref,
)
from kcontrol.controller._runner import (
    Controller,
    ControllerOptions,
    Result,
    SupersededWrites,
    SyncFunc,
    guarded_by,
    key_func,
    superseded,
)

__all__ = [
    "EXPECTATIONS_TIMEOUT",
    "RECONCILE_TIME_BUCKETS",
    "CanAdopt",
    "CannotAdopt",
    "ClaimError",
    "ConsistencyStore",
    "ControlleeExpectations",
    "Controller",
    "ControllerExpectations",
    "ControllerOptions",
    "ControllerRefManager",
    "LastSyncResourceVersion",
    "PerRegistry",
    "Result",
    "SupersededWrites",
    "SyncFunc",
    "UIDTrackingControllerExpectations",
    "compare_resource_versions",
    "get_controller_of",
    "guarded_by",
    "key_func",
    "recheck_deletion_timestamp",
    "recheck_owner",
    "resolve_controller_ref",
    "superseded",
]
