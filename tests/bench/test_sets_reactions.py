"""bench/sets/_reaction.py: the controller's reaction times from the benchmark's pod watch,
and their table in the report (no cluster)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.jobs._audit import KCM, KCONTROL
from bench.rollout import Phase
from bench.sets._reaction import ACTION, TRIGGER, Mark, PodTracker, Reactions, reactions, summary
from bench.sets._report import dump, load, reactions_table, report
from bench.sets._run import Run
from kcontrol.informers import DeletedFinalStateUnknown


def pod(owner: str | None, *, ready: bool = False, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"{owner}-0", "namespace": "ns"}
    if owner is not None:
        meta["ownerReferences"] = [
            {"kind": "StatefulSet", "name": owner, "controller": True, "uid": "u"}
        ]
    if deleting:
        meta["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    status = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return {"metadata": meta, "status": status}


class Ticks:
    """A clock that reads the next of the times it was given."""

    def __init__(self, *times: float) -> None:
        self._times = list(times)

    def __call__(self) -> float:
        return self._times.pop(0)


def test_the_tracker_marks_what_a_set_waits_for_and_what_its_controller_does() -> None:
    tracker = PodTracker(Ticks(1.0, 2.0, 3.0, 4.0, 5.0, 6.0))
    tracker.wrote("s")  # 1.0: the benchmark's write
    tracker.on_add(pod("s"))  # 2.0: created by the controller
    tracker.on_update(pod("s"), pod("s"))  # nothing a step waits for: no mark, no tick
    tracker.on_update(pod("s"), pod("s", ready=True))  # 3.0: Ready
    tracker.on_update(pod("s", ready=True), pod("s", ready=True))  # still Ready: no mark
    tracker.on_update(pod("s", ready=True), pod("s", ready=True, deleting=True))  # 4.0
    tracker.on_update(pod("s", deleting=True), pod("s", deleting=True))  # no mark
    tracker.on_delete(pod("s", deleting=True))  # 5.0: gone
    tracker.on_delete(DeletedFinalStateUnknown("ns/s-1", pod("s")))  # 6.0: gone, unseen
    tracker.on_add(pod(None))  # a pod of no controller: no mark, no tick
    assert tracker.marks == [
        Mark(1.0, "s", TRIGGER),
        Mark(2.0, "s", ACTION),
        Mark(3.0, "s", TRIGGER),
        Mark(4.0, "s", ACTION),
        Mark(5.0, "s", TRIGGER),
        Mark(6.0, "s", TRIGGER),
    ]


def test_a_reaction_is_measured_from_the_newest_trigger_of_its_own_set() -> None:
    marks = [
        Mark(0.9, "a", TRIGGER),  # before the window
        Mark(1.0, "b", TRIGGER),
        Mark(1.5, "a", ACTION),  # a's trigger is outside the window: left out
        Mark(1.1, "b", ACTION),  # 0.1 after b's write (marks need not come in order)
        Mark(2.0, "a", TRIGGER),
        Mark(2.2, "b", TRIGGER),  # b's, later than a's: not the one a's action counts from
        Mark(2.5, "b", TRIGGER),  # b's newer trigger
        Mark(2.25, "a", ACTION),  # 0.25 after a's own, not b's
        Mark(2.55, "b", ACTION),  # 0.05 after b's newest
        Mark(2.6, "b", ACTION),  # 0.1: a burst's second action counts from the same trigger
        Mark(3.0, "a", ACTION),  # at the window's end: outside
    ]
    got = reactions(marks, 1.0, 3.0)
    assert [round(x, 6) for x in sorted(got)] == [0.05, 0.1, 0.1, 0.25]


def test_summary_in_milliseconds() -> None:
    values = [i / 1000 for i in range(1, 11)]  # 1..10 ms
    s = summary(values)
    assert (s.count, round(s.p50, 6), round(s.p90, 6), round(s.mean, 6)) == (10, 5.5, 10.0, 5.5)
    assert summary([]) == Reactions()


def run(impl: str, index: int, p50: float, p90: float) -> Run:
    phase = Phase(wall=10.0, p50=5.0, cpu=1.0, plane_cpu=2.0, completed=True)
    return Run(
        size="sts=10x5",
        limit="unthrottled",
        impl=impl,
        index=index,
        started="10:00:00",
        load=1.0,
        phases={"create": phase, "retemplate": phase},
        reactions={
            "create": Reactions(count=50, p50=p50, p90=p90, mean=p50),
            "retemplate": Reactions(count=100, p50=2 * p50, p90=2 * p90, mean=2 * p50),
        },
    )


RUNS = [run(KCM, 0, 40.0, 80.0), run(KCM, 1, 60.0, 100.0), run(KCONTROL, 0, 30.0, 90.0)]


def test_the_reactions_table() -> None:
    text = "\n".join(reactions_table(RUNS))
    assert "| sts=10x5 | unthrottled | create | 50 / 50 | 50.0 | 30.0 | 0.60 " in text
    assert "| 90.0 | 90.0 | 1.00 |" in text
    assert "| sts=10x5 | unthrottled | retemplate | 100 / 100 | 100.0 | 60.0 | 0.60 " in text
    assert "## The controller's reactions" in report(RUNS)


def test_runs_without_reactions_have_no_table_and_still_load(tmp_path: Path) -> None:
    path = tmp_path / "runs.json"
    dump(path, RUNS)
    assert load(path) == RUNS
    older = json.loads(path.read_text())
    for raw in older:
        del raw["reactions"]  # a dump written before the reactions were measured
    path.write_text(json.dumps(older))
    loaded = load(path)
    assert all(r.reactions == {} for r in loaded)
    assert reactions_table(loaded) == []
    assert "The controller's reactions" not in report(loaded)
