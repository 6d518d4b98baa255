"""Completion indexes and their interval lists: upstream's indexed_job_utils_test.go."""

from __future__ import annotations

from typing import Any

import pytest
from job_fixtures import NO_INDEX, WALL, ago, hollow_pods, index_phases, new_job, new_pod, ts

from kcontrol_controllers.job._indexed import (
    OrderedIntervals,
    add_completion_index,
    add_completion_index_env_variables,
    add_index_failure_count_annotations,
    calculate_failed_indexes,
    calculate_succeeded_indexes,
    completion_index,
    first_pending_indexes,
    index_failure_count,
    is_index_failed,
    new_index_failure_counts,
    parse_indexes,
    pod_generate_name_with_index,
    pods_for_removal_by_index,
    pods_with_delayed_deletion_per_index,
)
from kcontrol_controllers.podutil import filter_active_pods


def iv(*pairs: tuple[int, int]) -> OrderedIntervals:
    return OrderedIntervals(tuple(pairs))


# -- formatting and parsing ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("intervals", "text"),
    [
        pytest.param(iv(), "", id="empty"),
        pytest.param(iv((0, 0)), "0", id="one index"),
        pytest.param(iv((1, 2)), "1,2", id="two consecutive indexes are listed"),
        pytest.param(iv((1, 1), (3, 5)), "1,3-5", id="an index and a range"),
        pytest.param(iv((0, 2), (4, 4), (6, 7), (9, 20)), "0-2,4,6,7,9-20", id="mixed"),
    ],
)
def test_intervals_are_written_as_upstream(intervals: OrderedIntervals, text: str) -> None:
    assert str(intervals) == text


@pytest.mark.parametrize(
    ("text", "completions", "want"),
    [
        pytest.param("", 10, iv(), id="empty"),
        pytest.param("1,3-5", 10, iv((1, 1), (3, 5)), id="index and range"),
        pytest.param("0-5,8-10", 8, iv((0, 5)), id="interval out of range dropped"),
        pytest.param("0-5,8-10", 10, iv((0, 5), (8, 9)), id="interval clipped to completions"),
        pytest.param("0,1-foo,bar", 4, iv((0, 0)), id="corrupted parts ignored"),
        pytest.param("1,2,3", 10, iv((1, 3)), id="adjacent indexes joined"),
        pytest.param("invalid-form", 10, iv(), id="not a number"),
    ],
)
def test_parse_indexes(text: str, completions: int, want: OrderedIntervals) -> None:
    assert parse_indexes(text, completions) == want


def test_parse_format_round_trip() -> None:
    for text in ("0", "0,1", "0-2", "1,3-5,7,8,10-12"):
        assert str(parse_indexes(text, 100)) == text


# -- TestCalculateSucceededIndexes ----------------------------------------------------------------

S, F, R, P = "Succeeded", "Failed", "Running", "Pending"


@pytest.mark.parametrize(
    ("prev", "pods", "completions", "want_status", "want"),
    [
        pytest.param("", [("1", S)], 2, iv(), iv((1, 1)), id="one index"),
        pytest.param(
            "",
            [("2", F), ("5", S), ("5", S), ("10", F), ("10", S)],
            11,
            iv(),
            iv((5, 5), (10, 10)),
            id="two separate",
        ),
        pytest.param(
            "",
            [("0", R), ("1", P), ("2", S), ("3", S), ("5", S), ("6", S), ("7", S)],
            8,
            iv(),
            iv((2, 3), (5, 7)),
            id="two intervals",
        ),
        pytest.param(
            "",
            [("0", S), ("1", F), ("2", S), ("3", S), ("4", S), ("5", S), (NO_INDEX, S), ("-2", S)],
            6,
            iv(),
            iv((0, 0), (2, 5)),
            id="one index and one interval",
        ),
        pytest.param(
            "",
            [("0", S), ("1", S), ("2", S), ("3", F), ("4", S), ("5", S), (NO_INDEX, S), ("-2", S)],
            5,
            iv(),
            iv((0, 2), (4, 4)),
            id="out of range",
        ),
        pytest.param("0-5,8-10", [], 8, iv((0, 5)), iv((0, 5)), id="prev interval out of range"),
        pytest.param(
            "0-5,8-10",
            [],
            10,
            iv((0, 5), (8, 9)),
            iv((0, 5), (8, 9)),
            id="prev interval partially out of range",
        ),
        pytest.param(
            "0,4,5,10-12",
            [("2", S), ("7", S), ("8", S)],
            13,
            iv((0, 0), (4, 5), (10, 12)),
            iv((0, 0), (2, 2), (4, 5), (7, 8), (10, 12)),
            id="prev and new separate",
        ),
        pytest.param(
            "3,4,6",
            [("2", S), ("7", S), ("8", S)],
            9,
            iv((3, 4), (6, 6)),
            iv((2, 4), (6, 8)),
            id="prev between new",
        ),
        pytest.param(
            "2,7,8",
            [("3", S), ("4", S), ("6", S)],
            9,
            iv((2, 2), (7, 8)),
            iv((2, 4), (6, 8)),
            id="new between prev",
        ),
        pytest.param(
            "2-7",
            [("0", S), ("3", S), ("5", S), ("9", S)],
            10,
            iv((2, 7)),
            iv((0, 0), (2, 7), (9, 9)),
            id="new within prev",
        ),
        pytest.param(
            "0,1-foo,bar",
            [("3", S)],
            4,
            iv((0, 0)),
            iv((0, 0), (3, 3)),
            id="corrupted interval",
        ),
    ],
)
def test_calculate_succeeded_indexes(
    prev: str,
    pods: list[tuple[str, str]],
    completions: int,
    want_status: OrderedIntervals,
    want: OrderedIntervals,
) -> None:
    job = new_job(completions=completions)
    job["status"] = {"completedIndexes": prev}
    hollow = hollow_pods(pods)
    for pod in hollow:
        pod["metadata"]["finalizers"] = ["batch.kubernetes.io/job-tracking"]
    assert calculate_succeeded_indexes(job, hollow) == (want_status, want)


