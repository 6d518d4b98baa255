"""Registration with ``kcontrol-manager``: the flags, the factory and the :class:`ControllerSpec`.

Verbosity and version are the manager's own ``--v`` and ``--version``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from kcontrol.manager import ControllerContext, ControllerFlag, ControllerSpec
from kcontrol.manager.flags import parse_duration

from ._names import NAME

if TYPE_CHECKING:
    from ._controller import ConfigRestartController

__all__ = [
    "CHECK_PERIOD",
    "GRACE_PERIOD",
    "HMAC_KEY_FILE",
    "IGNORED_ERRORS",
    "SPEC",
    "SYNC_TIMEOUT",
    "WORKERS",
    "new_controller",
    "parse_patterns",
]

WORKERS: Final = 4
"""Workloads patched at once."""

SYNC_TIMEOUT: Final = 30.0
"""Seconds one sync (one patch) may take before it is cancelled and retried."""


def duration(text: str) -> float:
    """A Go duration (``500ms``, ``5s``) in seconds."""
    return parse_duration(text)


def parse_patterns(text: str) -> tuple[re.Pattern[str], ...]:
    """``;``-separated regular expressions (xing's ``IGNORED_ERRORS`` separator: a regular
    expression may well contain a comma); :class:`ValueError` for an invalid one."""
    patterns = []
    for part in text.split(";"):
        if part.strip():
            try:
                patterns.append(re.compile(part.strip()))
            except re.error as error:
                raise ValueError(f"invalid regular expression {part.strip()!r}: {error}") from None
    return tuple(patterns)


CHECK_PERIOD = ControllerFlag(
    "configrestart-check-period",
    default=0.5,
    help="How often pending config changes are checked for restarts, as a duration (500ms).",
    parse=duration,
    minimum=0.001,
)
"""xing's ``--restart-check-period`` (500 ms)."""

GRACE_PERIOD = ControllerFlag(
    "configrestart-grace-period",
    default=5.0,
    help=(
        "How long a change waits, as a duration, before workloads are restarted; further "
        "changes of the same resource meanwhile are compacted into it (5s)."
    ),
    parse=duration,
    minimum=0.0,
)
"""xing's ``--restart-grace-period`` (5 s)."""

IGNORED_ERRORS = ControllerFlag(
    "configrestart-ignored-errors",
    default=(),
    help=(
        "Regular expressions, separated by ';': a workload update failing with an error "
        "matching one is logged as a warning and not retried (other errors are retried)."
    ),
    parse=parse_patterns,
)
"""xing's ``--ignored-errors``."""

HMAC_KEY_FILE = ControllerFlag(
    "configrestart-hmac-key-file",
    default="",
    help=(
        "File holding the secret key (at least 16 bytes) of the HMAC checksums of config "
        "data. Required when configrestart runs."
    ),
    parse=str,
)


def new_controller(ctx: ControllerContext) -> ConfigRestartController:
    """Build the config-restart controller from the manager's context.

    Raises :class:`~kcontrol.errors.OptionsError` (the manager exits with one line naming
    it) when ``--configrestart-hmac-key-file`` is missing, unreadable or too short.
    """
    from ._checksums import HmacKey  # noqa: PLC0415 - only when the manager runs it
    from ._controller import ConfigRestartController  # noqa: PLC0415

    return ConfigRestartController(
        client=ctx.client,
        informers=ctx.informers,
        recorder=ctx.new_recorder(NAME),
        key=HmacKey.from_file(ctx.flag(HMAC_KEY_FILE.name)),
        check_period=ctx.flag(CHECK_PERIOD.name),
        grace_period=ctx.flag(GRACE_PERIOD.name),
        ignored_errors=ctx.flag(IGNORED_ERRORS.name),
        workers=WORKERS,
        registry=ctx.registry,
        sync_timeout=SYNC_TIMEOUT,
    )


SPEC = ControllerSpec(
    NAME,
    new_controller,
    enabled_by_default=False,
    flags=(CHECK_PERIOD, GRACE_PERIOD, HMAC_KEY_FILE, IGNORED_ERRORS),
)
"""``configrestart``: opt-in (not selected by ``*``; ``--controllers=*,configrestart``)."""
