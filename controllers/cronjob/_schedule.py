"""Cron schedules as Kubernetes reads ``spec.schedule``: robfig/cron v3 (v3.0.1, the version
Kubernetes vendors), ``cron.ParseStandard`` and the ``Next`` of the schedules it returns.

:func:`parse_standard` accepts what ``ParseStandard`` accepts and rejects what it rejects, with
its error messages:

- five fields, ``minute hour day-of-month month day-of-week``, each a comma-separated list of
  ``*`` or ``?`` (every value), ``a``, ``a-b``, with an optional step ``/n`` (``a/n`` means
  ``a-max/n``); months ``jan``-``dec`` and weekdays ``sun``-``sat`` by name, in any case;
  weekdays are 0-6 (7 is out of range in v3);
- the descriptors ``@yearly`` (``@annually``), ``@monthly``, ``@weekly``, ``@daily``
  (``@midnight``), ``@hourly`` and ``@every <Go duration>``;
- a leading ``TZ=<zone> `` or ``CRON_TZ=<zone> `` (Kubernetes prepends ``TZ=<spec.timeZone> ``
  when ``spec.timeZone`` is set), the zone read from the IANA database.

If day-of-month or day-of-week is ``*`` or ``?`` (without a step above 1), a day must match
both; otherwise either (robfig's ``starBit``).

:meth:`Schedule.next` is ``SpecSchedule.Next``, including its behaviour across daylight-saving
changes, which follows from how Go's ``time.Date`` resolves a wall time that does not exist or
exists twice: it takes the offset of the zone period that contains the wall time read as UTC,
and if the instant that gives falls outside that period, the offset in effect at that instant.
Hence a skipped wall time resolves to the offset in effect after the change in zones west of
Greenwich (2:30 in New York's spring gap is 1:30 EST) and before it in zones east of it
(2:30 in Sydney's is 3:30 AEDT); a repeated wall time resolves to its first occurrence in New
York and to its second in London and Sydney. Next then moves by absolute hours and minutes,
so an hourly schedule skips the missing hour and fires twice in the repeated one, and a daily
schedule at a skipped time does not fire that day.

Deviations, all deliberate: a schedule without a zone is read in UTC where robfig reads it in
the zone of the time it is given (``time.Local``; kube-controller-manager hands it local
times, so this is Kubernetes with the controller's zone UTC), and ``TZ=Local`` likewise;
``TZ=<zone>`` with no space after it raises :class:`ScheduleError` where robfig panics; a
result after the year 9999 (out of :class:`~datetime.datetime`'s range) is ``None``.

Pure and fast: no I/O beyond the zone database, no clock.
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Final, TypeAlias

__all__ = ["Schedule", "ScheduleError", "parse_standard"]


class ScheduleError(ValueError):
    """A schedule that robfig/cron's ``ParseStandard`` rejects; the message is robfig's."""


Location: TypeAlias = zoneinfo.ZoneInfo | timezone
"""A schedule's zone: an IANA zone, or UTC."""

# --- Go's text primitives ------------------------------------------------------------------

# unicode.IsSpace, which strings.Fields and strings.TrimSpace split and trim on (Python's
# str.split also splits on \x1c-\x1f, Go's does not).
_GO_SPACE: Final = "\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_GO_SPACES_RE: Final = re.compile(f"[{_GO_SPACE}]+")
_GO_TRIM_RE: Final = re.compile(f"^[{_GO_SPACE}]+|[{_GO_SPACE}]+$")


def _go_fields(s: str) -> list[str]:
    """strings.Fields: the runs of non-space characters."""
    return [field for field in _GO_SPACES_RE.split(s) if field]


def _go_trim_space(s: str) -> str:
    """strings.TrimSpace."""
    return _GO_TRIM_RE.sub("", s)


def _go_slice_string(fields: list[str]) -> str:
    """A []string as fmt's %s prints it: ``[a b c]``."""
    return "[" + " ".join(fields) + "]"


_STRCONV_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    '"': '\\"',
    "\\": "\\\\",
}


def _strconv_quote(s: str) -> str:
    """strconv.Quote, as strconv's errors quote their input."""
    out = ['"']
    for c in s:
        if c in _STRCONV_ESCAPES:
            out.append(_STRCONV_ESCAPES[c])
        elif c.isprintable():
            out.append(c)
        elif ord(c) < 0x80:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) < 0x10000:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    out.append('"')
    return "".join(out)


