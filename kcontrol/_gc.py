"""Pausing CPython's cyclic garbage collector around bulk decoding, process-wide.

Decoding and caching a large LIST creates millions of containers in one go. The cyclic
collector is triggered by allocation counts, so it runs again and again in the middle,
each time walking the fresh objects - which hold no reference cycles and cannot be freed.

:func:`gc_paused` is reentrant and counts its users across the whole process: several
informers may sync at once, and the collector comes back on only when the last of them
leaves. It never turns the collector on if it was off when the first user entered (someone
else disabled it).

Pausing only defers work: the objects created meanwhile are all still in the youngest
generation, and letting the collector find them by itself costs three passes over them
(young, middle, then a full collection) at unpredictable moments - measured at 50,000 pods
(``bench/informer.py``) that put multi-second stalls into the first minute of watching.
So a pause opened with ``settle=True`` (an informer's initial sync) ends, when the last user
leaves, with a single deliberate pass:

- by default one full ``gc.collect()``, after which the cached objects sit in the oldest
  generation and the next full collection is due only after as many new objects again -
  but only if the pause left at least :data:`SETTLE_MIN_OBJECTS` new containers: a small
  relist in a process holding a big cache must not pay for a walk of the whole heap, and
  the collector's own young-generation passes over a few objects are cheap;
- with :func:`set_gc_freeze_after_sync` on, ``gc.freeze()`` instead: everything alive moves
  to the permanent generation and is never walked again (free, but cyclic garbage alive at
  that moment is never collected; kcontrol-manager turns this on, as long-lived servers do).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["SETTLE_MIN_OBJECTS", "gc_paused", "set_gc_freeze_after_sync"]

SETTLE_MIN_OBJECTS = 100_000
"""New GC-tracked objects (about 700 pods' worth) below which a pause ends without a full
collection."""


class _PauseState:
    depth = 0
    """How many ``gc_paused`` blocks are open, across all tasks."""
    restore = False
    """Whether the GC was enabled when the outermost block opened."""
    settle = False
    """Whether a block of the current pause asked for a settling pass at its end."""
    freeze = False
    """Settle with ``gc.freeze()`` rather than ``gc.collect()``."""


def set_gc_freeze_after_sync(enabled: bool) -> bool:
    """Settle bulk pauses with ``gc.freeze()`` (True) or a full collection (False, the
    default); process-wide. Returns the previous setting, to restore it."""
    previous = _PauseState.freeze
    _PauseState.freeze = enabled
    return previous


@contextmanager
def gc_paused(*, settle: bool = False) -> Iterator[None]:
    """Keep the cyclic GC disabled for the ``with`` block (reentrant, process-wide).

    ``settle``: the block created many long-lived objects; when the pause ends, settle them
    in one pass (module docstring) instead of leaving them to the collector's heuristics.
    """
    state = _PauseState
    if state.depth == 0:
        state.restore = gc.isenabled()
        state.settle = False
        gc.disable()
    state.depth += 1
    try:
        yield
        state.settle = state.settle or settle  # not reached after a failure: nothing to settle
    finally:
        state.depth -= 1
        if state.depth == 0 and state.restore:
            if state.settle:
                if state.freeze:
                    gc.freeze()
                elif gc.get_count()[0] >= SETTLE_MIN_OBJECTS:
                    gc.collect()
            gc.enable()
