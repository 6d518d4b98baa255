"""The Job controller's names and defaults: what its ``SPEC`` needs, without the controller."""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_WORKERS", "NAME", "ORPHAN_QUEUE_NAME", "QUEUE_NAME"]

NAME: Final = "job-controller"
"""The controller's name: ``--controllers`` entry and event source."""
QUEUE_NAME: Final = "job"
ORPHAN_QUEUE_NAME: Final = "job_orphan_pod"
DEFAULT_WORKERS: Final = 5
