"""What to write on one workload: its new checksums annotation, and whether to restart (pure).

For each config the workload references:

- config pending (not seen, or deleted): keep the stored checksum as it is, so that the
  config coming back with other data restarts the workload;
- stored checksum made by this controller's key, and different: **restart** (xing's normal
  case: a config the workload has been using changed);
- stored checksum foreign (another key's, xing's format): replace it, no restart (a key
  rotation or a switch from xing's controller restarts nothing by itself);
- no stored checksum: restart only if the config changed since the reference was first
  seen (its baseline, see :mod:`~kcontrol_controllers.configrestart._catalog`): the config was newly
  referenced and changed again before its checksum was stored. Otherwise store it: the pods
  started with this data (the reference came with a template change, which rolled them).

Stored checksums of configs no longer referenced are dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ._names import FAMILIES, AnnotationFamily

__all__ = ["Plan", "encode_checksums", "parse_checksums", "patch_body", "plan", "stored_checksums"]


@dataclass(frozen=True, slots=True)
class Plan:
    """``checksums``: what the annotation should hold; ``restart_for``: the configs whose
    change needs a restart (sorted; empty: no restart); ``adopted``: foreign checksums
    replaced."""

    checksums: dict[str, str]
    restart_for: tuple[str, ...] = ()
    adopted: tuple[str, ...] = ()

    @property
    def restart(self) -> bool:
        return bool(self.restart_for)


def plan(
    references: frozenset[str],
    stored: Mapping[str, str],
    current: Callable[[str], str | None],
    baselines: Mapping[str, str],
    is_own: Callable[[str], bool],
) -> Plan:
    """See the module docstring. ``current(config)`` is the catalog's checksum (``None``:
    pending); ``is_own(checksum)`` tells this key's checksums from foreign ones."""
    checksums: dict[str, str] = {}
    restart_for: list[str] = []
    adopted: list[str] = []
    for config in sorted(references):
        checksum = current(config)
        previous = stored.get(config)
        if checksum is None:
            if previous is not None:
                checksums[config] = previous
            continue
        if previous is not None:
            if not is_own(previous):
                if previous != checksum:
                    adopted.append(config)
            elif previous != checksum:
                restart_for.append(config)
        else:
            baseline = baselines.get(config)
            if baseline is not None and baseline != checksum:
                restart_for.append(config)
        checksums[config] = checksum
    return Plan(checksums, tuple(restart_for), tuple(adopted))


def parse_checksums(text: str | None) -> dict[str, str] | None:
    """The JSON object of a checksums annotation; ``None`` if absent or not an object of
    strings (the caller treats that as empty and overwrites it).

    Parsed iteratively, accepting exactly a flat JSON object of strings, so no input - a
    nesting thousands of levels deep included - can raise anything but ``None``."""
    if text is None:
        return None
    try:
        return _flat_string_object(text)
    except ValueError:  # json.JSONDecodeError included
        return None


_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _flat_string_object(text: str) -> dict[str, str]:
    """``{"k": "v", ...}`` with JSON's whitespace and string escapes, as :func:`json.loads`
    reads it (a repeated key: the last wins); :class:`ValueError` for anything else."""

    def skip(pos: int) -> int:
        match = _WHITESPACE.match(text, pos)
        return match.end() if match else pos

    def string(pos: int) -> tuple[str, int]:
        if text[pos : pos + 1] != '"':
            raise ValueError(f"expected a string at {pos}")
        value, end = _DECODER.raw_decode(text, pos)  # a string: no nesting to recurse into
        if not isinstance(value, str):
            raise ValueError(f"expected a string at {pos}")
        return value, end

    result: dict[str, str] = {}
    pos = skip(0)
    if text[pos : pos + 1] != "{":
        raise ValueError("expected an object")
    pos = skip(pos + 1)
    if text[pos : pos + 1] == "}":
        pos += 1
    else:
        while True:
            key, pos = string(pos)
            pos = skip(pos)
            if text[pos : pos + 1] != ":":
                raise ValueError(f"expected ':' at {pos}")
            value, pos = string(skip(pos + 1))
            result[key] = value
            pos = skip(pos)
            separator = text[pos : pos + 1]
            pos = skip(pos + 1)
            if separator == "}":
                break
            if separator != ",":
                raise ValueError(f"expected ',' or '}}' at {pos}")
    if skip(pos) != len(text):
        raise ValueError("extra data after the object")
    return result


def stored_checksums(
    annotations: Mapping[str, Any] | None, family: AnnotationFamily
) -> tuple[dict[str, str], bool]:
    """The checksums a workload's annotations hold, and whether they are in ``family``'s
    annotation. Without (a valid) one there, the other family's is read: a workload moved
    between xing's annotations and kcontrol's keeps its baseline."""
    annotations = annotations or {}
    own = parse_checksums(annotations.get(family.checksums))
    if own is not None:
        return own, True
    for other in FAMILIES:
        if other is not family:
            found = parse_checksums(annotations.get(other.checksums))
            if found is not None:
                return found, False
    return {}, False


def encode_checksums(checksums: Mapping[str, str]) -> str:
    """The annotation value: compact JSON, keys sorted (xing's format)."""
    return json.dumps(dict(checksums), sort_keys=True, separators=(",", ":"))


def patch_body(
    family: AnnotationFamily,
    checksums: Mapping[str, str],
    *,
    resource_version: str | None,
    restart_at: str | None,
) -> dict[str, Any]:
    """The JSON merge patch: the checksums annotation, and with ``restart_at`` the restart
    trigger in the pod template; nothing else. ``resource_version`` makes it conditional on
    the version the decision was made from (a 409 Conflict if the workload changed since)."""
    metadata: dict[str, Any] = {"annotations": {family.checksums: encode_checksums(checksums)}}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    body: dict[str, Any] = {"metadata": metadata}
    if restart_at is not None:
        body["spec"] = {"template": {"metadata": {"annotations": {family.timestamp: restart_at}}}}
    return body
