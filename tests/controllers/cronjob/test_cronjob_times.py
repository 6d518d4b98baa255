"""The schedule maths: upstream's utils_test.go tables TestMostRecentScheduleTime,
TestNextScheduleTime and TestNextScheduleTimeDuration, and formatSchedule, plus the
daylight-saving and rounding cases a port can get wrong."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kcontrol_controllers.cronjob._schedule import parse_standard
from kcontrol_controllers.cronjob._times import (
    NEXT_SCHEDULE_DELTA,
    InvalidSchedule,
    MissedSchedules,
    UnknownTimeZone,
    format_schedule,
    load_location,
    most_recent_schedule_time,
    next_schedule_time,
    next_schedule_time_duration,
)

TOP = datetime(2016, 5, 19, 10, 0, 0, tzinfo=UTC)
"""upstream ``topOfTheHour()``: a Thursday."""


def after_top(**delta: float) -> datetime:
    """upstream ``deltaTimeAfterTopOfTheHour``."""
    return TOP + timedelta(**delta)


def ts(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cron_job(
    schedule: str,
    *,
    created: datetime = TOP,
    last: datetime | None = None,
    deadline: int | None = None,
    time_zone: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedule": schedule}
    if deadline is not None:
        spec["startingDeadlineSeconds"] = deadline
    if time_zone is not None:
        spec["timeZone"] = time_zone
    status: dict[str, Any] = {}
    if last is not None:
        status["lastScheduleTime"] = ts(last)
    return {
        "metadata": {"name": "mycronjob", "namespace": "default", "creationTimestamp": ts(created)},
        "spec": spec,
        "status": status,
    }


# -- TestMostRecentScheduleTime -------------------------------------------------------------------


@dataclass
class MostRecentCase:
    name: str
    cron_job: dict[str, Any]
    now: datetime
    expected_earliest: datetime | None = None
    expected_recent: datetime | None = None
    expected_missed: MissedSchedules = MissedSchedules.NONE
    include_sds: bool = False
    want_err: bool = False


MOST_RECENT = [
    MostRecentCase(
        "now before next schedule",
        cron_job("0 * * * *"),
        now=after_top(seconds=30),
        expected_earliest=TOP,
    ),
    MostRecentCase(
        "now just after next schedule",
        cron_job("0 * * * *"),
        now=after_top(minutes=61),
        expected_recent=after_top(minutes=60),
        expected_earliest=TOP,
    ),
    MostRecentCase(
        "missed 5 schedules",
        cron_job("0 * * * *", created=after_top(seconds=10)),
        now=after_top(minutes=301),
        expected_recent=after_top(minutes=300),
        expected_earliest=after_top(seconds=10),
        expected_missed=MissedSchedules.FEW,
    ),
    MostRecentCase(
        "complex schedule",
        cron_job("30 6-16/4 * * 1-5", last=after_top(minutes=30)),
        now=after_top(hours=24, minutes=31),
        expected_recent=after_top(hours=24, minutes=30),
        expected_earliest=after_top(minutes=30),
        expected_missed=MissedSchedules.FEW,
    ),
    MostRecentCase(
        "another complex schedule",
        cron_job("30 10,11,12 * * 1-5", last=after_top(minutes=30)),
        now=after_top(hours=30, minutes=30),
        expected_recent=None,
        expected_earliest=after_top(minutes=30),
        expected_missed=MissedSchedules.FEW,
    ),
    MostRecentCase(
        "complex schedule with longer diff between executions",
        cron_job("30 6-16/4 * * 1-5", last=after_top(minutes=30)),
        now=after_top(hours=96, minutes=31),
        expected_recent=after_top(hours=96, minutes=30),
        expected_earliest=after_top(minutes=30),
        expected_missed=MissedSchedules.FEW,
    ),
    MostRecentCase(
        "complex schedule with shorter diff between executions",
        cron_job("30 6-16/4 * * 1-5"),
        now=after_top(hours=24, minutes=31),
        expected_recent=after_top(hours=24, minutes=30),
        expected_earliest=TOP,
        expected_missed=MissedSchedules.FEW,
    ),
    MostRecentCase(
        "@every schedule",
        cron_job(
            "@every 1h", created=after_top(minutes=-59), last=after_top(minutes=1), deadline=10
        ),
        now=after_top(days=7),
        expected_recent=after_top(days=6, hours=23, minutes=1),
        expected_earliest=after_top(minutes=1),
        expected_missed=MissedSchedules.MANY,
    ),
    MostRecentCase(
        "rogue cronjob",
        cron_job("59 23 31 2 *", created=after_top(seconds=10)),
        now=after_top(hours=1),
        want_err=True,
    ),
    MostRecentCase(
        "earliestTime being CreationTimestamp and LastScheduleTime",
        cron_job("0 * * * *", last=TOP),
        now=after_top(seconds=30),
        expected_earliest=TOP,
    ),
    MostRecentCase(
        "earliestTime being LastScheduleTime",
        cron_job("*/5 * * * *", last=after_top(minutes=30)),
        now=after_top(minutes=31),
        expected_earliest=after_top(minutes=30),
    ),
    MostRecentCase(
        "earliestTime being LastScheduleTime (within StartingDeadlineSeconds)",
        cron_job("*/5 * * * *", last=after_top(minutes=30), deadline=60),
        now=after_top(minutes=31),
        expected_earliest=after_top(minutes=30),
    ),
    MostRecentCase(
        "earliestTime being LastScheduleTime (outside StartingDeadlineSeconds)",
        cron_job("*/5 * * * *", last=after_top(minutes=30), deadline=60),
        include_sds=True,
        now=after_top(minutes=32),
        expected_earliest=after_top(minutes=31),
    ),
    # Not upstream's: the count of missed activations and its bound.
    MostRecentCase(
        "exactly 100 missed is few",
        cron_job("0 * * * *", last=TOP),
        now=after_top(hours=100, minutes=30),
        expected_earliest=TOP,
        expected_recent=after_top(hours=100),
        expected_missed=MissedSchedules.FEW,
    ),
    MostRecentCase(
        "101 missed is many",
        cron_job("0 * * * *", last=TOP),
        now=after_top(hours=101, minutes=30),
        expected_earliest=TOP,
        expected_recent=after_top(hours=101),
        expected_missed=MissedSchedules.MANY,
    ),
    MostRecentCase(
        "the starting deadline is ignored unless asked for",
        cron_job("*/5 * * * *", last=after_top(minutes=30), deadline=60),
        now=after_top(minutes=36),
        expected_earliest=after_top(minutes=30),
        expected_recent=after_top(minutes=35),
    ),
    MostRecentCase(
        "now exactly at the activation counts it",
        cron_job("0 * * * *"),
        now=after_top(hours=1),
        expected_earliest=TOP,
        expected_recent=after_top(hours=1),
    ),
]


@pytest.mark.parametrize("case", MOST_RECENT, ids=lambda c: c.name)
def test_most_recent_schedule_time(case: MostRecentCase) -> None:
    schedule = parse_standard(case.cron_job["spec"]["schedule"])
    if case.want_err:
        with pytest.raises(InvalidSchedule, match="less than 1 second"):
            most_recent_schedule_time(case.cron_job, case.now, schedule, case.include_sds)
        return
    found = most_recent_schedule_time(case.cron_job, case.now, schedule, case.include_sds)
    assert found.earliest == case.expected_earliest
    assert found.most_recent == case.expected_recent
    assert found.missed is case.expected_missed


# -- TestNextScheduleTime -------------------------------------------------------------------------

T1 = TOP
T2 = after_top(hours=1)


@dataclass
class NextCase:
    name: str
    created: datetime
    now: datetime
    last: datetime | None = None
    deadline: int | None = None
    schedule: str = "0 * * * ?"
    expected: datetime | None = None
    expected_any: bool = False
    want_err: bool = False
    too_many_missed: bool = False


NEXT = [
    NextCase(
        "no known start times, and none needed yet",
        created=T1 - timedelta(minutes=10),
        now=T1 - timedelta(minutes=7),
    ),
    NextCase(
        "no known start times, and one needed",
        created=T1 - timedelta(minutes=10),
        now=T1 + timedelta(seconds=2),
        expected=T1,
    ),
    NextCase(
        "known LastScheduleTime, no start needed",
        created=T1 - timedelta(minutes=10),
        last=T1,
        now=T1 + timedelta(minutes=2),
    ),
    NextCase(
        "known LastScheduleTime, a start needed",
        created=T1 - timedelta(minutes=10),
        last=T1,
        now=T2 + timedelta(minutes=5),
        expected=T2,
    ),
    NextCase(
        "known LastScheduleTime, two starts needed",
        created=T1 - timedelta(hours=2),
        last=T1 - timedelta(hours=1),
        now=T2 + timedelta(minutes=5),
        expected=T2,
    ),
    NextCase(
        "now is way way ahead of last start time, and there is no deadline",
        created=T1 - timedelta(hours=2),
        last=T1 - timedelta(hours=1),
        now=T2 + timedelta(days=10),
        expected_any=True,
        too_many_missed=True,
    ),
    NextCase(
        "now is way way ahead of last start time, but there is a short deadline",
        created=T1 - timedelta(hours=2),
        last=T1 - timedelta(hours=1),
        now=T2 + timedelta(days=10),
        deadline=2 * 60 * 60,
        expected_any=True,
    ),
    NextCase(
        "ensure the error from mostRecentScheduleTime gets populated up",
        created=T1 + timedelta(seconds=10),
        now=after_top(hours=1),
        schedule="59 23 31 2 *",
        want_err=True,
    ),
]


@pytest.mark.parametrize("case", NEXT, ids=lambda c: c.name)
def test_next_schedule_time(case: NextCase) -> None:
    cj = cron_job(case.schedule, created=case.created, last=case.last, deadline=case.deadline)
    schedule = parse_standard(case.schedule)
    if case.want_err:
        with pytest.raises(InvalidSchedule):
            next_schedule_time(cj, case.now, schedule)
        return
    scheduled, too_many = next_schedule_time(cj, case.now, schedule)
    if case.expected_any:
        assert scheduled is not None
        assert scheduled <= case.now
    else:
        assert scheduled == case.expected
    assert too_many is case.too_many_missed


# -- TestNextScheduleTimeDuration -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "schedule", "last", "now", "expected"),
    [
        (
            "complex schedule skipping weekend",
            "30 6-16/4 * * 1-5",
            after_top(minutes=30),
            after_top(hours=24, minutes=31),
            timedelta(hours=3, minutes=59),
        ),
        (
            "another complex schedule skipping weekend",
            "30 10,11,12 * * 1-5",
            after_top(minutes=30),
            after_top(hours=30, minutes=30),
            timedelta(hours=66),
        ),
        (
            "once a week cronjob, missed two runs",
            "0 12 * * 4",
            after_top(hours=2),
            after_top(days=19, hours=1, minutes=30),
            timedelta(hours=48, minutes=30),
        ),
        (
            "no previous run of a cronjob",
            "0 12 * * 5",
            None,
            after_top(hours=6),
            timedelta(hours=20),
        ),
        # Not upstream's: an invalid schedule aims after now; one that never fires again is
        # not requeued.
        (
            "rogue schedule waits for nothing",
            "59 23 31 2 *",
            None,
            after_top(hours=6),
            None,
        ),
    ],
)
def test_next_schedule_time_duration(
    name: str, schedule: str, last: datetime | None, now: datetime, expected: timedelta | None
) -> None:
    cj = cron_job(schedule, last=last)
    got = next_schedule_time_duration(cj, now, parse_standard(schedule))
    if expected is None:
        assert got is None
        return
    assert got == expected + NEXT_SCHEDULE_DELTA
    assert got > timedelta(0)


def test_next_schedule_time_duration_after_missed_runs_aims_after_now() -> None:
    """Activations missed and none to run (a deadline passed): the next one after now."""
    cj = cron_job("0 * * * *", last=TOP)
    now = after_top(hours=5, minutes=59, seconds=30)
    got = next_schedule_time_duration(cj, now, parse_standard("0 * * * *"))
    assert got == timedelta(seconds=30) + NEXT_SCHEDULE_DELTA


# -- daylight saving ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "schedule", "last", "now", "expected_recent", "expected_delay"),
    [
        (
            # 2026-03-08 02:00 EST does not exist in New York: the daily 02:30 run is skipped
            # that day, and the requeue waits for the 9th, 23 hours of wall time later.
            "New York spring forward skips a daily run in the gap",
            "TZ=America/New_York 30 2 * * *",
            datetime(2026, 3, 7, 7, 30, tzinfo=UTC),  # 02:30 EST on the 7th
            datetime(2026, 3, 8, 12, 0, tzinfo=UTC),
            None,
            datetime(2026, 3, 9, 6, 30, tzinfo=UTC) - datetime(2026, 3, 8, 12, 0, tzinfo=UTC),
        ),
        (
            # 2026-10-25 in Berlin: 02:00-03:00 happens twice; an hourly schedule runs in
            # both, one UTC hour apart (00:00 and 01:00 UTC).
            "Berlin fall back runs the repeated hour twice",
            "TZ=Europe/Berlin 0 * * * *",
            datetime(2026, 10, 25, 0, 0, tzinfo=UTC),  # 02:00 CEST
            datetime(2026, 10, 25, 1, 0, 30, tzinfo=UTC),  # 02:00:30 CET
            datetime(2026, 10, 25, 1, 0, tzinfo=UTC),
            timedelta(minutes=59, seconds=30),
        ),
    ],
)
def test_schedules_across_daylight_saving(
    name: str,
    schedule: str,
    last: datetime,
    now: datetime,
    expected_recent: datetime | None,
    expected_delay: timedelta,
) -> None:
    cj = cron_job(schedule, created=last - timedelta(days=1), last=last)
    parsed = parse_standard(schedule)
    scheduled, _ = next_schedule_time(cj, now, parsed)
    assert scheduled == expected_recent
    assert next_schedule_time_duration(cj, now, parsed) == expected_delay + NEXT_SCHEDULE_DELTA


# -- formatSchedule -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "schedule", "time_zone", "expected", "unsupported"),
    [
        ("no time zone", "0 * * * *", None, "0 * * * *", False),
        ("time zone", "0 * * * *", "America/New_York", "TZ=America/New_York 0 * * * *", False),
        ("UTC", "0 * * * *", "UTC", "TZ=UTC 0 * * * *", False),
        ("unknown time zone left out", "0 * * * *", "bad timezone", "0 * * * *", False),
        (
            "TZ in the schedule wins",
            "TZ=UTC 0 * * * *",
            "America/New_York",
            "TZ=UTC 0 * * * *",
            True,
        ),
        ("CRON_TZ in the schedule", "CRON_TZ=UTC 0 * * * *", None, "CRON_TZ=UTC 0 * * * *", True),
    ],
)
def test_format_schedule(
    name: str, schedule: str, time_zone: str | None, expected: str, unsupported: bool
) -> None:
    assert format_schedule(cron_job(schedule, time_zone=time_zone)) == (expected, unsupported)


@pytest.mark.parametrize(
    ("name", "zone", "message"),
    [
        ("unknown", "bad timezone", "unknown time zone bad timezone"),
        ("not a zone", "America/Gotham", "unknown time zone America/Gotham"),
        ("absolute path", "/etc/localtime", "time: invalid location name"),
        ("dot dot", "../zoneinfo/UTC", "time: invalid location name"),
    ],
)
def test_load_location_refuses_what_go_refuses(name: str, zone: str, message: str) -> None:
    with pytest.raises(UnknownTimeZone) as error:
        load_location(zone)
    assert str(error.value) == message


def test_load_location_knows_utc_and_iana_names() -> None:
    assert load_location("") is UTC
    assert load_location("UTC") is UTC
    assert str(load_location("Europe/Rome")) == "Europe/Rome"
