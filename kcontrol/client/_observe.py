"""Seeing the writes a task makes: the hook the consistency store records them through.

Every client (:class:`~kcontrol.client.ApiClient`, and the fake of
:mod:`kcontrol.testing.fake`) reports each successful create, update and patch - the
resource and the object as the server answered it - to the observer of the current context,
if there is one. A controller sets one around a sync (:func:`observe_writes`) to learn what
that sync wrote without passing anything to the code that writes, whichever client it uses.
Deletes are not reported: the answer does not carry the version the deletion is seen at.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

from kcontrol.client._interface import Object
from kcontrol.client._resources import Resource

__all__ = ["WriteObserver", "notify_write", "observe_writes"]

WriteObserver = Callable[[Resource, Object], None]
"""``observer(resource, answer)``: called after each successful write of the current context,
with the object as the server answered it. Must not block or raise."""

_observer: contextvars.ContextVar[WriteObserver | None] = contextvars.ContextVar(
    "kcontrol_client_write_observer", default=None
)


@contextlib.contextmanager
def observe_writes(observer: WriteObserver) -> Iterator[None]:
    """Report to ``observer`` every write the current task (and the tasks it starts) makes
    until the block ends; an enclosing observer is restored afterwards."""
    token = _observer.set(observer)
    try:
        yield
    finally:
        _observer.reset(token)


def notify_write(resource: Resource, answer: Object) -> None:
    """What a client calls after a successful write (no-op without an observer)."""
    observer = _observer.get()
    if observer is not None:
        observer(resource, answer)
