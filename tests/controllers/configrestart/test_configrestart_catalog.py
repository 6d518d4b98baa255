"""The catalog (any arrival order, baselines) and the change queue (grace, compaction)."""

from __future__ import annotations

import pytest

from kcontrol_controllers.configrestart import Catalog, ChangeQueue

W = "deployment/ns/web"
C = "configmap/ns/app"
S = "secret/ns/db"


def test_workload_before_its_config() -> None:
    catalog = Catalog()
    assert catalog.observe_workload(W, frozenset({C}), {})
    assert catalog.is_pending(C) and catalog.checksum(C) is None
    assert catalog.affected(C) == [W]
    assert catalog.observe_config(C, "c1"), "a pending config appearing is a change"
    entry = catalog.workload(W)
    assert entry is not None and entry.baselines == {C: "c1"}


def test_config_before_its_workload() -> None:
    catalog = Catalog()
    assert catalog.observe_config(C, "c1")
    assert not catalog.observe_config(C, "c1"), "same checksum: no change"
    assert catalog.observe_workload(W, frozenset({C}), {})
    entry = catalog.workload(W)
    assert entry is not None and entry.baselines == {C: "c1"}
    assert catalog.observe_config(C, "c2")
    assert entry.baselines == {C: "c1"}, "the baseline is the first checksum seen"


def test_stored_checksums_replace_baselines() -> None:
    catalog = Catalog()
    catalog.observe_config(C, "c1")
    catalog.observe_workload(W, frozenset({C}), {})
    assert catalog.observe_workload(W, frozenset({C}), {C: "c1"}), "annotation changed"
    entry = catalog.workload(W)
    assert entry is not None and entry.baselines == {}
    assert not catalog.observe_workload(W, frozenset({C}), {C: "c1"})


def test_references_added_and_removed_are_changes() -> None:
    catalog = Catalog()
    catalog.observe_workload(W, frozenset({C}), {})
    assert catalog.observe_workload(W, frozenset({C, S}), {})
    assert catalog.affected(S) == [W]
    assert catalog.observe_workload(W, frozenset({S}), {})
    assert catalog.affected(C) == []
    assert catalog.checksum(C) is None and not catalog.is_pending(C), "unused pending dropped"
    assert catalog.config_count == 1


def test_forgetting() -> None:
    catalog = Catalog()
    catalog.observe_config(C, "c1")
    catalog.observe_workload(W, frozenset({C, S}), {})
    catalog.forget_config(C)
    assert catalog.is_pending(C), "deleted but referenced: pending"
    assert catalog.forget_workload(W)
    assert not catalog.forget_workload(W)
    assert catalog.config_count == 0 and catalog.workload_count == 0
    catalog.observe_config(C, "c1")
    catalog.forget_config(C)
    assert catalog.config_count == 0


def test_affected() -> None:
    catalog = Catalog()
    other = "statefulset/ns/db"
    catalog.observe_workload(W, frozenset({C}), {})
    catalog.observe_workload(other, frozenset({C}), {})
    assert catalog.affected(C) == sorted([W, other])
    assert catalog.affected(W) == [W]
    assert catalog.affected("deployment/ns/unknown") == []
    assert catalog.affected("secret/ns/unused") == []


# -- changes -------------------------------------------------------------------------------


def test_changes_wait_for_the_grace_period() -> None:
    queue = ChangeQueue(grace=5.0)
    queue.add(C, now=100.0)
    assert queue.pop_due(104.9) == {}
    assert list(queue.pop_due(105.0)) == [C]
    assert len(queue) == 0


def test_changes_within_the_grace_period_are_compacted() -> None:
    queue = ChangeQueue(grace=5.0)
    queue.add(C, now=100.0)
    change = queue.add(C, now=103.0)
    assert change.count == 2 and change.first_seen == 100.0
    assert queue.pop_due(104.0) == {}, "the grace period runs from the first change"
    due = queue.pop_due(105.0)
    assert due[C].count == 2
    assert queue.add(C, now=106.0).count == 1, "after processing, a new change"


def test_due_changes_oldest_first_and_discard() -> None:
    queue = ChangeQueue(grace=1.0)
    queue.add(S, now=2.0)
    queue.add(C, now=1.0)
    queue.add(W, now=1.5)
    queue.discard(W)
    assert list(queue.pop_due(10.0)) == [C, S]


def test_negative_grace_is_refused() -> None:
    with pytest.raises(ValueError):
        ChangeQueue(grace=-1)
