"""Indexed Jobs: completion indexes, the interval lists of ``status.completedIndexes`` and
``status.failedIndexes``, and the per-index failure counts of ``backoffLimitPerIndex``. A port
of ``indexed_job_utils.go``.

An index list is written as upstream writes it: ascending, comma-separated, a run of three or
more consecutive indexes as ``first-last`` and a run of two as ``a,b`` (``"1,3-5,7,8"``).
Parsing ignores malformed parts and clips to ``completions``.

Each pod of an Indexed Job carries its index in the annotation (and label)
``batch.kubernetes.io/job-completion-index``, in its hostname (``<job>-<index>``) and, through
the downward API, in the environment variable ``JOB_COMPLETION_INDEX``. With
``backoffLimitPerIndex`` a replacement pod also carries how many pods of its index failed
before it (``batch.kubernetes.io/job-index-failure-count``; failures a pod failure policy
ignored in ``...-index-ignored-failure-count``): the count travels from pod to pod, so the
failed pod is kept (its finalizer stays) until its replacement exists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kcontrol.client import Object
from kcontrol.logging import get_logger

from ..activepods import sort_active_pods
from ._pod_failure_policy import FAIL_INDEX, match_pod_failure_policy
from ._pods import finished_time, is_pod_failed, is_pod_succeeded
from ._spec import (
    COMPLETION_INDEX_ANNOTATION,
    INDEX_FAILURE_COUNT_ANNOTATION,
    INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
    backoff_limit_per_index,
    completions,
    meta,
    pod_failure_policy,
    status,
)
from ._tracking import has_tracking_finalizer, uid_of

__all__ = [
    "COMPLETION_INDEX_ENV_NAME",
    "UNKNOWN_COMPLETION_INDEX",
    "OrderedIntervals",
    "add_completion_index",
    "add_completion_index_env_variables",
    "add_index_failure_count_annotations",
    "calculate_failed_indexes",
    "calculate_succeeded_indexes",
    "completion_index",
    "first_pending_indexes",
    "index_absolute_failure_count",
    "index_failure_count",
    "indexes_of",
    "is_index_failed",
    "new_index_failure_counts",
    "parse_indexes",
    "pod_generate_name_with_index",
    "pods_for_removal_by_index",
    "pods_with_delayed_deletion_per_index",
    "sort_by_completion_index",
]

_log = get_logger(__name__)

COMPLETION_INDEX_ENV_NAME: Final = "JOB_COMPLETION_INDEX"
UNKNOWN_COMPLETION_INDEX: Final = -1
_MAX_INT32: Final = 2**31 - 1
_MAX_GENERATED_NAME_LENGTH: Final = 58  # 63 minus the 5 random characters the server adds


@dataclass(frozen=True, slots=True)
class OrderedIntervals:
    """Disjoint, non-adjacent, ascending closed intervals ``(first, last)`` of indexes."""

    intervals: tuple[tuple[int, int], ...] = ()

    def __len__(self) -> int:
        return len(self.intervals)

    def __iter__(self) -> Any:
        return iter(self.intervals)

    def total(self) -> int:
        """How many indexes the intervals hold."""
        return sum(last - first + 1 for first, last in self.intervals)

    def has(self, index: int) -> bool:
        """Whether ``index`` is in one of the intervals (binary search)."""
        lo, hi = 0, len(self.intervals)
        while hi > lo:
            mid = lo + (hi - lo) // 2
            if self.intervals[mid][1] >= index:
                hi = mid
            else:
                lo = mid + 1
        return hi < len(self.intervals) and self.intervals[hi][0] <= index

    def merge(self, other: OrderedIntervals) -> OrderedIntervals:
        """The union with ``other``, merging overlapping and adjacent intervals."""
        result: list[list[int]] = []

        def append(interval: tuple[int, int]) -> None:
            if not result or interval[0] > result[-1][1] + 1:
                result.append([interval[0], interval[1]])
            elif result[-1][1] < interval[1]:
                result[-1][1] = interval[1]

        mine, theirs = self.intervals, other.intervals
        i = j = 0
        while i < len(mine) and j < len(theirs):
            if mine[i][0] < theirs[j][0]:
                append(mine[i])
                i += 1
            else:
                append(theirs[j])
                j += 1
        for interval in mine[i:]:
            append(interval)
        for interval in theirs[j:]:
            append(interval)
        return OrderedIntervals(tuple((first, last) for first, last in result))

    def with_ordered_indexes(self, indexes: Iterable[int]) -> OrderedIntervals:
        """The union with ``indexes`` (given in ascending order)."""
        return self.merge(OrderedIntervals(tuple((index, index) for index in indexes)))

    def __str__(self) -> str:
        parts: list[str] = []
        for first, last in self.intervals:
            if last == first:
                parts.append(str(first))
            elif last == first + 1:
                parts.append(f"{first},{last}")
            else:
                parts.append(f"{first}-{last}")
        return ",".join(parts)


def _atoi(text: str) -> int | None:
    """Go's ``strconv.Atoi``: an optional sign and decimal digits, nothing else."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    return int(text)