def test_succeeded_pods_without_finalizer_are_counted_already() -> None:
    job = new_job(completions=3)
    pods = [new_pod("a", job, "Succeeded", index="1", finalizer=False)]
    assert calculate_succeeded_indexes(job, pods)[1] == iv()


# -- TestIsIndexFailed / TestCalculateFailedIndexes -----------------------------------------------

FAIL_INDEX_ON_3 = {
    "rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}}]
}


@pytest.mark.parametrize(
    ("spec", "pod", "want"),
    [
        pytest.param(
            {"backoffLimitPerIndex": 0},
            new_pod(phase="Failed", index="0", failure_count="0"),
            True,
            id="failed pod exceeding backoffLimitPerIndex, when backoffLimitPerIndex=0",
        ),
        pytest.param(
            {"backoffLimitPerIndex": 1},
            new_pod(phase="Failed", index="1", failure_count="1"),
            True,
            id="failed pod exceeding backoffLimitPerIndex, when backoffLimitPerIndex=1",
        ),
        pytest.param(
            {"backoffLimitPerIndex": 1},
            new_pod(phase="Failed", index="1", failure_count="0"),
            False,
            id="failed pod within backoffLimitPerIndex",
        ),
        pytest.param(
            {"backoffLimitPerIndex": 1, "podFailurePolicy": FAIL_INDEX_ON_3},
            new_pod(phase="Failed", index="0", failure_count="0", exit_code=3),
            True,
            id="matching FailIndex pod failure policy",
        ),
        pytest.param(
            {
                "backoffLimitPerIndex": 0,
                "podFailurePolicy": {
                    "rules": [
                        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}}
                    ]
                },
            },
            new_pod(phase="Failed", index="0", failure_count="0", exit_code=3),
            False,
            id="ignored failure does not fail the index",
        ),
    ],
)
def test_is_index_failed(spec: dict[str, Any], pod: dict[str, Any], want: bool) -> None:
    job = new_job(completions=2, completion_mode="Indexed", **spec)
    assert is_index_failed(job, pod) is want


@pytest.mark.parametrize(
    ("limit", "failed_status", "pods", "want"),
    [
        pytest.param(
            1,
            None,
            [
                new_pod("a", phase="Failed", index="0", failure_count="0"),
                new_pod("b", phase="Failed", index="1", failure_count="1"),
            ],
            iv((1, 1)),
            id="one new index failed",
        ),
        pytest.param(
            0,
            None,
            [new_pod("a", phase="Failed", index="0", failure_count="0", finalizer=False)],
            iv(),
            id="pod without finalizer is ignored",
        ),
        pytest.param(
            0,
            None,
            [new_pod("a", phase="Failed", index="3", failure_count="0", finalizer=False)],
            iv(),
            id="pod outside completions is ignored",
        ),
        pytest.param(
            0,
            "0",
            [new_pod("a", phase="Failed", index="1", failure_count="0")],
            iv((0, 1)),
            id="extend the failed indexes",
        ),
        pytest.param(
            0,
            "",
            [new_pod("a", phase="Failed", index="1", failure_count="0")],
            iv((1, 1)),
            id="prev failed indexes empty",
        ),
        pytest.param(
            0,
            "9",
            [new_pod("a", phase="Failed", index="1", failure_count="0")],
            iv((1, 1)),
            id="prev failed indexes outside the completions",
        ),
    ],
)
def test_calculate_failed_indexes(
    limit: int, failed_status: str | None, pods: list[Any], want: OrderedIntervals
) -> None:
    job = new_job(completions=2, completion_mode="Indexed", backoffLimitPerIndex=limit)
    if failed_status is not None:
        job["status"] = {"failedIndexes": failed_status}
    assert calculate_failed_indexes(job, pods) == want


