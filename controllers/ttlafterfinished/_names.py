"""The TTL-after-finished controller's names and defaults: what its ``SPEC`` needs, without
the controller."""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_WORKERS", "NAME", "QUEUE_NAME"]

NAME: Final = "ttl-after-finished-controller"
"""The controller's name for ``--controllers`` (and upstream's event source)."""

QUEUE_NAME: Final = "ttl_jobs_to_delete"
"""The work queue's name, as upstream's (the ``name`` label of the ``workqueue_*`` metrics)."""

DEFAULT_WORKERS: Final = 5
"""kube-controller-manager's default ``--concurrent-ttl-after-finished-syncs``."""
