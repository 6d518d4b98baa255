"""What one sync of a Job knows: upstream's ``syncJobCtx``, shared by the steps of the sync
(deciding the outcome, managing pods, tracking the status)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kcontrol.client import Object

from ._backoff import BackoffRecord
from ._indexed import OrderedIntervals
from ._tracking import UncountedTerminatedPods

__all__ = ["SyncContext"]


@dataclass(slots=True, kw_only=True)
class SyncContext:
    """The state of one sync. ``job`` is the sync's own copy of the Job (the steps write its
    status); ``pods`` are the pods it owns after claiming, ``active_pods`` those neither
    finished nor terminating.

    ``succeeded`` / ``failed`` count the Job's pods including those finished since the last
    status write (pod failure policy ``Ignore`` failures left out); ``ready`` and
    ``terminating`` are the current counts, lowered as the sync deletes pods.
    ``finished_condition`` is the condition the Job will end with, once set.
    """

    key: str
    job: dict[str, Any]
    pods: list[Object]
    active_pods: list[Object]
    uncounted: UncountedTerminatedPods
    expected_removed_finalizers: frozenset[str]
    new_backoff_record: BackoffRecord
    ready: int = 0
    terminating: int = 0
    succeeded: int = 0
    failed: int = 0
    finished_condition: dict[str, Any] | None = None
    prev_succeeded_indexes: OrderedIntervals = field(default_factory=OrderedIntervals)
    succeeded_indexes: OrderedIntervals = field(default_factory=OrderedIntervals)
    failed_indexes: OrderedIntervals | None = None
    pods_with_delayed_deletion_per_index: dict[int, Object] = field(default_factory=dict)