# -- TestGetPodsWithDelayedDeletionPerIndex -------------------------------------------------------


@pytest.mark.parametrize(
    ("completions", "limit", "pods", "expected_removed", "want"),
    [
        pytest.param(
            3,
            1,
            [
                new_pod("a", phase="Failed", index="0", failure_count="0"),
                new_pod("b", phase="Failed", index="1", failure_count="1"),
                new_pod("c", phase="Failed", index="2", failure_count="0"),
            ],
            frozenset(),
            ["a", "c"],
            id="failed pods are kept corresponding to non-failed indexes are kept",
        ),
        pytest.param(
            2,
            0,
            [new_pod("a", phase="Failed", index="0", failure_count="0", finalizer=False)],
            frozenset(),
            [],
            id="failed pod without finalizer; the pod's deletion is not delayed as it already "
            "started",
        ),
        pytest.param(
            2,
            0,
            [new_pod("a", phase="Failed", index="0", failure_count="0")],
            frozenset({"a"}),
            [],
            id="failed pod with expected finalizer removal; the pod's deletion is not delayed "
            "as it already started",
        ),
        pytest.param(
            2,
            0,
            [new_pod("a", phase="Failed", index="4", failure_count="0")],
            frozenset(),
            [],
            id="failed pod with index outside of completions; the pod's deletion is not delayed",
        ),
        pytest.param(
            2,
            1,
            [
                new_pod("a1", phase="Failed", index="0", failure_count="0"),
                new_pod("a2", phase="Running", index="0", failure_count="1"),
            ],
            frozenset(),
            [],
            id="failed pod for active index; the pod's deletion is not delayed as it is already "
            "replaced",
        ),
        pytest.param(
            2,
            1,
            [
                new_pod("a1", phase="Failed", index="0", failure_count="0"),
                new_pod("a2", phase="Succeeded", index="0", failure_count="1"),
            ],
            frozenset(),
            [],
            id="failed pod for succeeded index; the pod's deletion is not delayed as it is "
            "already replaced",
        ),
        pytest.param(
            2,
            4,
            [
                new_pod("a1", phase="Failed", index="0", failure_count="0"),
                new_pod("a3", phase="Failed", index="0", failure_count="2"),
                new_pod("a2", phase="Failed", index="0", failure_count="1"),
            ],
            frozenset(),
            ["a3"],
            id="multiple failed pods for index with different failure count; only the pod with "
            "highest failure count is kept",
        ),
        pytest.param(
            2,
            4,
            [
                new_pod("a1", phase="Failed", index="0", failure_count="1", deleted_at=ts(WALL)),
                new_pod("a3", phase="Failed", index="0", failure_count="1", deleted_at=ts(WALL)),
                new_pod("a2", phase="Failed", index="0", failure_count="1", deleted_at=ts(WALL)),
            ],
            frozenset(),
            ["a2"],
            id="equal failure counts and finish times: the last one wins",
        ),
    ],
)
def test_pods_with_delayed_deletion_per_index(
    completions: int,
    limit: int,
    pods: list[Any],
    expected_removed: frozenset[str],
    want: list[str],
) -> None:
    job = new_job(completions=completions, completion_mode="Indexed", backoffLimitPerIndex=limit)
    _, succeeded = calculate_succeeded_indexes(job, pods)
    failed = calculate_failed_indexes(job, pods)
    got = pods_with_delayed_deletion_per_index(
        job,
        pods,
        active_pods=filter_active_pods(pods),
        succeeded=succeeded,
        failed=failed,
        expected_removed=expected_removed,
    )
    assert sorted(p["metadata"]["uid"] for p in got.values()) == want


