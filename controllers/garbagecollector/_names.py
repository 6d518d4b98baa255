"""The garbage collector's names and defaults: what its ``SPEC`` needs, without the
controller."""

from __future__ import annotations

from typing import Final

__all__ = [
    "ABSENT_OWNER_CACHE_SIZE",
    "ATTEMPT_TO_DELETE_QUEUE",
    "ATTEMPT_TO_ORPHAN_QUEUE",
    "DEFAULT_CONCURRENT_GC_SYNCS",
    "DEFAULT_IGNORED_RESOURCES",
    "EVENT_COMPONENT",
    "GRAPH_CHANGES_QUEUE",
    "NAME",
    "RESOURCES_RESYNC_PERIOD",
]

NAME: Final = "garbage-collector-controller"
"""The controller's name for ``--controllers``, as kube-controller-manager's (alias
``garbagecollector``; its bootstrap RBAC role is
``system:controller:generic-garbage-collector``)."""

EVENT_COMPONENT: Final = "garbage-collector-controller"
"""The source component of the collector's events, as upstream's recorder."""

ATTEMPT_TO_DELETE_QUEUE: Final = "garbage_collector_attempt_to_delete"
"""The queue of nodes to check and maybe delete, named as upstream's (the ``name`` label of
its ``workqueue_*`` metrics)."""

ATTEMPT_TO_ORPHAN_QUEUE: Final = "garbage_collector_attempt_to_orphan"
"""The queue of owners whose dependents are to be orphaned, named as upstream's."""

GRAPH_CHANGES_QUEUE: Final = "garbage_collector_graph_changes"
"""The queue of the monitors' events, applied to the graph one at a time, named as
upstream's."""

DEFAULT_CONCURRENT_GC_SYNCS: Final = 20
"""kube-controller-manager's default ``--concurrent-gc-syncs``: attempt-to-delete workers
(and as many attempt-to-orphan workers)."""

DEFAULT_IGNORED_RESOURCES: Final = frozenset({("", "events"), ("events.k8s.io", "events")})
"""``(group, plural)`` of the resources the collector never watches: v1.36's
``DefaultIgnoredResources`` (kube-controller-manager's ``GCIgnoredResources``)."""

RESOURCES_RESYNC_PERIOD: Final = 30.0
"""Seconds between two discovery reads that re-sync the monitors (upstream's
``ResourceResyncTime``, from kube-controller-manager's ``--resource-resync`` default)."""

ABSENT_OWNER_CACHE_SIZE: Final = 500
"""Entries of the cache of owners known to be absent (upstream's LRU of 500)."""
