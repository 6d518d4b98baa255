"""Timestamps as the API writes them: ``metav1.Time`` and ``metav1.MicroTime``.

A ``metav1.Time`` (``creationTimestamp``, a condition's ``lastTransitionTime``, a Job's
``startTime``) is RFC 3339 in UTC with whole seconds, ``2026-01-02T03:04:05Z``; a
``metav1.MicroTime`` (a Lease's ``renewTime``, an Event's ``eventTime``) carries six
fractional digits, ``2026-01-02T03:04:05.123456Z``. :func:`format_time` and
:func:`format_micro_time` write them; :func:`parse_time` reads either, and any other RFC 3339
time, into an aware UTC :class:`~datetime.datetime`.

Reading is lenient where the caller treats a bad value as a missing one (Go's zero time,
:data:`ZERO_TIME`): :func:`parse_time` returns ``None`` for a missing, non-string or malformed
value. :func:`parse_time_strict` raises instead, for input whose author must hear about it (a
credential plugin's answer).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

__all__ = [
    "ZERO_TIME",
    "format_micro_time",
    "format_time",
    "parse_time",
    "parse_time_strict",
]

ZERO_TIME: Final = datetime(1, 1, 1, tzinfo=UTC)
"""Go's zero ``time.Time``, 0001-01-01T00:00:00Z: what an unset ``metav1.Time`` stands for."""


def _utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive ``datetime`` is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def format_time(moment: datetime) -> str:
    """``moment`` as a ``metav1.Time``: RFC 3339 in UTC, whole seconds (a fraction is cut, not
    rounded), ``Z`` for the zone. A naive ``datetime`` is taken to be UTC."""
    # isoformat, not strftime: glibc's %Y writes Go's zero time as year "1", not "0001".
    return _utc(moment).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def format_micro_time(moment: datetime) -> str:
    """``moment`` as a ``metav1.MicroTime``: RFC 3339 in UTC with six fractional digits,
    ``2006-01-02T15:04:05.000000Z``. A naive ``datetime`` is taken to be UTC."""
    return _utc(moment).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def parse_time(value: object) -> datetime | None:
    """A ``metav1.Time``, ``metav1.MicroTime`` or any RFC 3339 time as an aware UTC
    ``datetime``; ``None`` for a missing, empty, non-string or malformed value.

    Reads what :meth:`datetime.fromisoformat` reads: ``Z`` or any offset, and any number of
    fractional digits (those beyond microseconds, a MicroTime's nanoseconds, are dropped); a
    time without an offset is taken to be UTC.
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return _utc(moment)


def parse_time_strict(text: str) -> datetime:
    """``text`` read as :func:`parse_time` reads it, as an aware UTC ``datetime``.

    Raises :class:`ValueError` when ``text`` is malformed or has no offset (RFC 3339 requires
    one), where :func:`parse_time` would return ``None`` or assume UTC.
    """
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset")
    return moment.astimezone(UTC)
