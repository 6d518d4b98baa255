"""A fake event recorder: client-go's ``record.FakeRecorder``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcontrol.events._recorder import format_message

__all__ = ["FakeRecorder"]


class FakeRecorder:
    """An :class:`~kcontrol.events.EventRecorder` that keeps events in :attr:`events` instead
    of writing them.

    Each event is stored as ``"<type> <reason> <message>"``, as client-go's
    ``record.FakeRecorder`` formats them; with ``include_object`` the line ends with
    `` involvedObject{kind=<kind>,apiVersion=<apiVersion>}``. Nothing is validated.
    """

    def __init__(self, *, include_object: bool = False) -> None:
        self.include_object = include_object
        self.events: list[str] = []

    def event(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        line = f"{event_type} {reason} {message}"
        if self.include_object:
            line += f" involvedObject{{kind={obj.get('kind')},apiVersion={obj.get('apiVersion')}}}"
        self.events.append(line)

    def eventf(
        self, obj: Mapping[str, Any], event_type: str, reason: str, fmt: str, *args: object
    ) -> None:
        self.event(obj, event_type, reason, format_message(fmt, args))
