"""Numbers as Kubernetes' Go code reads them: decimal strings (``strconv.ParseInt`` /
``ParseUint``) and IntOrString values that are a count or a percentage (apimachinery
``intstr.GetScaledValueFromIntOrPercent``).

Shared by the controllers whose specs carry ``maxSurge`` / ``maxUnavailable`` (Deployment,
StatefulSet, DaemonSet) and whose annotations carry numbers; the error messages follow Go's,
so a condition or event quoting one reads as kube-controller-manager's does.
"""

from __future__ import annotations

__all__ = [
    "DecimalError",
    "IntOrPercent",
    "IntOrPercentError",
    "parse_decimal",
    "scaled_value_from_int_or_percent",
]

IntOrPercent = int | str
"""An IntOrString as JSON decodes it: ``3`` or ``"25%"``."""


class DecimalError(ValueError):
    """A string that is not a decimal integer of the size asked for."""


class IntOrPercentError(ValueError):
    """An IntOrString that is neither an int nor a percentage such as ``"25%"``."""


def parse_decimal(text: str, *, bits: int, signed: bool) -> int:
    """``text`` as Go's ``strconv.ParseInt(text, 10, bits)`` (``signed``) or
    ``strconv.ParseUint(text, 10, bits)`` reads it: ASCII digits (after an optional ``+`` or
    ``-`` when ``signed``), leading zeros allowed.

    Raises :class:`DecimalError` saying "invalid syntax" or "value out of range" as Go's
    errors do. The digits are measured before they are converted, so a value of any length
    is an error like any other (Python refuses to convert more than 4,300 digits).
    """
    if bits >= 32 and len(text) < 10 and text.isascii() and text.isdigit():
        return int(text)  # the common case (a percentage's digits): in range of 32 bits
    body = text[1:] if signed and text[:1] in ("+", "-") else text
    if not body or not all("0" <= char <= "9" for char in body):
        raise DecimalError(f'parsing "{text}": invalid syntax')
    negative = signed and text[:1] == "-"
    # The largest magnitude the type holds: 2**(bits-1) below zero, one less above it.
    limit = (2 ** (bits - 1) - (0 if negative else 1)) if signed else 2**bits - 1
    significant = body.lstrip("0") or "0"
    if len(significant) > len(str(limit)) or int(significant) > limit:
        raise DecimalError(f'parsing "{text}": value out of range')
    return -int(significant) if negative else int(significant)


def scaled_value_from_int_or_percent(value: IntOrPercent | None, total: int, round_up: bool) -> int:
    """An int as is, or ``"N%"`` of ``total`` rounded up or down (apimachinery
    ``intstr.GetScaledValueFromIntOrPercent``).

    Raises :class:`IntOrPercentError` for ``None``, a string without ``%``, or a percentage
    that is not an integer.
    """
    if value is None:
        raise IntOrPercentError("nil value for IntOrString")
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise IntOrPercentError(f"invalid type: neither int nor percentage: {value!r}")
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise IntOrPercentError(f"invalid type: string is not a percentage: {value!r}")
    try:
        percent = parse_decimal(value[:-1], bits=64, signed=True)  # Go's strconv.Atoi
    except DecimalError as error:
        raise IntOrPercentError(f'invalid value "{value}": {error}') from None
    product = percent * total
    # ceil/floor of product / 100 in exact integer arithmetic (Go rounds the float quotient,
    # which is the same for every int32 input).
    return -(-product // 100) if round_up else product // 100
