"""The ReplicaSet controller's names and defaults: what its ``SPEC`` needs, without the
controller."""

from __future__ import annotations

__all__ = ["BURST_REPLICAS", "NAME", "QUEUE_NAME"]

NAME = "replicaset-controller"
"""The controller's name for ``--controllers``, and the source of its events."""

QUEUE_NAME = "replicaset"
"""The work queue's name (the ``name`` label of the ``workqueue_*`` metrics)."""

BURST_REPLICAS = 500
"""The most pods one sync creates or deletes (upstream ``BurstReplicas``)."""