def parse_indexes(text: str, total: int) -> OrderedIntervals:
    """The intervals written in ``text`` that lie below ``total`` (the Job's completions).

    Parts that are not numbers are skipped (logged); parsing stops at the first interval
    starting at or beyond ``total``, and an interval reaching past it is clipped. Adjacent
    intervals are joined.
    """
    if not text:
        return OrderedIntervals()
    result: list[list[int]] = []
    for part in text.split(","):
        limits = part.split("-")
        first = _atoi(limits[0])
        if first is None:
            _log.info("corrupted indexes interval, ignoring", interval=part)
            continue
        if first >= total:
            break
        if len(limits) > 1:
            last = _atoi(limits[1])
            if last is None:
                _log.info("corrupted indexes interval, ignoring", interval=part)
                continue
            last = min(last, total - 1)
        else:
            last = first
        if result and result[-1][1] == first - 1:
            result[-1][1] = last
        else:
            result.append([first, last])
    return OrderedIntervals(tuple((first, last) for first, last in result))


# -- the index of a pod ---------------------------------------------------------------------------


def completion_index(pod: Mapping[str, Any]) -> int:
    """The pod's completion index from its annotation; :data:`UNKNOWN_COMPLETION_INDEX` when
    missing, malformed or negative."""
    value = (meta(pod).get("annotations") or {}).get(COMPLETION_INDEX_ANNOTATION)
    if not isinstance(value, str):
        return UNKNOWN_COMPLETION_INDEX
    index = _atoi(value)
    if index is None or index < 0:
        return UNKNOWN_COMPLETION_INDEX
    return index


def _valid_index(pod: Mapping[str, Any], job: Mapping[str, Any]) -> int | None:
    index = completion_index(pod)
    if index == UNKNOWN_COMPLETION_INDEX or index >= (completions(job) or 0):
        return None
    return index


def indexes_of(pods: Iterable[Mapping[str, Any]]) -> set[int]:
    """The known completion indexes of ``pods``."""
    return {ix for pod in pods if (ix := completion_index(pod)) != UNKNOWN_COMPLETION_INDEX}


def sort_by_completion_index(pods: Sequence[Object]) -> list[Object]:
    """``pods`` by completion index (unknown first), stable."""
    return sorted(pods, key=completion_index)


# -- succeeded and failed indexes ------------------------------------------------------------------


def calculate_succeeded_indexes(
    job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]
) -> tuple[OrderedIntervals, OrderedIntervals]:
    """``status.completedIndexes`` as parsed, and that plus the indexes of the succeeded pods
    not counted yet (those still carrying the finalizer)."""
    total = completions(job) or 0
    previous = parse_indexes(str(status(job).get("completedIndexes") or ""), total)
    new = {
        index
        for pod in pods
        if is_pod_succeeded(pod)
        and has_tracking_finalizer(pod)
        and (index := _valid_index(pod, job)) is not None
    }
    return previous, previous.with_ordered_indexes(sorted(new))


def calculate_failed_indexes(
    job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]
) -> OrderedIntervals:
    """``status.failedIndexes`` plus the indexes that failed since (see
    :func:`is_index_failed`) among the pods not counted yet."""
    total = completions(job) or 0
    failed_text = status(job).get("failedIndexes")
    previous = parse_indexes(str(failed_text), total) if failed_text is not None else None
    new = {
        index
        for pod in pods
        if has_tracking_finalizer(pod)
        and (index := _valid_index(pod, job)) is not None
        and is_index_failed(job, pod)
    }
    return (previous or OrderedIntervals()).with_ordered_indexes(sorted(new))


