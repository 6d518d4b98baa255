"""Counting every finished pod exactly once: the ``batch.kubernetes.io/job-tracking``
finalizer and ``status.uncountedTerminatedPods``.

The controller puts the finalizer on every pod it creates (and on every orphan it adopts), so a
finished pod cannot disappear before the controller has seen it. Counting one is a three-step
protocol that survives a crash, a restart or a change of leader between any two steps:

1. write the pod's UID into ``status.uncountedTerminatedPods.succeeded`` (or ``failed``) -
   for an Indexed Job that succeeded, writing its index into ``completedIndexes`` is enough;
2. remove the pod's finalizer;
3. move every UID whose pod no longer has the finalizer from the uncounted lists into the
   ``succeeded`` / ``failed`` counters (:func:`clean_uncounted_pods_without_finalizers`).

A pod without the finalizer is never counted again; a UID in the uncounted lists is never
written twice. Between steps 2 and 3 the informer may still show the finalizer:
:class:`FinalizerExpectations` remembers which removals the controller is waiting to observe,
so those pods are treated as finalizer-free meanwhile. Ports of ``tracking_utils.go`` and the
uncounted-pods helpers of ``job_controller.go``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Set
from dataclasses import dataclass
from typing import Any

from kcontrol.logging import get_logger

from ._spec import JOB_TRACKING_FINALIZER, meta

__all__ = [
    "FinalizerExpectations",
    "UncountedTerminatedPods",
    "clean_uncounted_pods_without_finalizers",
    "has_tracking_finalizer",
    "is_finished_pod_with_tracking_finalizer",
    "remove_tracking_finalizer_patch",
    "uid_of",
]

_log = get_logger(__name__)


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("uid") or "")


def has_tracking_finalizer(pod: Mapping[str, Any]) -> bool:
    """Whether the pod still carries :data:`~._spec.JOB_TRACKING_FINALIZER`."""
    return JOB_TRACKING_FINALIZER in (meta(pod).get("finalizers") or ())


def is_finished_pod_with_tracking_finalizer(pod: Mapping[str, Any] | None) -> bool:
    """A ``Succeeded`` or ``Failed`` pod that still has the finalizer (what the metric
    ``job_controller_terminated_pods_tracking_finalizer_total`` follows)."""
    if pod is None:
        return False
    return (pod.get("status") or {}).get("phase") in (
        "Succeeded",
        "Failed",
    ) and has_tracking_finalizer(pod)


def remove_tracking_finalizer_patch(pod: Mapping[str, Any]) -> dict[str, Any] | None:
    """The strategic-merge patch that removes the finalizer, or ``None`` if the pod has none
    (nothing to send)."""
    if not has_tracking_finalizer(pod):
        return None
    return {"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}}


@dataclass(frozen=True, slots=True)
class UncountedTerminatedPods:
    """The UIDs in ``status.uncountedTerminatedPods`` when the sync started."""

    succeeded: frozenset[str]
    failed: frozenset[str]

    @classmethod
    def from_status(cls, job_status: Mapping[str, Any]) -> UncountedTerminatedPods:
        uncounted = job_status.get("uncountedTerminatedPods") or {}
        return cls(
            frozenset(str(uid) for uid in uncounted.get("succeeded") or ()),
            frozenset(str(uid) for uid in uncounted.get("failed") or ()),
        )


def _filter_in(uids: Iterable[str], include: Set[str]) -> list[str]:
    return [uid for uid in uids if uid in include]


def clean_uncounted_pods_without_finalizers(
    job_status: MutableMapping[str, Any], uids_with_finalizer: Set[str]
) -> bool:
    """Step 3 of the protocol: drop from ``status.uncountedTerminatedPods`` the UIDs whose pods
    no longer have the finalizer (or are gone), adding them to ``succeeded`` / ``failed``.
    Modifies ``job_status`` (whose ``uncountedTerminatedPods`` must be a dict of lists);
    returns whether anything changed."""
    updated = False
    uncounted = job_status["uncountedTerminatedPods"]
    for field in ("succeeded", "failed"):
        before = list(uncounted.get(field) or ())
        after = _filter_in(before, uids_with_finalizer)
        if len(after) != len(before):
            updated = True
            job_status[field] = int(job_status.get(field) or 0) + len(before) - len(after)
            uncounted[field] = after
    return updated


class FinalizerExpectations:
    """Per Job key, the UIDs of the pods whose finalizer removal the controller sent and the
    informer has not shown yet (upstream ``uidTrackingExpectations``).

    Such a pod may still show the finalizer in the cache; while its UID is expected it counts
    as already processed, so it is neither counted nor patched twice. Belongs to one event
    loop, like the other expectations.
    """

    __slots__ = ("_uids",)

    def __init__(self) -> None:
        self._uids: dict[str, set[str]] = {}

    def expected_uids(self, key: str) -> frozenset[str]:
        """The UIDs still expected for ``key`` (a snapshot)."""
        return frozenset(self._uids.get(key, ()))

    def expect_finalizers_removed(self, key: str, uids: Iterable[str]) -> None:
        """Add ``uids`` to those expected for ``key``."""
        self._uids.setdefault(key, set()).update(uids)

    def finalizer_removal_observed(self, key: str, uid: str) -> None:
        """The informer showed the pod ``uid`` without the finalizer (or gone), or the removal
        failed and will not be observed."""
        uids = self._uids.get(key)
        if uids is not None and uid in uids:
            _log.debug("observed tracking finalizer removed", key=key, pod_uid=uid)
            uids.discard(uid)

    def delete_expectations(self, key: str) -> None:
        """Forget ``key`` (the Job is gone)."""
        self._uids.pop(key, None)