def test_delayed_deletion_keeps_the_last_failed_pod() -> None:
    """upstream: multiple failed pods for index with different finish times; only the last
    failed pod is kept."""
    job = new_job(completions=2, completion_mode="Indexed", backoffLimitPerIndex=4)
    pods = [
        new_pod("a1", phase="Failed", index="0", failure_count="1", finished_at=ago(1)),
        new_pod("a3", phase="Failed", index="0", failure_count="1", finished_at=ago(0)),
        new_pod("a2", phase="Failed", index="0", failure_count="1", finished_at=ago(2)),
    ]
    got = pods_with_delayed_deletion_per_index(
        job, pods, active_pods=[], succeeded=iv(), failed=iv()
    )
    assert [p["metadata"]["uid"] for p in got.values()] == ["a3"]


# -- TestGetNewIndexFailureCountValue --------------------------------------------------------------

IGNORE_DISRUPTION = {
    "rules": [
        {
            "action": "Ignore",
            "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
        }
    ]
}


@pytest.mark.parametrize(
    ("spec", "pod", "want"),
    [
        pytest.param({}, None, (0, 0), id="first pod created"),
        pytest.param(
            {},
            new_pod("a", phase="Failed", index="0", failure_count="0"),
            (1, 0),
            id="failed pod being replaced with 0 index failure count",
        ),
        pytest.param(
            {},
            new_pod("a", phase="Failed", index="0", failure_count="3"),
            (4, 0),
            id="failed pod being replaced with >0 index failure count",
        ),
        pytest.param(
            {"podFailurePolicy": IGNORE_DISRUPTION},
            new_pod(
                "a",
                phase="Failed",
                index="3",
                failure_count="3",
                conditions=[{"type": "DisruptionTarget", "status": "True"}],
            ),
            (3, 1),
            id="failed pod being replaced, matching the ignore rule",
        ),
    ],
)
def test_new_index_failure_counts(
    spec: dict[str, Any], pod: dict[str, Any] | None, want: tuple[int, int]
) -> None:
    job = new_job(completion_mode="Indexed", **spec)
    assert new_index_failure_counts(job, pod) == want


def test_failure_count_annotations_of_a_replacement() -> None:
    job = new_job(completion_mode="Indexed", podFailurePolicy=IGNORE_DISRUPTION)
    replaced = new_pod(
        "a",
        phase="Failed",
        index="3",
        failure_count="2",
        conditions=[{"type": "DisruptionTarget", "status": "True"}],
    )
    template: dict[str, Any] = {"metadata": {"annotations": {}}}
    add_index_failure_count_annotations(template, job, replaced)
    assert template["metadata"]["annotations"] == {
        "batch.kubernetes.io/job-index-failure-count": "2",
        "batch.kubernetes.io/job-index-ignored-failure-count": "1",
    }
    template = {}
    add_index_failure_count_annotations(template, job, None)
    assert template["metadata"]["annotations"] == {
        "batch.kubernetes.io/job-index-failure-count": "0"
    }


# -- TestIntervalsHaveIndex -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("intervals", "index", "want"),
    [
        pytest.param(iv(), 4, False, id="empty"),
        pytest.param(iv((2, 4), (5, 7)), 1, False, id="before all"),
        pytest.param(iv((2, 4), (6, 8)), 9, False, id="after all"),
        pytest.param(iv((2, 4), (6, 8)), 5, False, id="in between"),
        pytest.param(iv((2, 4), (6, 8)), 2, True, id="in first"),
        pytest.param(iv((2, 4), (6, 8)), 8, True, id="in second"),
    ],
)
def test_intervals_have_index(intervals: OrderedIntervals, index: int, want: bool) -> None:
    assert intervals.has(index) is want


# -- TestFirstPendingIndexes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "completions", "active", "succeeded", "failed", "want"),
    [
        pytest.param(5, 3, [], iv(), None, [0, 1, 2], id="cnt greater than completions"),
        pytest.param(2, 5, [], iv(), None, [0, 1], id="cnt less than completions"),
        pytest.param(3, 10, [("0", R), ("1", P)], iv(), None, [2, 3, 4], id="first pods active"),
        pytest.param(
            6, 6, [("6", P)], iv((4, 5)), None, [0, 1, 2, 3], id="last pods active or succeeded"
        ),
        pytest.param(
            5,
            20,
            [("3", P), ("5", R), ("8", P), (NO_INDEX, R), ("-3", R)],
            iv((2, 4), (9, 9)),
            None,
            [0, 1, 6, 7, 10],
            id="mixed",
        ),
        pytest.param(
            5,
            20,
            [("3", P), ("9", P)],
            iv((1, 1), (5, 5), (9, 9)),
            iv((2, 2), (6, 7)),
            [0, 4, 8, 10, 11],
            id="with failed indexes",
        ),
    ],
)
def test_first_pending_indexes(
    count: int,
    completions: int,
    active: list[tuple[str, str]],
    succeeded: OrderedIntervals,
    failed: OrderedIntervals | None,
    want: list[int],
) -> None:
    got = first_pending_indexes(
        count, completions, active_pods=hollow_pods(active), succeeded=succeeded, failed=failed
    )
    assert got == want


