"""The pod garbage collector's names and defaults: what its ``SPEC`` needs, without the
controller."""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_TERMINATED_POD_GC_THRESHOLD",
    "GC_CHECK_PERIOD",
    "NAME",
    "NODE_QUEUE_NAME",
    "QUARANTINE_TIME",
]

NAME: Final = "pod-garbage-collector-controller"
"""The controller's name for ``--controllers``, as kube-controller-manager's (which also
accepts the alias ``podgc``; its bootstrap RBAC role is
``system:controller:pod-garbage-collector``)."""

NODE_QUEUE_NAME: Final = "orphaned_pods_nodes"
"""The quarantine queue of missing nodes, named as upstream's (the ``name`` label of the
``workqueue_*`` metrics)."""

GC_CHECK_PERIOD: Final = 20.0
"""Upstream's ``gcCheckPeriod``: seconds between two collections (no flag upstream)."""

QUARANTINE_TIME: Final = 40.0
"""Upstream's ``quarantineTime``: seconds a node missing from the node cache waits before a
live GET decides it is gone (no flag upstream)."""

DEFAULT_TERMINATED_POD_GC_THRESHOLD: Final = 12500
"""kube-controller-manager's default ``--terminated-pod-gc-threshold``."""
