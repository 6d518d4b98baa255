"""Capturing what kcontrol logs, for assertions: structlog's ``capture_logs`` for kcontrol."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from kcontrol.logging import LogMessage

__all__ = ["capture_logs"]


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.NOTSET)
        self.entries: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.msg
        entry: dict[str, Any]
        if isinstance(message, LogMessage):
            entry = {**message.context, "event": message.event}
        else:
            entry = {"event": record.getMessage()}
        entry["log_level"] = record.levelname.lower()
        entry["logger"] = record.name
        if record.exc_info:
            entry["exc_info"] = record.exc_info
        self.entries.append(entry)


@contextlib.contextmanager
def capture_logs(level: int = logging.DEBUG) -> Iterator[list[dict[str, Any]]]:
    """Collect every stdlib log record at ``level`` or above while the block runs.

    Yields the list the entries are appended to, one dict per record, as
    ``structlog.testing.capture_logs`` shapes them: ``event``, ``log_level`` (``"info"``,
    ...), ``logger`` (the logger's name), the line's context pairs (see
    :class:`kcontrol.logging.LogMessage`) and ``exc_info`` when it was given. The root
    logger's level is ``level`` for the block and restored afterwards; loggers with a level
    of their own keep it.
    """
    root = logging.getLogger()
    handler = _Capture()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield handler.entries
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
