"""How long the controller under test takes to act once what it waits for has happened.

A StatefulSet's rollout is a chain: a pod becomes Ready, the controller creates the next
one; a pod is gone, the controller creates its replacement; a replacement is Ready, the
controller deletes the next old pod. Most of each link is somebody else's time (the
scheduler's, kwok's readiness delay), the same for both managers. The controller's own part
is the gap between the event it waits for and its action, and that gap is what this module
measures, from the benchmark's own watch of the run's pods (so the watch's delay is in both
ends of every gap and cancels out):

- **triggers** of a set: the benchmark's write of the set (create, re-template), one of its
  pods seen Ready for the first time, one of its pods seen gone;
- **actions** of a set: one of its pods seen for the first time (the controller created
  it), one of its pods seen with a deletion timestamp for the first time (the controller
  deleted it).

The reaction of an action is its time minus the newest trigger of the same set before it.
A DaemonSet's burst (fifty pods for one write) gives fifty actions after one trigger, so its
reactions measure how fast the controller works through a burst rather than one link.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kcontrol.controller import get_controller_of
from kcontrol.informers import deleted_object
from kcontrol_controllers.podutil import is_pod_ready

__all__ = ["ACTION", "TRIGGER", "Mark", "PodTracker", "Reactions", "reactions", "summary"]

TRIGGER = "trigger"
ACTION = "action"


@dataclass(frozen=True)
class Mark:
    at: float  # wall-clock seconds
    owner: str  # the set's name
    kind: str  # TRIGGER or ACTION


def _owner(pod: Mapping[str, Any]) -> str | None:
    ref = get_controller_of(pod)
    name = None if ref is None else ref.get("name")
    return name if isinstance(name, str) else None


def _deleting(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


@dataclass
class PodTracker:
    """Event handlers for the benchmark's pod informer, and :meth:`wrote` for its own writes
    of a set: each appends a :class:`Mark`, stamped by ``clock`` (wall-clock seconds)."""

    clock: Callable[[], float]
    marks: list[Mark] = field(default_factory=list)

    def wrote(self, owner: str) -> None:
        self.marks.append(Mark(self.clock(), owner, TRIGGER))

    def on_add(self, pod: Mapping[str, Any]) -> None:
        owner = _owner(pod)
        if owner is not None:
            self.marks.append(Mark(self.clock(), owner, ACTION))

    def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        owner = _owner(new)
        if owner is None:
            return
        if is_pod_ready(new) and not is_pod_ready(old):
            self.marks.append(Mark(self.clock(), owner, TRIGGER))
        if _deleting(new) and not _deleting(old):
            self.marks.append(Mark(self.clock(), owner, ACTION))

    def on_delete(self, obj: Any) -> None:
        pod = deleted_object(obj, "Pod")  # a tombstone carries the last state it knew
        owner = None if pod is None else _owner(pod)
        if owner is not None:
            self.marks.append(Mark(self.clock(), owner, TRIGGER))


def reactions(marks: Iterable[Mark], start: float, end: float) -> list[float]:
    """The reaction (seconds) of every action in ``[start, end)`` that follows a trigger of
    its set in the same window; an action with no trigger before it is left out."""
    newest: dict[str, float] = {}
    out: list[float] = []
    for mark in sorted(marks, key=lambda m: m.at):
        if not start <= mark.at < end:
            continue
        if mark.kind == TRIGGER:
            newest[mark.owner] = mark.at
        elif mark.owner in newest:
            out.append(mark.at - newest[mark.owner])
    return out


@dataclass
class Reactions:
    """One phase's reactions of one run, in milliseconds."""

    count: int = 0
    p50: float = 0.0
    p90: float = 0.0
    mean: float = 0.0


def summary(values: list[float]) -> Reactions:
    """``values`` (seconds) summed up in milliseconds; all zero when there are none."""
    if not values:
        return Reactions()
    ms = sorted(v * 1000 for v in values)
    return Reactions(
        count=len(ms),
        p50=statistics.median(ms),
        p90=ms[min(len(ms) - 1, int(0.9 * len(ms)))],
        mean=statistics.fmean(ms),
    )
