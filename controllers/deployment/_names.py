"""The Deployment controller's names and defaults: what its ``SPEC`` needs, without the
controller."""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_WORKERS", "MAX_RETRIES", "NAME", "QUEUE_NAME"]

NAME: Final = "deployment-controller"
"""The controller's name: ``--controllers`` entry and event source."""
QUEUE_NAME: Final = "deployment"
"""The work queue's (and the runner's) name, as upstream's."""
MAX_RETRIES: Final = 15
"""Failed syncs of a key before it is dropped out of the queue."""
DEFAULT_WORKERS: Final = 5
