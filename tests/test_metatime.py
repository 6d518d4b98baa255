"""kcontrol.metatime: metav1.Time and metav1.MicroTime as the API writes them, and reading them
back (lenient and strict)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

import kcontrol.metatime
from kcontrol.metatime import (
    ZERO_TIME,
    format_micro_time,
    format_time,
    parse_time,
    parse_time_strict,
)

MOMENT = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
PLUS_TWO = timezone(timedelta(hours=2))


def test_surface() -> None:
    assert sorted(kcontrol.metatime.__all__) == [
        "ZERO_TIME",
        "format_micro_time",
        "format_time",
        "parse_time",
        "parse_time_strict",
    ]


def test_zero_time_is_gos() -> None:
    assert datetime.min.replace(tzinfo=UTC) == ZERO_TIME
    assert format_time(ZERO_TIME) == "0001-01-01T00:00:00Z"
    assert format_micro_time(ZERO_TIME) == "0001-01-01T00:00:00.000000Z"


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        pytest.param(MOMENT, "2026-03-04T05:06:07Z", id="utc-fraction-cut"),
        pytest.param(
            datetime(2026, 3, 4, 5, 6, 7, 999999, tzinfo=UTC),
            "2026-03-04T05:06:07Z",
            id="fraction-cut-not-rounded",
        ),
        pytest.param(
            datetime(2026, 3, 4, 5, 6, 7, 890000, tzinfo=PLUS_TWO),
            "2026-03-04T03:06:07Z",
            id="offset-converted-to-utc",
        ),
        pytest.param(MOMENT.replace(tzinfo=None), "2026-03-04T05:06:07Z", id="naive-is-utc"),
    ],
)
def test_format_time(moment: datetime, text: str) -> None:
    assert format_time(moment) == text


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        pytest.param(MOMENT, "2026-03-04T05:06:07.890123Z", id="utc"),
        pytest.param(MOMENT.replace(microsecond=0), "2026-03-04T05:06:07.000000Z", id="whole"),
        pytest.param(
            MOMENT.astimezone(PLUS_TWO), "2026-03-04T05:06:07.890123Z", id="offset-converted-to-utc"
        ),
        pytest.param(MOMENT.replace(tzinfo=None), "2026-03-04T05:06:07.890123Z", id="naive-is-utc"),
    ],
)
def test_format_micro_time(moment: datetime, text: str) -> None:
    assert format_micro_time(moment) == text


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        pytest.param("2026-03-04T05:06:07.890123Z", MOMENT, id="micro-time"),
        pytest.param("2026-03-04T05:06:07Z", MOMENT.replace(microsecond=0), id="time"),
        pytest.param("2026-03-04T05:06:07.890123456Z", MOMENT, id="nanoseconds-cut"),
        pytest.param(
            "2026-03-04T07:06:07.890123456+02:00", MOMENT, id="nanoseconds-cut-with-offset"
        ),
        pytest.param("2026-03-04T05:06:07.8Z", MOMENT.replace(microsecond=800000), id="one-digit"),
        pytest.param("2026-03-04T07:06:07.890123+02:00", MOMENT, id="offset"),
        pytest.param("2026-03-04T05:06:07", MOMENT.replace(microsecond=0), id="no-offset-is-utc"),
        pytest.param("", None, id="empty"),
        pytest.param(None, None, id="missing"),
        pytest.param(12, None, id="not-a-string"),
        pytest.param("yesterday", None, id="garbage"),
        pytest.param("2026-03-04T05:06:07Q", None, id="bad-zone"),
    ],
)
def test_parse_time(text: object, moment: datetime | None) -> None:
    assert parse_time(text) == moment


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("2026-03-04T07:06:07.890123+02:00", id="offset"),
        pytest.param("2026-03-04T05:06:07.890123Z", id="zulu"),
        pytest.param("2026-03-04T05:06:07", id="no-offset"),
    ],
)
def test_parse_time_answers_in_utc(text: str) -> None:
    parsed = parse_time(text)
    assert parsed is not None
    assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    ("moment", "formatter"),
    [
        pytest.param(MOMENT.replace(microsecond=0), format_time, id="time"),
        pytest.param(MOMENT, format_micro_time, id="micro-time"),
    ],
)
def test_what_is_written_reads_back(moment: datetime, formatter: object) -> None:
    assert callable(formatter)
    assert parse_time(formatter(moment)) == moment
    assert parse_time_strict(formatter(moment)) == moment


@pytest.mark.parametrize(
    ("text", "moment", "error"),
    [
        pytest.param("2026-03-04T05:06:07.890123Z", MOMENT, None, id="zulu"),
        pytest.param("2026-03-04T07:06:07.890123+02:00", MOMENT, None, id="offset"),
        pytest.param("tomorrow", None, "Invalid isoformat", id="garbage"),
        pytest.param("", None, "Invalid isoformat", id="empty"),
        pytest.param("2026-03-04T05:06:07", None, "has no UTC offset", id="no-offset"),
    ],
)
def test_parse_time_strict(text: str, moment: datetime | None, error: str | None) -> None:
    if error is not None:
        with pytest.raises(ValueError, match=error):
            parse_time_strict(text)
        return
    parsed = parse_time_strict(text)
    assert parsed == moment
    assert parsed.tzinfo is UTC
