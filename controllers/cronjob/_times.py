"""When a CronJob runs: upstream's ``mostRecentScheduleTime``, ``nextScheduleTime``,
``nextScheduleTimeDuration`` and ``formatSchedule`` (``utils.go``, ``cronjob_controllerv2.go``),
pure functions over the CronJob as a dict.

Every time is an aware datetime; arithmetic is done in UTC (Python subtracts two datetimes of
one zone by their wall clocks, which is wrong across a daylight-saving change: schedules are
asked in UTC and their answers converted back). The schedule only has to answer ``next(t)``:
the first activation strictly after ``t``, ``None`` when there is none within five years
(where robfig/cron answers Go's zero time). A CronJob without ``creationTimestamp`` starts
from Go's zero time, as upstream.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Final, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kcontrol.metatime import ZERO_TIME, parse_time

__all__ = [
    "NEXT_SCHEDULE_DELTA",
    "InvalidSchedule",
    "MissedSchedules",
    "MostRecent",
    "NextActivation",
    "UnknownTimeZone",
    "format_schedule",
    "load_location",
    "most_recent_schedule_time",
    "next_schedule_time",
    "next_schedule_time_duration",
]

NEXT_SCHEDULE_DELTA: Final = timedelta(milliseconds=100)
"""Upstream's ``nextScheduleDelta``: a requeue aims this long after the next activation, so
that a clock a little behind (NTP) still finds the activation passed."""

TOO_MANY_MISSED: Final = 100
"""More missed activations than this are *many* (upstream's "somewhat arbitrarily picked
100")."""


class NextActivation(Protocol):
    """What the maths needs of a parsed schedule
    (:class:`~kcontrol_controllers.cronjob._schedule.Schedule` is one)."""

    def next(self, t: datetime) -> datetime | None: ...


class InvalidSchedule(ValueError):
    """A schedule that parses but never fires usefully (``59 23 31 2 *``: February the 31st):
    two activations less than a second apart, or none. Upstream's error text."""

    def __init__(self) -> None:
        super().__init__("time difference between two schedules is less than 1 second")


class UnknownTimeZone(ValueError):
    """``time.LoadLocation`` failed; the message is Go's."""


class MissedSchedules(enum.Enum):
    """How many activations were missed (upstream ``missedSchedulesType``)."""

    NONE = "none"
    FEW = "few"
    MANY = "many"


@dataclass(frozen=True, slots=True)
class MostRecent:
    """What :func:`most_recent_schedule_time` found: the time it counted from (``earliest``:
    the last schedule time or the creation time, or the starting deadline), the most recent
    activation at or before ``now`` (``None`` if none), and how many were missed."""

    earliest: datetime
    most_recent: datetime | None
    missed: MissedSchedules


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _next(schedule: NextActivation, t: datetime) -> datetime | None:
    found = schedule.next(t)
    return None if found is None else found.astimezone(UTC)


def _whole_seconds_rounded(delta: timedelta) -> int:
    """``Duration.Round(time.Second)`` in seconds: halves away from zero."""
    micros = delta // timedelta(microseconds=1)
    magnitude = (abs(micros) + 500_000) // 1_000_000
    return magnitude if micros >= 0 else -magnitude


def _whole_seconds_truncated(delta: timedelta) -> int:
    """``int64(d.Seconds())``: toward zero."""
    micros = delta // timedelta(microseconds=1)
    magnitude = abs(micros) // 1_000_000
    return magnitude if micros >= 0 else -magnitude


def load_location(name: str) -> tzinfo:
    """Go's ``time.LoadLocation``: ``""`` and ``"UTC"`` are UTC, ``"Local"`` this process's
    zone, anything else an IANA name. Raises :class:`UnknownTimeZone`."""
    if name in ("", "UTC"):
        return UTC
    if name == "Local":
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else UTC
    if ".." in name or name.startswith(("/", "\\")):
        raise UnknownTimeZone("time: invalid location name")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise UnknownTimeZone(f"unknown time zone {name}") from None


def format_schedule(cron_job: Mapping[str, Any]) -> tuple[str, bool]:
    """The text to parse for ``cron_job`` (upstream ``formatSchedule``) and whether the
    schedule carries its own ``TZ``/``CRON_TZ`` (upstream then records ``UnsupportedSchedule``
    and ignores ``spec.timeZone``). Otherwise ``spec.timeZone``, when set and known, becomes a
    ``TZ=<zone> `` prefix; an unknown one is left out (the sync reports it)."""
    spec = _spec(cron_job)
    schedule = str(spec.get("schedule") or "")
    if "TZ" in schedule:
        return schedule, True
    time_zone = spec.get("timeZone")
    if time_zone is not None:
        try:
            load_location(str(time_zone))
        except UnknownTimeZone:
            return schedule, False
        return f"TZ={time_zone} {schedule}", False
    return schedule, False


def most_recent_schedule_time(
    cron_job: Mapping[str, Any],
    now: datetime,
    schedule: NextActivation,
    include_starting_deadline_seconds: bool,
) -> MostRecent:
    """The most recent activation of ``schedule`` in ``(earliest, now]`` (upstream
    ``mostRecentScheduleTime``).

    ``earliest`` is ``status.lastScheduleTime``, else ``metadata.creationTimestamp``; with
    ``include_starting_deadline_seconds``, no earlier than ``now - startingDeadlineSeconds``.
    Missed activations are not walked one by one: their number is estimated from the gap
    between the first two after ``earliest``, and the walk starts one gap before the estimate
    (so a schedule of uneven gaps, ``30 6-16/4 * * 1-5``, still finds its last activation);
    more than 100 is :attr:`MissedSchedules.MANY`. Raises :class:`InvalidSchedule` when two
    activations are less than a second apart or there are none.
    """
    earliest = parse_time(_meta(cron_job).get("creationTimestamp")) or ZERO_TIME
    last = parse_time((cron_job.get("status") or {}).get("lastScheduleTime"))
    if last is not None:
        earliest = last
    deadline_seconds = _spec(cron_job).get("startingDeadlineSeconds")
    if include_starting_deadline_seconds and deadline_seconds is not None:
        scheduling_deadline = now - timedelta(seconds=int(deadline_seconds))
        earliest = max(earliest, scheduling_deadline)
    earliest = earliest.astimezone(UTC)

    t1 = _next(schedule, earliest)
    if t1 is None:
        raise InvalidSchedule()
    if now < t1:
        return MostRecent(earliest, None, MissedSchedules.NONE)
    t2 = _next(schedule, t1)
    if t2 is None:
        raise InvalidSchedule()
    if now < t2:
        return MostRecent(earliest, t1, MissedSchedules.NONE)

    time_between = _whole_seconds_rounded(t2 - t1)
    if time_between < 1:
        raise InvalidSchedule()
    elapsed = _whole_seconds_truncated(now - t1)
    missed = elapsed // time_between + 1
    potential_earliest = t1 + timedelta(seconds=(missed - 2) * time_between)
    most_recent: datetime | None = None
    t = _next(schedule, potential_earliest)
    while t is not None and t <= now:
        most_recent = t
        t = _next(schedule, t)

    if missed > TOO_MANY_MISSED:
        kind = MissedSchedules.MANY
    elif missed > 0:
        kind = MissedSchedules.FEW
    else:
        kind = MissedSchedules.NONE
    return MostRecent(earliest, most_recent, kind)


def next_schedule_time(
    cron_job: Mapping[str, Any], now: datetime, schedule: NextActivation
) -> tuple[datetime | None, bool]:
    """The activation to run now, if any, and whether too many were missed (upstream
    ``nextScheduleTime``, which then records ``TooManyMissedTimes``): the most recent
    activation not yet scheduled, no earlier than ``startingDeadlineSeconds`` before ``now``.
    Raises :class:`InvalidSchedule`."""
    found = most_recent_schedule_time(cron_job, now, schedule, True)
    if found.most_recent is None or found.most_recent > now:
        return None, False
    return found.most_recent, found.missed is MissedSchedules.MANY


def next_schedule_time_duration(
    cron_job: Mapping[str, Any], now: datetime, schedule: NextActivation
) -> timedelta | None:
    """How long from ``now`` until the sync after the next activation (upstream
    ``nextScheduleTimeDuration``): the activation after the most recent one (after ``now``
    when activations were missed or the schedule is invalid, after ``earliest`` when none is
    due yet), plus :data:`NEXT_SCHEDULE_DELTA`. Always more than that delta ahead.

    ``None`` when the schedule has no activation left within five years: upstream then
    computes a negative duration from Go's zero time and requeues at once, only for the next
    sync to find the schedule invalid; there is nothing to wait for."""
    try:
        found = most_recent_schedule_time(cron_job, now, schedule, False)
    except InvalidSchedule:
        base = now
    else:
        if found.most_recent is not None:
            base = found.most_recent
        elif found.missed is MissedSchedules.NONE:
            base = found.earliest
        else:
            base = now
    following = _next(schedule, base)
    if following is None:
        return None
    return following + NEXT_SCHEDULE_DELTA - now
