"""The replication controller's names and defaults: what its ``SPEC`` needs, without the
controller."""

from __future__ import annotations

from ..replicaset._names import BURST_REPLICAS

__all__ = ["BURST_REPLICAS", "EVENT_SOURCE", "NAME", "QUEUE_NAME"]

NAME = "replicationcontroller-controller"
"""The controller's name for ``--controllers`` (kube-controller-manager's)."""

EVENT_SOURCE = "replication-controller"
"""The source of its events (upstream's ``EventSource{Component: "replication-controller"}``,
also the name of its bootstrap role and service account)."""

QUEUE_NAME = "replicationmanager"
"""The work queue's name (the ``name`` label of the ``workqueue_*`` metrics), upstream's."""