def _time_quote(s: str) -> str:
    """The time package's quote: non-ASCII and control characters as ``\\x`` bytes."""
    out = ['"']
    for c in s:
        if c >= "\x80" or c < " ":
            out.extend(f"\\x{b:02x}" for b in c.encode("utf-8", "surrogatepass"))
        else:
            if c in '"\\':
                out.append("\\")
            out.append(c)
    out.append('"')
    return "".join(out)


_MAX_UINT64: Final = (1 << 64) - 1


def _atoi(s: str) -> int:
    """strconv.Atoi on a 64-bit platform; raises ValueError with strconv's message."""
    digits = s[1:] if s[:1] in ("+", "-") else s
    if not digits:
        raise ValueError(f"strconv.Atoi: parsing {_strconv_quote(s)}: invalid syntax")
    n = 0
    for c in digits:  # left to right: an overflow before a bad character is a range error
        if not "0" <= c <= "9":
            raise ValueError(f"strconv.Atoi: parsing {_strconv_quote(s)}: invalid syntax")
        n = n * 10 + ord(c) - ord("0")
        if n > _MAX_UINT64:
            break
    negative = s[0] == "-"
    if n > (1 << 63) or (n == 1 << 63 and not negative):
        raise ValueError(f"strconv.Atoi: parsing {_strconv_quote(s)}: value out of range")
    return -n if negative else n


_DURATION_UNITS: Final = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # U+00B5 micro sign
    "\u03bcs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}


def _parse_go_duration(text: str) -> int:
    """time.ParseDuration, in nanoseconds; raises ValueError with Go's message."""
    invalid = f"time: invalid duration {_time_quote(text)}"
    s = text
    negative = False
    if s[:1] in ("-", "+"):
        negative = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(invalid)
    total = 0
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            raise ValueError(invalid)
        # leadingInt: [0-9]*, an error past 1<<63.
        i = 0
        whole = 0
        while i < len(s) and "0" <= s[i] <= "9":
            if whole > (1 << 63) // 10:
                raise ValueError(invalid)
            whole = whole * 10 + ord(s[i]) - ord("0")
            if whole > 1 << 63:
                raise ValueError(invalid)
            i += 1
        before_point = i > 0
        s = s[i:]
        # leadingFraction: (\.[0-9]*)?, silently losing precision past 1<<63.
        fraction, scale, after_point = 0, 1.0, False
        if s[:1] == ".":
            s = s[1:]
            i = 0
            overflow = False
            while i < len(s) and "0" <= s[i] <= "9":
                if not overflow:
                    if fraction > ((1 << 63) - 1) // 10:
                        overflow = True
                    else:
                        nxt = fraction * 10 + ord(s[i]) - ord("0")
                        if nxt > 1 << 63:
                            overflow = True
                        else:
                            fraction = nxt
                            scale *= 10
                i += 1
            after_point = i > 0
            s = s[i:]
        if not before_point and not after_point:
            raise ValueError(invalid)
        i = 0
        while i < len(s) and not (s[i] == "." or "0" <= s[i] <= "9"):
            i += 1
        if i == 0:
            raise ValueError(f"time: missing unit in duration {_time_quote(text)}")
        unit_name, s = s[:i], s[i:]
        unit = _DURATION_UNITS.get(unit_name)
        if unit is None:
            raise ValueError(
                f"time: unknown unit {_time_quote(unit_name)} in duration {_time_quote(text)}"
            )
        if whole > (1 << 63) // unit:
            raise ValueError(invalid)
        value = whole * unit
        if fraction > 0:
            # float64, as Go does: nanosecond-accurate for fractions of an hour
            value += int(float(fraction) * (float(unit) / scale))
            if value > 1 << 63:
                raise ValueError(invalid)
        total += value
        if total > 1 << 63:
            raise ValueError(invalid)
    if negative:
        return -total
    if total > (1 << 63) - 1:
        raise ValueError(invalid)
    return total


# --- Go's calendar: instants as Unix seconds, wall fields in a zone -----------------------

