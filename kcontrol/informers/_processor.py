"""Event handlers and their delivery: one buffer and one delivery loop per handler.

A port of client-go's ``sharedProcessor`` / ``processorListener``. The informer hands each
notification to :meth:`SharedProcessor.distribute`, which appends it to every listener's
unbounded buffer and returns at once: distributing never waits for a handler. Each listener's
:meth:`Listener.run` loop takes notifications from its own buffer in order and calls its
handler, so a slow handler delays only itself (its buffer grows) and never the watch or the
other handlers.

Guarantees to a handler: notifications arrive one at a time (the next call starts after the
previous one returned, or its coroutine finished), in the order the cache changed; the same
object is passed to every handler and is the one in the cache - never mutate it. A handler
that raises - ``asyncio.CancelledError`` of its own included (it awaited something that got
cancelled) - has the error logged and gets the next notification; only cancelling the
delivery task itself (the informer stopping) ends delivery. Handlers should be quick: put
keys on a workqueue and do the work elsewhere.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from kcontrol.client import Object
from kcontrol.logging import get_logger

__all__ = [
    "Listener",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
    "SharedProcessor",
]

_log = get_logger(__name__)

_YIELD_EVERY = 64
"""A delivery loop yields to the event loop after this many notifications in a row, so a
backlog of synchronous handler calls cannot starve other tasks."""


class ResourceEventHandler(Protocol):
    """Receives the changes of an informer's cache.

    - ``on_add(obj, is_in_initial_list)``: an object appeared. ``is_in_initial_list`` is True
      for objects of the informer's first LIST and for the replay a handler gets when it is
      added to a running informer.
    - ``on_update(old, new)``: an object changed. ``old`` and ``new`` have the same
      resourceVersion on a periodic resync.
    - ``on_delete(obj)``: an object went away. ``obj`` is its final state, or a
      :class:`~kcontrol.informers.DeletedFinalStateUnknown` tombstone if the deletion was
      only noticed by a relist.

    Methods may be plain functions or coroutine functions (they are awaited). They must not
    block and must not mutate the objects.
    """

    def on_add(self, obj: Object, is_in_initial_list: bool) -> object: ...

    def on_update(self, old: Object, new: Object) -> object: ...

    def on_delete(self, obj: Any) -> object: ...


@dataclass(frozen=True, slots=True)
class ResourceEventHandlerFuncs:
    """A :class:`ResourceEventHandler` built from optional callables (sync or async).

    ``add_func`` takes just the object, like client-go's ``ResourceEventHandlerFuncs``;
    implement the protocol directly to see ``is_in_initial_list``.
    """

    add_func: Callable[[Object], object] | None = None
    update_func: Callable[[Object, Object], object] | None = None
    delete_func: Callable[[Any], object] | None = None

    def on_add(self, obj: Object, is_in_initial_list: bool) -> object:
        return None if self.add_func is None else self.add_func(obj)

    def on_update(self, old: Object, new: Object) -> object:
        return None if self.update_func is None else self.update_func(old, new)

    def on_delete(self, obj: Any) -> object:
        return None if self.delete_func is None else self.delete_func(obj)


class ResourceEventHandlerRegistration(Protocol):
    """What ``add_event_handler`` returns: pass it to ``remove_event_handler``."""

    def has_synced(self) -> bool:
        """True once the informer has synced and this handler has been called for every
        object of the initial list (or of its replay, for a late handler)."""
        ...


# -- notifications ---------------------------------------------------------------------------
# One notification object is shared by every listener's buffer; slots keep them small.


class Notification:
    """A change to deliver; :meth:`deliver` calls the matching handler method."""

    __slots__ = ()

    def deliver(self, handler: ResourceEventHandler) -> object:
        raise NotImplementedError


class AddNotification(Notification):
    __slots__ = ("is_in_initial_list", "obj")

    def __init__(self, obj: Object, is_in_initial_list: bool) -> None:
        self.obj = obj
        self.is_in_initial_list = is_in_initial_list

    def deliver(self, handler: ResourceEventHandler) -> object:
        return handler.on_add(self.obj, self.is_in_initial_list)


class UpdateNotification(Notification):
    __slots__ = ("new", "old")

    def __init__(self, old: Object, new: Object) -> None:
        self.old = old
        self.new = new

    def deliver(self, handler: ResourceEventHandler) -> object:
        return handler.on_update(self.old, self.new)


class DeleteNotification(Notification):
    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def deliver(self, handler: ResourceEventHandler) -> object:
        return handler.on_delete(self.obj)


# -- listeners -------------------------------------------------------------------------------


class Listener:
    """One handler with its own unbounded buffer and delivery loop (``processorListener``).

    It is also the handler's :class:`ResourceEventHandlerRegistration`.
    """

    def __init__(
        self,
        handler: ResourceEventHandler,
        resync_period: float,
        now: float,
        upstream_synced: Callable[[], bool],
    ) -> None:
        self.handler = handler
        self.resync_period = resync_period
        """Seconds between resyncs for this handler; 0 means never."""
        self.next_resync = now + resync_period
        self._upstream_synced = upstream_synced
        self._buffer: deque[Notification] = deque()
        self._wakeup = asyncio.Event()
        # Invariant: the number of initial-list adds appended and not yet fully delivered.
        self._pending_initial = 0
        self._removed = False

    def has_synced(self) -> bool:
        return self._pending_initial == 0 and self._upstream_synced()

    @property
    def backlog(self) -> int:
        """Notifications waiting for this handler (informational)."""
        return len(self._buffer)

    def add(self, notification: Notification) -> None:
        """Queue a notification; never blocks."""
        if self._removed:
            return
        if isinstance(notification, AddNotification) and notification.is_in_initial_list:
            self._pending_initial += 1
        self._buffer.append(notification)
        self._wakeup.set()

    def add_initial(self, objects: Iterable[Object]) -> None:
        """Queue an initial-list add for each object (the replay for a late handler)."""
        for obj in objects:
            self.add(AddNotification(obj, True))

    def resync_due_at(self, watching_since: float) -> float:
        """When this listener's next resync is due, given that the informer's reflector has
        been watching since ``watching_since``: at ``next_resync``, but never sooner than a
        period into the watch phase (client-go starts its resync timer after each list)."""
        return max(self.next_resync, watching_since + self.resync_period)

    def remove(self) -> None:
        """Stop delivery: drop the backlog and make :meth:`run` return."""
        self._removed = True
        self._buffer.clear()
        self._pending_initial = 0
        self._wakeup.set()

    async def run(self) -> None:
        """Deliver notifications until :meth:`remove` is called or the task is cancelled."""
        buffer = self._buffer
        delivered = 0
        while not self._removed:
            if not buffer:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            notification = buffer.popleft()
            try:
                result = notification.deliver(self.handler)
                if result is not None and inspect.isawaitable(result):
                    await result
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # this delivery task is being cancelled: stop
                self._log_failure(notification)  # the handler's own cancellation
            except Exception:
                self._log_failure(notification)
            finally:
                if isinstance(notification, AddNotification) and notification.is_in_initial_list:
                    self._pending_initial = max(0, self._pending_initial - 1)
            delivered += 1
            if delivered % _YIELD_EVERY == 0:
                await asyncio.sleep(0)

    def _log_failure(self, notification: Notification) -> None:
        _log.exception(
            "event handler failed",
            handler=type(self.handler).__qualname__,
            notification=type(notification).__name__,
        )


class SharedProcessor:
    """The informer's set of listeners and the fan-out of notifications to them.

    Resync notifications (updates whose resourceVersion did not change) go only to the
    listeners that :meth:`start_resync` found due; everything else goes to every listener.
    """

    def __init__(self) -> None:
        # listener -> whether it currently receives resync notifications. Insertion-ordered,
        # so listeners are fed in the order they were added.
        self._listeners: dict[Listener, bool] = {}

    def __len__(self) -> int:
        return len(self._listeners)

    def listeners(self) -> list[Listener]:
        return list(self._listeners)

    def add_listener(self, listener: Listener) -> None:
        self._listeners[listener] = False

    def remove_listener(self, listener: Listener) -> bool:
        """Remove and stop ``listener``; False if it was not registered (idempotent)."""
        if self._listeners.pop(listener, None) is None:
            return False
        listener.remove()
        return True

    def distribute(self, notification: Notification, is_sync: bool = False) -> None:
        for listener, syncing in self._listeners.items():
            if syncing or not is_sync:
                listener.add(notification)

    def next_resync_at(self, watching_since: float) -> float | None:
        """When the earliest listener resync is due (see :meth:`Listener.resync_due_at`),
        or None if no listener resyncs."""
        due = [
            lis.resync_due_at(watching_since) for lis in self._listeners if lis.resync_period > 0
        ]
        return min(due) if due else None

    def start_resync(self, now: float, watching_since: float) -> bool:
        """Mark the listeners whose resync is due (and schedule their next one); True if any."""
        any_due = False
        for listener in self._listeners:
            due = listener.resync_period > 0 and now >= listener.resync_due_at(watching_since)
            self._listeners[listener] = due
            if due:
                any_due = True
                listener.next_resync = now + listener.resync_period
        return any_due

    def finish_resync(self) -> None:
        for listener in self._listeners:
            self._listeners[listener] = False

    def stop(self) -> None:
        """Stop every listener (the informer is shutting down)."""
        for listener in self._listeners:
            listener.remove()
        self._listeners.clear()
