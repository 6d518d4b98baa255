"""Pausing CPython's cyclic garbage collector while bulk data is decoded, process-wide.

Decoding and caching a large LIST creates millions of containers in one go. The cyclic
collector is triggered by allocation counts, so it runs again and again in the middle,
each time walking the fresh objects - which hold no reference cycles and cannot be freed.

Two ways to pause it, sharing one process-wide count of users (several informers may sync
at once; the collector comes back on only when the last user leaves, and never if it was
off when the first one came - someone else disabled it):

- :func:`gc_paused`, a ``with`` block around synchronous work (decoding one body);
- :class:`GcPause`, which a task takes while it decodes and stores a LIST or a streaming
  list and gives back whenever it is about to wait for the network (``hold`` / ``release``
  / ``finish``). A pause held with a ``lease`` lapses by itself after that many seconds
  without a ``hold``: a stream that stopped delivering is a network wait, not decoding.

Bounds: the collector is never kept off for more than :data:`MAX_PAUSE` seconds in a row,
however the users overlap. When that limit is reached it is enabled again and stays enabled
until every user of that pause has left; only then can a new pause begin. The limit is
enforced by a timer on the clock of whoever started the pause (checked again whenever a user
joins), so it also ends a pause whose holder is stuck on an await.

Pausing only defers work: the objects created meanwhile are all still in the youngest
generation, and letting the collector find them by itself costs three passes over them
(young, middle, then a full collection) at unpredictable moments: stalls in the first minute
of watching after a big sync (measured: docs/benchmarks.md).
So a pause that a user ends asking to settle (an informer's sync) ends, when the last user
leaves, with a single deliberate pass:

- by default one full ``gc.collect()``, after which the cached objects sit in the oldest
  generation and the next full collection is due only after as many new objects again -
  but only if the pause left at least :data:`SETTLE_MIN_OBJECTS` new containers: a small
  relist in a process holding a big cache must not pay for a walk of the whole heap, and
  the collector's own young-generation passes over a few objects are cheap;
- with :func:`set_gc_freeze_after_sync` on, and only when a user allowed it (a reflector's
  first sync; relists do not), ``gc.freeze()`` instead: everything alive moves to the
  permanent generation and is never walked again (free, but cyclic garbage alive at that
  moment is never collected; kcontrol-manager turns this on, as long-lived servers do).
  Relists settle with the collection, so they never pin garbage.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Self

from kcontrol.clock import Clock, RealClock, TimerHandle

__all__ = ["MAX_PAUSE", "SETTLE_MIN_OBJECTS", "GcPause", "gc_paused", "set_gc_freeze_after_sync"]

SETTLE_MIN_OBJECTS = 100_000
"""New GC-tracked objects below which a pause ends without a full collection: a small relist
does not pay for a walk of the whole heap (the number of pods it stands for:
docs/benchmarks.md)."""

MAX_PAUSE = 10.0
"""Longest the collector stays disabled in one go, in seconds: several times what a large
informer sync takes to decode and store (docs/benchmarks.md). A sync that takes longer loses
part of the benefit, nothing else."""

_REAL_CLOCK = RealClock()


class _PauseState:
    depth = 0
    """How many users hold the pause, across all tasks."""
    restore = False
    """Whether the GC was enabled when the current pause began."""
    expired = False
    """The current pause reached MAX_PAUSE: the GC is back on until depth drops to 0."""
    deadline = 0.0
    clock: Clock = _REAL_CLOCK
    """The clock of the user that began the current pause; the deadline is on it."""
    timer: TimerHandle | None = None
    settle = False
    """Whether a user of the current pause asked for a settling pass at its end."""
    freeze_allowed = False
    """Whether one of those users allowed the pass to be ``gc.freeze()``."""
    freeze = False
    """Settle with ``gc.freeze()`` rather than ``gc.collect()`` (where allowed)."""


def set_gc_freeze_after_sync(enabled: bool) -> bool:
    """Settle a reflector's first sync with ``gc.freeze()`` (True) or a full collection
    (False, the default); process-wide. Returns the previous setting, to restore it."""
    previous = _PauseState.freeze
    _PauseState.freeze = enabled
    return previous


def _enter(clock: Clock) -> None:
    state = _PauseState
    if state.depth == 0:
        state.restore = gc.isenabled()
        state.expired = state.settle = state.freeze_allowed = False
        if state.restore:
            gc.disable()
            state.clock = clock
            state.deadline = clock.now() + MAX_PAUSE
            try:
                state.timer = clock.call_at(state.deadline, _on_deadline)
            except RuntimeError:  # no running event loop: synchronous work cannot hang
                state.timer = None
    elif state.restore and not state.expired and state.clock.now() >= state.deadline:
        _expire()
    state.depth += 1


def _leave(*, settle: bool, freeze_allowed: bool) -> None:
    state = _PauseState
    state.depth -= 1
    if settle:
        state.settle = True
        state.freeze_allowed = state.freeze_allowed or freeze_allowed
    if state.depth > 0:
        return
    if state.timer is not None:
        state.timer.cancel()
        state.timer = None
    if not state.restore:
        return
    if state.settle:
        if state.freeze and state.freeze_allowed:
            gc.freeze()
        elif gc.get_count()[0] >= SETTLE_MIN_OBJECTS:
            gc.collect()
    gc.enable()


def _on_deadline() -> None:
    _PauseState.timer = None
    if _PauseState.depth > 0 and _PauseState.restore and not _PauseState.expired:
        _expire()


def _expire() -> None:
    _PauseState.expired = True
    gc.enable()


@contextmanager
def gc_paused(*, settle: bool = False, freeze: bool = True) -> Iterator[None]:
    """Keep the cyclic GC disabled for the ``with`` block (reentrant, process-wide), at most
    :data:`MAX_PAUSE` seconds; meant for synchronous work.

    ``settle``: the block created many long-lived objects; when the pause ends, settle them
    in one pass (module docstring) instead of leaving them to the collector's heuristics.
    ``freeze``: that pass may be ``gc.freeze()`` when :func:`set_gc_freeze_after_sync` is
    on. A block left by an exception asks for nothing.
    """
    _enter(_REAL_CLOCK)
    ok = False
    try:
        yield
        ok = True
    finally:
        _leave(settle=settle and ok, freeze_allowed=freeze)


class GcPause:
    """One task's share of the process-wide pause, taken and given back as it goes.

    ``hold()`` takes it (if not held) - call it as data is being decoded; ``release()``
    gives it back - call it before waiting for the network; ``finish()`` gives it back at
    the end of a sync, asking for the settling pass. With a ``lease`` (seconds) each
    ``hold()`` keeps the pause for that long only: when no further ``hold()`` comes in
    time, it is given back by itself. ``hold(lease=False)`` keeps it until released
    (CPU-bound work ahead that holds nothing to call ``hold`` from).

    A context manager: leaving the ``with`` block releases the pause (without settling),
    whatever happened. Timers run on ``clock`` (default: the event loop's).
    """

    def __init__(self, *, lease: float | None = None, clock: Clock | None = None) -> None:
        self._lease = lease
        self._clock: Clock = clock or _REAL_CLOCK
        self._held = False
        self._leased = False  # whether the lease applies to the current hold
        self._last_hold = 0.0
        self._timer: TimerHandle | None = None

    @property
    def held(self) -> bool:
        return self._held

    def hold(self, *, lease: bool = True) -> None:
        """Take the pause, or keep it: more data is being decoded."""
        if not self._held:
            self._held = True
            _enter(self._clock)
        self._leased = lease and self._lease is not None
        if self._leased:
            self._last_hold = self._clock.now()
            if self._timer is None:
                self._arm(self._last_hold)
        elif self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def release(self) -> None:
        """Give the pause back (a network wait ahead); no-op if not held."""
        self._give_back(settle=False, freeze=False)

    def finish(self, *, freeze: bool) -> None:
        """Give the pause back at the end of a sync, asking for the settling pass when the
        last user leaves (``freeze``: that pass may be ``gc.freeze()``). Settles even if
        the pause had lapsed meanwhile."""
        if not self._held:
            self._held = True
            _enter(self._clock)
        self._give_back(settle=True, freeze=freeze)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def _give_back(self, *, settle: bool, freeze: bool) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._held:
            self._held = False
            _leave(settle=settle, freeze_allowed=freeze)

    def _arm(self, since: float) -> None:
        assert self._lease is not None
        try:
            self._timer = self._clock.call_at(since + self._lease, self._on_lease_timer)
        except RuntimeError:  # no running event loop: nothing can wait on the network
            self._timer = None

    def _on_lease_timer(self) -> None:
        self._timer = None
        if not (self._held and self._leased):
            return
        if self._clock.now() < self._last_hold + (self._lease or 0.0):  # held since: re-arm
            self._arm(self._last_hold)
            return
        self.release()
