"""Event recorders: what a controller calls to report what it did.

The fake for tests is :class:`kcontrol.testing.FakeRecorder`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kcontrol.client import Object
from kcontrol.clock import Clock
from kcontrol.events._event import EventNamer, is_valid_event_type, make_event, object_reference
from kcontrol.logging import get_logger
from kcontrol.metatime import format_time

__all__ = ["BroadcastRecorder", "EventRecorder", "format_message"]

_log = get_logger(__name__)


class EventRecorder(Protocol):
    """Records events about objects on behalf of one component.

    ``obj`` is the object the event is about (as read from the API, with ``kind`` and
    ``apiVersion``) or an ``ObjectReference`` mapping (see
    :func:`~kcontrol.events.object_reference`); the Event goes to the object's namespace.
    ``event_type`` is ``Normal`` or ``Warning``. ``reason`` is short, UpperCamelCase and
    machine-friendly (``SuccessfulCreate``); ``message`` is for humans.

    Recording never blocks and never raises: an event that cannot be queued is dropped and
    counted, so it is safe to call from event handlers and syncs alike. Call it from the event
    loop's thread (the queue behind it is an :class:`asyncio.Queue`).
    """

    def event(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        """Record an event."""
        ...

    def eventf(
        self, obj: Mapping[str, Any], event_type: str, reason: str, fmt: str, *args: object
    ) -> None:
        """Record an event whose message is ``fmt % args`` (printf style, like Go's Sprintf)."""
        ...


def format_message(fmt: str, args: tuple[object, ...]) -> str:
    """``fmt % args``, or (never raising) ``fmt`` followed by the arguments if they do not fit."""
    if not args:
        return fmt
    try:
        return fmt % args
    except (TypeError, ValueError, KeyError):
        return f"{fmt} (args: {', '.join(repr(a) for a in args)})"


class BroadcastRecorder:
    """The recorder :meth:`EventBroadcaster.new_recorder` hands out.

    It builds the Event at once (timestamp, unique name) and passes it to ``submit``, which
    queues it without blocking; ``drop`` counts events that cannot be built.
    """

    __slots__ = ("_clock", "_component", "_drop", "_host", "_namer", "_submit")

    def __init__(
        self,
        *,
        component: str,
        host: str | None,
        clock: Clock,
        namer: EventNamer,
        submit: Callable[[Object], None],
        drop: Callable[[str], None],
    ) -> None:
        self._component = component
        self._host = host
        self._clock = clock
        self._namer = namer
        self._submit = submit
        self._drop = drop

    def event(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        try:
            if not is_valid_event_type(event_type):
                raise ValueError(f"unsupported event type {event_type!r}")
            reference = object_reference(obj)
            event = make_event(
                reference,
                event_type,
                reason,
                message,
                name=self._namer.name(reference["name"]),
                timestamp=format_time(self._clock.wall()),
                component=self._component,
                host=self._host,
            )
        except Exception as error:
            _log.error(
                "not recording event",
                type=event_type,
                reason=reason,
                message=message,
                error=str(error),
            )
            self._drop("invalid")
            return
        self._submit(event)

    def eventf(
        self, obj: Mapping[str, Any], event_type: str, reason: str, fmt: str, *args: object
    ) -> None:
        self.event(obj, event_type, reason, format_message(fmt, args))