def test_first_pending_indexes_skip_terminating_when_replacing_only_failed() -> None:
    got = first_pending_indexes(
        2, 5, active_pods=[], succeeded=iv(), failed=None, terminating_pods=hollow_pods([("0", R)])
    )
    assert got == [1, 2]


# -- TestAppendDuplicatedIndexPodsForRemoval ------------------------------------------------------


@pytest.mark.parametrize(
    ("pods", "want_rm", "want_left"),
    [
        pytest.param(
            [(NO_INDEX, P), ("2", P), ("5", R), ("6", R)],
            [(NO_INDEX, P), ("6", R)],
            [("2", P), ("5", R)],
            id="all unique",
        ),
        pytest.param(
            [("5", P), ("0", R), ("3", P), ("0", R), ("3", R), ("0", P), ("6", R), ("6", P)],
            [("0", P), ("0", R), ("3", P), ("6", R), ("6", P)],
            [("0", R), ("3", R), ("5", P)],
            id="all with index",
        ),
        pytest.param(
            [(NO_INDEX, P), ("invalid", R), ("-2", R), ("0", P), ("1", P), ("1", P), ("1", R)],
            [(NO_INDEX, P), ("invalid", R), ("-2", R), ("1", P), ("1", P)],
            [("0", P), ("1", R)],
            id="mixed",
        ),
    ],
)
def test_pods_for_removal_by_index(
    pods: list[tuple[str, str]], want_rm: list[tuple[str, str]], want_left: list[tuple[str, str]]
) -> None:
    remove, keep = pods_for_removal_by_index(hollow_pods(pods), 6)
    assert index_phases(remove) == want_rm
    assert index_phases(keep) == want_left


# -- names, annotations, env ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job_name", "want"),
    [
        pytest.param("indexed-job", "indexed-job-1-", id="short job name"),
        pytest.param(
            "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooo",
            "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhh-1-",
            id="job name exceeds MaxGeneneratedNameLength",
        ),
        pytest.param(
            "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhoo",
            "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhh-1-",
            id="job name with index suffix exceeds MaxGeneratedNameLength",
        ),
    ],
)
def test_pod_generate_name_with_index(job_name: str, want: str) -> None:
    assert pod_generate_name_with_index(job_name, 1) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param(None, 0, id="no annotation"),
        pytest.param("2", 2, id="valid value"),
        pytest.param(str(2**31 - 1), 2**31 - 1, id="valid maxint32 value"),
        pytest.param(str(2**31), 0, id="too large value"),
        pytest.param("-1", 0, id="negative value"),
        pytest.param("xyz", 0, id="invalid int value"),
    ],
)
def test_index_failure_count(value: str | None, want: int) -> None:
    assert index_failure_count(new_pod(failure_count=value)) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("3", 3, id="valid"),
        pytest.param(None, -1, id="missing"),
        pytest.param("-2", -1, id="negative"),
        pytest.param("x", -1, id="not a number"),
        pytest.param(" 3", -1, id="spaces"),
    ],
)
def test_completion_index(value: str | None, want: int) -> None:
    assert completion_index(new_pod(index=value)) == want


def test_index_goes_into_annotation_label_hostname_and_env() -> None:
    template: dict[str, Any] = {
        "metadata": {"labels": {"foo": "bar"}},
        "spec": {
            "initContainers": [{"name": "init"}],
            "containers": [
                {"name": "c"},
                {"name": "d", "env": [{"name": "JOB_COMPLETION_INDEX", "value": "mine"}]},
            ],
        },
    }
    add_completion_index_env_variables(template)
    add_completion_index(template, 4, "job")
    from_label = {
        "name": "JOB_COMPLETION_INDEX",
        "valueFrom": {
            "fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}
        },
    }
    assert template["spec"]["initContainers"][0]["env"] == [from_label]
    assert template["spec"]["containers"][0]["env"] == [from_label]
    assert template["spec"]["containers"][1]["env"] == [
        {"name": "JOB_COMPLETION_INDEX", "value": "mine"}
    ]
    assert template["metadata"]["annotations"] == {"batch.kubernetes.io/job-completion-index": "4"}
    assert template["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "4"
    assert template["spec"]["hostname"] == "job-4"
