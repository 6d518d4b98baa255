"""controllers/intstr.py: Go's strconv.ParseInt / ParseUint and intstr's scaled values."""

from __future__ import annotations

import pytest

from kcontrol_controllers.intstr import (
    DecimalError,
    IntOrPercentError,
    parse_decimal,
    scaled_value_from_int_or_percent,
)


@pytest.mark.parametrize(
    ("text", "bits", "signed", "value"),
    [
        ("42", 64, True, 42),
        ("007", 32, False, 7),
        ("+5", 64, True, 5),
        ("-5", 64, True, -5),
        ("999999999", 32, True, 999_999_999),
        ("2147483647", 32, True, 2**31 - 1),
        ("-2147483648", 32, True, -(2**31)),
        ("4294967295", 32, False, 2**32 - 1),
        ("0000000000000000000001", 32, False, 1),
    ],
)
def test_parse_decimal(text: str, bits: int, signed: bool, value: int) -> None:
    assert parse_decimal(text, bits=bits, signed=signed) == value


@pytest.mark.parametrize(
    ("text", "bits", "signed", "why"),
    [
        ("", 64, True, "invalid syntax"),
        ("-5", 32, False, "invalid syntax"),  # no sign for ParseUint
        ("+", 64, True, "invalid syntax"),
        ("1_000", 64, True, "invalid syntax"),
        (" 5", 64, True, "invalid syntax"),
        ("²", 64, True, "invalid syntax"),  # a digit to str.isdigit, not to Go
        ("٣", 32, False, "invalid syntax"),  # an Arabic-Indic digit: likewise
        ("2147483648", 32, True, "value out of range"),
        ("4294967296", 32, False, "value out of range"),
        ("9" * 5000, 64, True, "value out of range"),
    ],
)
def test_parse_decimal_refuses_what_go_refuses(
    text: str, bits: int, signed: bool, why: str
) -> None:
    with pytest.raises(DecimalError, match=why):
        parse_decimal(text, bits=bits, signed=signed)


def test_scaled_value_from_int_or_percent() -> None:
    assert scaled_value_from_int_or_percent(3, 10, True) == 3
    assert scaled_value_from_int_or_percent("25%", 10, True) == 3
    assert scaled_value_from_int_or_percent("25%", 10, False) == 2
    with pytest.raises(IntOrPercentError, match="not a percentage"):
        scaled_value_from_int_or_percent("25", 10, True)
    with pytest.raises(IntOrPercentError, match="invalid value"):
        scaled_value_from_int_or_percent("²%", 10, True)