_SECONDS_PER_DAY: Final = 86_400
_MIN_TIMESTAMP: Final = int(datetime(1, 1, 2, tzinfo=UTC).timestamp())
_MAX_TIMESTAMP: Final = int(datetime(9999, 12, 30, tzinfo=UTC).timestamp())


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a proleptic Gregorian date (any integers; day may overflow)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468 + day - 1


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """The (year, month, day) of a count of days from 1970-01-01."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def _offset(zone: Location, unix: int) -> int:
    """The zone's UTC offset in seconds at an instant (Go's ``Location.lookup``)."""
    clamped = min(max(unix, _MIN_TIMESTAMP), _MAX_TIMESTAMP)
    delta = datetime.fromtimestamp(clamped, zone).utcoffset()
    assert delta is not None
    return delta.days * _SECONDS_PER_DAY + delta.seconds


@dataclass(frozen=True, slots=True)
class _Time:
    """A Go ``time.Time`` at whole seconds: an instant and its wall fields in a zone."""

    unix: int
    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    weekday: int  # Sunday = 0, as Go's time.Weekday


def _at(zone: Location, unix: int) -> _Time:
    """The instant ``unix`` read in ``zone`` (Go's ``Unix(unix, 0).In(zone)``)."""
    wall = unix + _offset(zone, unix)
    days, seconds = divmod(wall, _SECONDS_PER_DAY)
    year, month, day = _civil_from_days(days)
    hour, rest = divmod(seconds, 3600)
    minute, second = divmod(rest, 60)
    return _Time(unix, year, month, day, hour, minute, second, (days + 4) % 7)


def _date(
    zone: Location,
    year: int,
    month: int,
    day: int,
    *,
    hour: int = 0,
    minute: int = 0,
    second: int = 0,
) -> _Time:
    """Go's ``time.Date``: fields may overflow (month 13, day 32); a wall time that the zone
    skips or repeats takes the offset Go's lookup gives it (see the module docstring)."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    wall = _days_from_civil(year, month, day) * _SECONDS_PER_DAY
    wall += hour * 3600 + minute * 60 + second
    # Go: offset of the period holding `wall` read as an instant; if `wall - offset` is
    # outside that period, the offset at `wall - offset`. Both cases are this:
    return _at(zone, wall - _offset(zone, wall - _offset(zone, wall)))


def _add_date(zone: Location, t: _Time, months: int = 0, days: int = 0) -> _Time:
    """Go's ``Time.AddDate``: the same clock on the shifted date, through ``time.Date``."""
    return _date(
        zone, t.year, t.month + months, t.day + days, hour=t.hour, minute=t.minute, second=t.second
    )


def _unix_seconds(t: datetime) -> int:
    """The whole seconds of an aware datetime since the Unix epoch, rounded down."""
    return (t - _EPOCH) // timedelta(seconds=1)


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

# --- Parsing: parser.go ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Bounds:
    """The values a field takes, and their names."""

    min: int
    max: int
    names: dict[str, int] | None = None


_SECONDS: Final = _Bounds(0, 59)
_MINUTES: Final = _Bounds(0, 59)
_HOURS: Final = _Bounds(0, 23)
_DOM: Final = _Bounds(1, 31)
_MONTHS: Final = _Bounds(
    1,
    12,
    {
        name: number
        for number, name in enumerate(
            ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
            start=1,
        )
    },
)
_DOW: Final = _Bounds(
    0,
    6,
    {name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))},
)

_STAR_BIT: Final = 1 << 63
"""Set in a field's bits when the field was ``*`` or ``?`` (a step of 1 at most)."""


def _get_bits(low: int, high: int, step: int) -> int:
    """The bits low, low+step, ... up to high."""
    bits = 0
    for value in range(low, high + 1, step):
        bits |= 1 << value
    return bits


def _all(bounds: _Bounds) -> int:
    """Every value of a field, and the star bit (as ``*``)."""
    return _get_bits(bounds.min, bounds.max, 1) | _STAR_BIT


def _must_parse_int(expr: str) -> int:
    try:
        number = _atoi(expr)
    except ValueError as err:
        raise ScheduleError(f"failed to parse int from {expr}: {err}") from None
    if number < 0:
        raise ScheduleError(f"negative number ({number}) not allowed: {expr}")
    return number


def _parse_int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names is not None and expr.lower() in names:
        return names[expr.lower()]
    return _must_parse_int(expr)


def _get_range(expr: str, bounds: _Bounds) -> int:
    """The bits of ``number | number "-" number ["/" number]``, ``*`` and ``?`` included."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    extra = 0
    if low_and_high[0] in ("*", "?"):
        # anything after a '-' is ignored, as robfig does
        start, end, extra = bounds.min, bounds.max, _STAR_BIT
    else:
        start = _parse_int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _parse_int_or_name(low_and_high[1], bounds.names)
        else:
            raise ScheduleError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        if single:  # "N/step" means "N-max/step"
            end = bounds.max
        if step > 1:
            extra = 0
    else:
        raise ScheduleError(f"too many slashes: {expr}")
    if start < bounds.min:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({bounds.min}): {expr}")
    if end > bounds.max:
        raise ScheduleError(f"end of range ({end}) above maximum ({bounds.max}): {expr}")
    if start > end:
        raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expr}")
    return _get_bits(start, end, step) | extra


def _get_field(field: str, bounds: _Bounds) -> int:
    """The bits of a comma-separated list of ranges (empty items are skipped, as Go's
    strings.FieldsFunc does)."""
    bits = 0
    for expr in field.split(","):
        if expr:
            bits |= _get_range(expr, bounds)
    return bits


def _load_location(name: str) -> Location:
    """Go's ``time.LoadLocation`` on the IANA database; ``Local`` is UTC here."""
    if name in ("", "UTC", "Local"):
        return UTC
    if ".." in name or name[0] in "/\\":
        raise ScheduleError(f"provided bad location {name}: time: invalid location name")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleError(f"provided bad location {name}: unknown time zone {name}") from None


