"""Syntax rules for label keys and values, as apimachinery's ``util/validation`` states them.

A key is a *qualified name*: an optional DNS-1123 subdomain prefix (at most 253 characters)
and a ``/``, then a name of at most 63 alphanumerics, ``-``, ``_`` or ``.`` that starts and
ends alphanumeric. A value is empty or follows the same rule as the name part.

Both functions return the list of problems (empty when the input is valid), so a caller can
report every problem at once, as ``field.ErrorList`` does upstream.
"""

from __future__ import annotations

import re

__all__ = ["label_key_errors", "label_value_errors"]

_NAME_MAX = 63
_PREFIX_MAX = 253
_NAME = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN = re.compile(
    r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
)

_NAME_RULE = (
    "consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character"
)


def label_key_errors(key: str) -> list[str]:
    """Problems with ``key`` as a label key (``IsQualifiedName``); empty if it is valid."""
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
        errors: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        errors = _prefix_errors(prefix)
    else:
        return [
            "a qualified name must "
            + _NAME_RULE
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > _NAME_MAX:
        errors.append(f"name part must be no more than {_NAME_MAX} characters")
    elif not _NAME.fullmatch(name):
        errors.append("name part must " + _NAME_RULE)
    return errors


def _prefix_errors(prefix: str) -> list[str]:
    if not prefix:
        return ["prefix part must be non-empty"]
    if len(prefix) > _PREFIX_MAX:
        return [f"prefix part must be no more than {_PREFIX_MAX} characters"]
    if not _DNS1123_SUBDOMAIN.fullmatch(prefix):
        return [
            "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character"
        ]
    return []


def label_value_errors(value: str) -> list[str]:
    """Problems with ``value`` as a label value (``IsValidLabelValue``); empty if valid."""
    if len(value) > _NAME_MAX:
        return [f"must be no more than {_NAME_MAX} characters"]
    if value and not _NAME.fullmatch(value):
        return ["a valid label must be an empty string or " + _NAME_RULE]
    return []
