"""The Jobs of a CronJob: upstream's utils_test.go TestGetJobFromTemplate2 and
TestByJobStartTime, plus the active list, job names and finished conditions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kcontrol_controllers.cronjob import SCHEDULED_TIMESTAMP_ANNOTATION
from kcontrol_controllers.cronjob._jobs import (
    by_job_start_time,
    delete_from_active_list,
    format_rfc3339,
    in_active_list,
    in_active_list_by_name,
    job_from_template,
    job_name,
    job_reference,
    time_hash_in_minutes,
)
from kcontrol_controllers.cronjob._times import UnknownTimeZone
from kcontrol_controllers.jobutil import finished_condition_type, is_job_finished, is_job_succeeded

TOP = datetime(2016, 5, 19, 10, 0, 0, tzinfo=UTC)


def cron_job(time_zone: str | None = None, annotations: dict[str, str] | None = None) -> Any:
    spec: dict[str, Any] = {
        "schedule": "* * * * ?",
        "concurrencyPolicy": "Allow",
        "jobTemplate": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {
                "activeDeadlineSeconds": 1,
                "manualSelector": False,
                "template": {
                    "metadata": {"labels": {"foo": "bar"}},
                    "spec": {"containers": [{"image": "foo/bar"}]},
                },
            },
        },
    }
    if annotations is not None:
        spec["jobTemplate"]["metadata"]["annotations"] = annotations
    if time_zone is not None:
        spec["timeZone"] = time_zone
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "mycronjob", "namespace": "snazzycats", "uid": "1a2b3c"},
        "spec": spec,
    }


# -- TestGetJobFromTemplate2 ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "time_zone", "annotations", "expected_timestamp", "expected_annotations"),
    [
        ("UTC timezone and one annotation", "UTC", {"x": "y"}, "2016-05-19T10:00:00Z", 2),
        ("nil timezone and one annotation", None, {"x": "y"}, "2016-05-19T10:00:00Z", 2),
        (
            "correct timezone and multiple annotation",
            "Europe/Rome",
            {"x": "y", "z": "x"},
            "2016-05-19T12:00:00+02:00",
            3,
        ),
        # Not upstream's: west of Greenwich, and a zone at offset zero.
        ("negative offset", "America/New_York", None, "2016-05-19T06:00:00-04:00", 1),
        ("zero offset prints Z", "Africa/Abidjan", None, "2016-05-19T10:00:00Z", 1),
    ],
)
def test_job_from_template(
    name: str,
    time_zone: str | None,
    annotations: dict[str, str] | None,
    expected_timestamp: str,
    expected_annotations: int,
) -> None:
    cj = cron_job(time_zone, annotations)
    job = job_from_template(cj, TOP)
    meta = job["metadata"]
    assert meta["name"].startswith("mycronjob-")
    assert meta["labels"] == {"a": "b"}
    assert len(meta["annotations"]) == expected_annotations
    assert meta["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION] == expected_timestamp
    for key, value in (annotations or {}).items():
        assert meta["annotations"][key] == value
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "name": "mycronjob",
            "uid": "1a2b3c",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert meta["creationTimestamp"] == "2016-05-19T10:00:00Z"
    assert job["spec"] == cj["spec"]["jobTemplate"]["spec"]
    # a copy: the Job never shares the template's dicts
    job["spec"]["template"]["metadata"]["labels"]["foo"] = "changed"
    job["metadata"]["labels"]["a"] = "changed"
    assert cj["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"] == {"foo": "bar"}
    assert cj["spec"]["jobTemplate"]["metadata"]["labels"] == {"a": "b"}


def test_job_from_template_refuses_an_unknown_time_zone() -> None:
    with pytest.raises(UnknownTimeZone):
        job_from_template(cron_job("bad timezone"), TOP)


@pytest.mark.parametrize(
    ("name", "scheduled", "minutes", "job"),
    [
        ("on the minute", TOP, 24394200, "mycronjob-24394200"),
        ("seconds are dropped", datetime(2016, 5, 19, 10, 0, 59, tzinfo=UTC), 24394200, None),
        ("the next minute", datetime(2016, 5, 19, 10, 1, tzinfo=UTC), 24394201, None),
        ("the epoch", datetime(1970, 1, 1, tzinfo=UTC), 0, "mycronjob-0"),
    ],
)
def test_job_name_is_the_scheduled_time_in_minutes(
    name: str, scheduled: datetime, minutes: int, job: str | None
) -> None:
    assert time_hash_in_minutes(scheduled) == minutes
    assert job_name(cron_job(), scheduled) == f"mycronjob-{minutes}"
    if job is not None:
        assert job_name(cron_job(), scheduled) == job


def test_format_rfc3339_drops_fractions() -> None:
    moment = datetime(2016, 5, 19, 10, 0, 0, 999999, tzinfo=UTC)
    assert format_rfc3339(moment, UTC) == "2016-05-19T10:00:00Z"


# -- TestByJobStartTime ---------------------------------------------------------------------------


def job(name: str, started: str | None = None) -> dict[str, Any]:
    status = {"startTime": started} if started is not None else {}
    return {"metadata": {"name": name}, "status": status}


NOW = "2018-01-01T02:03:04Z"
LATER = "2019-01-01T02:03:04Z"


@pytest.mark.parametrize(
    ("name", "jobs", "expected"),
    [
        ("both have nil start times", [job("b"), job("a")], [job("a"), job("b")]),
        (
            "only the first has a nil start time",
            [job("a"), job("b", NOW)],
            [job("b", NOW), job("a")],
        ),
        (
            "only the second has a nil start time",
            [job("a", NOW), job("b")],
            [job("a", NOW), job("b")],
        ),
        (
            "both have non-nil, equal start time",
            [job("b", NOW), job("a", NOW)],
            [job("a", NOW), job("b", NOW)],
        ),
        (
            "both have non-nil, different start time",
            [job("a", LATER), job("b", NOW)],
            [job("b", NOW), job("a", LATER)],
        ),
    ],
)
def test_by_job_start_time(
    name: str, jobs: list[dict[str, Any]], expected: list[dict[str, Any]]
) -> None:
    assert by_job_start_time(jobs) == expected


# -- the active list ------------------------------------------------------------------------------


def ref(name: str, uid: str, namespace: str = "snazzycats") -> dict[str, Any]:
    return {"kind": "Job", "namespace": namespace, "name": name, "uid": uid}


def test_active_list_lookups() -> None:
    cj = cron_job()
    assert not in_active_list(cj, "u1")
    cj["status"] = {"active": [ref("j1", "u1"), ref("j2", "u2", namespace="other")]}
    assert in_active_list(cj, "u1")
    assert not in_active_list(cj, "u3")
    assert in_active_list_by_name(cj, "snazzycats", "j1")
    assert not in_active_list_by_name(cj, "snazzycats", "j2")  # another namespace
    assert in_active_list_by_name(cj, "other", "j2")


def test_delete_from_active_list_drops_every_reference_to_the_uid() -> None:
    cj = cron_job()
    cj["status"] = {"active": [ref("j1", "u1"), ref("j2", "u2"), ref("j1-again", "u1")]}
    delete_from_active_list(cj, "u1")
    assert cj["status"]["active"] == [ref("j2", "u2")]
    delete_from_active_list(cj, "u2")
    assert cj["status"]["active"] == []


def test_job_reference_is_an_object_reference() -> None:
    created = {
        "metadata": {"name": "j", "namespace": "ns", "uid": "u", "resourceVersion": "7"},
        "spec": {},
    }
    assert job_reference(created) == {
        "kind": "Job",
        "namespace": "ns",
        "name": "j",
        "uid": "u",
        "apiVersion": "batch/v1",
        "resourceVersion": "7",
    }


# -- finished Jobs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "conditions", "finished", "succeeded"),
    [
        ("no conditions", [], None, False),
        ("complete", [("Complete", "True")], "Complete", True),
        ("failed", [("Failed", "True")], "Failed", False),
        ("complete but false", [("Complete", "False")], None, False),
        ("interim conditions do not finish", [("SuccessCriteriaMet", "True")], None, False),
        (
            "first finished condition wins",
            [("Failed", "True"), ("Complete", "True")],
            "Failed",
            True,
        ),
        ("suspended", [("Suspended", "True")], None, False),
    ],
)
def test_finished_conditions(
    name: str, conditions: list[tuple[str, str]], finished: str | None, succeeded: bool
) -> None:
    job = {"status": {"conditions": [{"type": t, "status": s} for t, s in conditions]}}
    assert finished_condition_type(job) == finished
    assert is_job_finished(job) is (finished is not None)
    assert is_job_succeeded(job) is succeeded