# --- Schedules ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, repr=False)
class Schedule:
    """A parsed schedule (immutable; equal to another parsed from the same text).
    :meth:`next` gives its activations."""

    spec: str
    """The text it was parsed from."""
    location: Location
    """The zone of ``TZ=``/``CRON_TZ=``, or UTC."""
    _bits: tuple[int, int, int, int, int, int] | None
    """second, minute, hour, day of month, month, day of week (each a bit per value, and
    the star bit); None for ``@every``."""
    _delay: int = 0
    """``@every``'s delay in whole seconds."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"

    def next(self, t: datetime) -> datetime | None:
        """The first activation strictly after ``t`` (aware, any zone), in :attr:`location`;
        None if there is none within five years (robfig returns the zero time).

        robfig's ``SpecSchedule.Next`` (``ConstantDelaySchedule.Next`` for ``@every``:
        ``t`` rounded down to the second, plus the delay)."""
        if t.tzinfo is None or t.utcoffset() is None:
            raise ValueError(f"a schedule needs an aware time, not {t!r}")
        if self._bits is None:
            found: int | None = _unix_seconds(t) + self._delay
        else:
            found = _next_spec(self._bits, self.location, _unix_seconds(t))
        if found is None:
            return None
        try:
            moment = _EPOCH + timedelta(seconds=found)
        except OverflowError:  # after the year 9999
            return None
        try:
            return moment.astimezone(self.location)
        except OverflowError:  # the first or last hours datetime holds, in this zone
            return moment


def _day_matches(dom: int, dow: int, t: _Time) -> bool:
    dom_match = (1 << t.day) & dom != 0
    dow_match = (1 << t.weekday) & dow != 0
    if dom & _STAR_BIT or dow & _STAR_BIT:
        return dom_match and dow_match
    return dom_match or dow_match


def _next_day(zone: Location, t: _Time) -> _Time:
    """The day loop's step: AddDate(0, 0, 1), then back to the day's start if midnight moved
    (robfig: "add an hour if it's 23, subtract an hour if it's 1").

    Where a zone skipped a whole day (Pacific/Apia and Pacific/Fakaofo on 2011-12-30),
    Go's time.Date puts the skipped day's midnight on the day before's, the step lands
    where it started and robfig loops forever; here the step goes on to the next day
    that exists."""
    days = 1
    while True:
        step = _add_date(zone, t, days=days)
        if step.hour > 12:
            step = _at(zone, step.unix + (24 - step.hour) * 3600)
        elif step.hour != 0:
            step = _at(zone, step.unix - step.hour * 3600)
        if step.unix > t.unix:
            return step
        days += 1  # the next day does not exist in this zone: the one after it


def _satisfiable(bits: tuple[int, int, int, int, int, int]) -> bool:
    """False when a field matches nothing (a field of only commas), so Next cannot succeed."""
    second, minute, hour, dom, month, dow = (field & ~_STAR_BIT for field in bits)
    if bits[3] & _STAR_BIT or bits[5] & _STAR_BIT:
        days = dom != 0 and dow != 0
    else:
        days = dom != 0 or dow != 0
    return days and all((second, minute, hour, month))


def _next_spec(bits: tuple[int, int, int, int, int, int], zone: Location, unix: int) -> int | None:
    """SpecSchedule.Next from the instant ``unix`` (whole seconds): the activation's instant."""
    second_bits, minute_bits, hour_bits, dom, month_bits, dow = bits
    if not _satisfiable(bits):
        return None  # what robfig finds after five years of search
    # Start at the earliest possible time (the upcoming second).
    t = _at(zone, unix + 1)
    added = False  # whether a field has been incremented
    year_limit = t.year + 5
    while True:  # WRAP
        if t.year > year_limit:
            return None
        wrapped = False
        # Find the first applicable month.
        while not (1 << t.month) & month_bits:
            if not added:
                added = True
                t = _date(zone, t.year, t.month, 1)
            t = _add_date(zone, t, months=1)
            if t.month == 1:
                wrapped = True
                break
        if wrapped:
            continue
        # Now a day in that month; midnight may not exist (a DST change at midnight):
        # notice when the hour is not 0 and go forward to or back to the day's start.
        while not _day_matches(dom, dow, t):
            if not added:
                added = True
                t = _date(zone, t.year, t.month, t.day)
            t = _next_day(zone, t)
            if t.day == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << t.hour) & hour_bits:
            if not added:
                added = True
                t = _date(zone, t.year, t.month, t.day, hour=t.hour)
            t = _at(zone, t.unix + 3600)
            if t.hour == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << t.minute) & minute_bits:
            if not added:
                added = True
                t = _at(zone, t.unix - t.unix % 60)  # Truncate(time.Minute): absolute
            t = _at(zone, t.unix + 60)
            if t.minute == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << t.second) & second_bits:
            if not added:
                added = True  # Truncate(time.Second): t is whole seconds already
            t = _at(zone, t.unix + 1)
            if t.second == 0:
                wrapped = True
                break
        if wrapped:
            continue
        return t.unix