def is_index_failed(job: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Whether ``pod``'s failure fails its index: a ``FailIndex`` rule matched, or the failure
    counts and the index already failed ``backoffLimitPerIndex`` times before."""
    counted = False
    if is_pod_failed(pod, job):
        policy = pod_failure_policy(job)
        if policy is not None:
            match = match_pod_failure_policy(policy, pod)
            if match.action == FAIL_INDEX:
                return True
            counted = match.count_failed
        else:
            counted = True
    return counted and index_failure_count(pod) >= (backoff_limit_per_index(job) or 0)


# -- pending indexes and pods to remove ------------------------------------------------------------


def first_pending_indexes(
    count: int,
    total: int,
    *,
    active_pods: Iterable[Mapping[str, Any]],
    succeeded: OrderedIntervals,
    failed: OrderedIntervals | None,
    terminating_pods: Iterable[Mapping[str, Any]] = (),
) -> list[int]:
    """The first ``count`` indexes below ``total`` that no active pod holds and that neither
    succeeded nor failed; with ``terminating_pods`` (replacements wait for ``Failed``),
    indexes whose pod is still terminating are not pending either."""
    if count == 0:
        return []
    non_pending = succeeded.with_ordered_indexes(sorted(indexes_of(active_pods)))
    non_pending = non_pending.with_ordered_indexes(sorted(indexes_of(terminating_pods)))
    if failed is not None:
        non_pending = non_pending.merge(failed)
    result: list[int] = []
    candidate = 0
    for first, last in non_pending:
        while candidate < total and len(result) < count and candidate < first:
            result.append(candidate)
            candidate += 1
        candidate = max(candidate, last + 1)
    while candidate < total and len(result) < count:
        result.append(candidate)
        candidate += 1
    return result


def pods_for_removal_by_index(
    pods: Sequence[Object], total: int
) -> tuple[list[Object], list[Object]]:
    """Split active ``pods`` into those to remove and those to keep: pods without an index or
    with one at or beyond ``total`` are removed, and of several pods with the same index all
    but the one that would be deleted last are removed (upstream
    ``appendDuplicatedIndexPodsForRemoval``)."""
    unknown: list[Object] = []
    beyond: list[Object] = []
    duplicates: list[Object] = []
    keep: list[Object] = []
    by_index: dict[int, list[Object]] = {}
    for pod in sort_by_completion_index(pods):
        index = completion_index(pod)
        if index == UNKNOWN_COMPLETION_INDEX:
            unknown.append(pod)
        elif index >= total:
            beyond.append(pod)
        else:
            by_index.setdefault(index, []).append(pod)
    for index in sorted(by_index):
        ordered = sort_active_pods(by_index[index])
        duplicates.extend(ordered[:-1])
        keep.append(ordered[-1])
    remove = unknown + duplicates + beyond
    return remove, keep


# -- failure counts per index ----------------------------------------------------------------------


def _parse_int32(value: str) -> int:
    parsed = _atoi(value)
    if parsed is None:
        _log.error("failed to parse the value", value=value)
        return 0
    if parsed < 0 or parsed > _MAX_INT32:
        _log.info("the value is invalid", value=parsed)
        return 0
    return parsed


def _annotation_count(pod: Mapping[str, Any], key: str) -> int:
    value = (meta(pod).get("annotations") or {}).get(key)
    return _parse_int32(value) if isinstance(value, str) else 0


def index_failure_count(pod: Mapping[str, Any]) -> int:
    """The pod's ``job-index-failure-count`` annotation (0 when missing or invalid)."""
    return _annotation_count(pod, INDEX_FAILURE_COUNT_ANNOTATION)


def index_absolute_failure_count(pod: Mapping[str, Any]) -> int:
    """Failures of the pod's index before it, counted and ignored alike."""
    return index_failure_count(pod) + _annotation_count(pod, INDEX_IGNORED_FAILURE_COUNT_ANNOTATION)


def new_index_failure_counts(
    job: Mapping[str, Any], pod_being_replaced: Mapping[str, Any] | None
) -> tuple[int, int]:
    """The failure counts (counted, ignored) of the pod replacing ``pod_being_replaced`` (the
    index's last failed pod; ``None``: the index never failed)."""
    if pod_being_replaced is None:
        return 0, 0
    counted = index_failure_count(pod_being_replaced)
    ignored = _annotation_count(pod_being_replaced, INDEX_IGNORED_FAILURE_COUNT_ANNOTATION)
    policy = pod_failure_policy(job)
    if policy is not None and not match_pod_failure_policy(policy, pod_being_replaced).count_failed:
        ignored += 1
    else:
        counted += 1
    return counted, ignored


def add_index_failure_count_annotations(
    template: MutableMapping[str, Any],
    job: Mapping[str, Any],
    pod_being_replaced: Mapping[str, Any] | None,
) -> None:
    """Write the failure-count annotations of a replacement pod into its ``template`` (the
    ignored count only when non-zero)."""
    counted, ignored = new_index_failure_counts(job, pod_being_replaced)
    annotations = template.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[INDEX_FAILURE_COUNT_ANNOTATION] = str(counted)
    if ignored > 0:
        annotations[INDEX_IGNORED_FAILURE_COUNT_ANNOTATION] = str(ignored)


def pods_with_delayed_deletion_per_index(
    job: Mapping[str, Any],
    pods: Iterable[Object],
    *,
    active_pods: Iterable[Mapping[str, Any]],
    succeeded: OrderedIntervals,
    failed: OrderedIntervals | None,
    expected_removed: frozenset[str] = frozenset(),
) -> dict[int, Object]:
    """For each index that needs a replacement, its last failed pod, whose finalizer stays
    until the replacement (which copies its failure count) exists.

    Only pods not counted yet (finalizer, no removal pending) with a valid index count;
    indexes that succeeded, failed, or have an active pod need no replacement. Of several
    failed pods of one index, the one with the highest failure count that finished last wins.
    """
    active = indexes_of(active_pods)
    chosen: dict[int, Object] = {}
    for pod in pods:
        if not has_tracking_finalizer(pod) or uid_of(pod) in expected_removed:
            continue
        if not is_pod_failed(pod, job):
            continue
        index = _valid_index(pod, job)
        if index is None:
            continue
        if succeeded.has(index) or (failed is not None and failed.has(index)) or index in active:
            continue
        previous = chosen.get(index)
        if previous is None or (
            index_absolute_failure_count(previous) <= index_absolute_failure_count(pod)
            and not finished_time(pod) < finished_time(previous)
        ):
            chosen[index] = pod
    return chosen


# -- creating pods for an index --------------------------------------------------------------------


def add_completion_index_env_variables(template: MutableMapping[str, Any]) -> None:
    """Give every (init) container of ``template`` the ``JOB_COMPLETION_INDEX`` variable, read
    through the downward API from the pod's index label, unless it declares one already."""
    pod_spec = template.setdefault("spec", {})
    for field in ("initContainers", "containers"):
        for container in pod_spec.get(field) or ():
            env = container.setdefault("env", [])
            if any(var.get("name") == COMPLETION_INDEX_ENV_NAME for var in env):
                continue
            env.append(
                {
                    "name": COMPLETION_INDEX_ENV_NAME,
                    "valueFrom": {
                        "fieldRef": {
                            "fieldPath": f"metadata.labels['{COMPLETION_INDEX_ANNOTATION}']"
                        }
                    },
                }
            )


def add_completion_index(template: MutableMapping[str, Any], index: int, job_name: str) -> None:
    """Mark the pod ``template`` for ``index``: annotation, label and hostname."""
    template_meta = template.setdefault("metadata", {})
    template_meta.setdefault("annotations", {})[COMPLETION_INDEX_ANNOTATION] = str(index)
    template_meta.setdefault("labels", {})[COMPLETION_INDEX_ANNOTATION] = str(index)
    template.setdefault("spec", {})["hostname"] = f"{job_name}-{index}"


def pod_generate_name_with_index(job_name: str, index: int) -> str:
    """``<job>-<index>-``, the job name cut so the prefix stays a valid generated name."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > _MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[: _MAX_GENERATED_NAME_LENGTH - len(suffix)] + suffix
    return prefix