_DESCRIPTORS: Final[dict[str, tuple[int, int, int, int, int, int]]] = {
    # second, minute, hour, day of month, month, day of week: each at its minimum, or all
    "@yearly": (1 << 0, 1 << 0, 1 << 0, 1 << 1, 1 << 1, _all(_DOW)),
    "@annually": (1 << 0, 1 << 0, 1 << 0, 1 << 1, 1 << 1, _all(_DOW)),
    "@monthly": (1 << 0, 1 << 0, 1 << 0, 1 << 1, _all(_MONTHS), _all(_DOW)),
    "@weekly": (1 << 0, 1 << 0, 1 << 0, _all(_DOM), _all(_MONTHS), 1 << 0),
    "@daily": (1 << 0, 1 << 0, 1 << 0, _all(_DOM), _all(_MONTHS), _all(_DOW)),
    "@midnight": (1 << 0, 1 << 0, 1 << 0, _all(_DOM), _all(_MONTHS), _all(_DOW)),
    "@hourly": (1 << 0, 1 << 0, _all(_HOURS), _all(_DOM), _all(_MONTHS), _all(_DOW)),
}


def _parse_descriptor(spec: str, descriptor: str, location: Location) -> Schedule:
    """parseDescriptor: the named schedules, matched exactly, and ``@every <duration>``."""
    bits = _DESCRIPTORS.get(descriptor)
    if bits is not None:
        return Schedule(spec, location, bits)
    every = "@every "
    if descriptor.startswith(every):
        try:
            nanoseconds = _parse_go_duration(descriptor[len(every) :])
        except ValueError as err:
            raise ScheduleError(f"failed to parse duration {descriptor}: {err}") from None
        # cron.Every: at least a second, whole seconds
        seconds = max(nanoseconds, 1_000_000_000) // 1_000_000_000
        return Schedule(spec, location, None, seconds)
    raise ScheduleError(f"unrecognized descriptor: {descriptor}")


def parse_standard(spec: str) -> Schedule:
    """robfig/cron v3's ``ParseStandard``: a five-field crontab spec or a descriptor, after an
    optional ``TZ=<zone> `` or ``CRON_TZ=<zone> `` prefix. Raises :class:`ScheduleError`
    with robfig's message."""
    if not spec:
        raise ScheduleError("empty spec string")
    text = spec
    location: Location = UTC
    if text.startswith(("TZ=", "CRON_TZ=")):
        space = text.find(" ")
        if space < 0:  # robfig slices with -1 here and panics
            raise ScheduleError(f"provided bad location: no space after the zone in {text}")
        name = text[text.index("=") + 1 : space]
        location = _load_location(name)
        text = _go_trim_space(text[space:])
    if text.startswith("@"):
        return _parse_descriptor(spec, text, location)
    fields = _go_fields(text)
    if len(fields) != 5:
        raise ScheduleError(
            f"expected exactly 5 fields, found {len(fields)}: {_go_slice_string(fields)}"
        )
    minute, hour, dom, month, dow = fields
    bits = (
        _get_field("0", _SECONDS),
        _get_field(minute, _MINUTES),
        _get_field(hour, _HOURS),
        _get_field(dom, _DOM),
        _get_field(month, _MONTHS),
        _get_field(dow, _DOW),
    )
    return Schedule(spec, location, bits)
