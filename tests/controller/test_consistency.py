"""The consistency store, kcontrol's one "read your own writes" piece (upstream
pkg/controller/util/consistency tests), and what the runner does with its StaleCache."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol.client import CONFIGMAPS, PODS, REPLICASETS
from kcontrol.controller import ConsistencyStore, compare_resource_versions
from kcontrol.errors import StaleCache
from kcontrol.informers import SharedIndexInformer
from kcontrol.testing import FakeClient


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [("1", "1", 0), ("9", "10", -1), ("10", "9", 1), ("123", "124", -1), ("20", "19", 1)],
)
def test_compare_resource_versions(a: str, b: str, expected: int) -> None:
    assert compare_resource_versions(a, b) == expected


@pytest.mark.parametrize("bad", ["", "0", "01", "1a", "-1", "\u0661"])
def test_compare_resource_versions_rejects_malformed(bad: str) -> None:
    with pytest.raises(ValueError, match="not well formed"):
        compare_resource_versions(bad, "1")


class Informers:
    def __init__(self) -> None:
        self.seen = {PODS: "", REPLICASETS: ""}

    def store(self) -> ConsistencyStore:
        return ConsistencyStore({r: (lambda r=r: self.seen[r]) for r in self.seen})


def test_no_record_is_ready() -> None:
    informers = Informers()
    informers.seen[PODS] = "5"
    store = informers.store()
    store.wrote_at("ns/other", "uid", PODS, "10")  # another owner, ahead of the informer

    store.ensure_ready("ns/rs")  # nothing written for this owner: nothing to wait for

    assert store.pending("ns/rs") == {}
    assert store.pending("ns/other") == {PODS: "10"}  # untouched, and still holding back:
    with pytest.raises(StaleCache):
        store.ensure_ready("ns/other")


def test_behind_informer_holds_the_owner_back_until_it_catches_up() -> None:
    informers = Informers()
    store = informers.store()
    store.wrote_at("ns/rs", "uid", PODS, "10")
    store.wrote_at("ns/rs", "uid", PODS, "9")  # older: the newest write is kept
    informers.seen[PODS] = "9"

    with pytest.raises(StaleCache, match="read version: 9 is not as new as written version: 10"):
        store.ensure_ready("ns/rs")
    store.ensure_ready("ns/other")  # other owners are not held back

    informers.seen[PODS] = "10"
    store.ensure_ready("ns/rs")
    assert store.pending("ns/rs") == {}


def test_unknown_or_unparseable_versions_never_block() -> None:
    informers = Informers()
    store = informers.store()
    store.wrote_at("ns/rs", "uid", PODS, "not-a-number")
    informers.seen[PODS] = "5"
    store.ensure_ready("ns/rs")  # a data problem must not block syncing

    store.wrote_at("ns/rs", "uid", PODS, "50")
    informers.seen[PODS] = ""  # the informer has not listed yet
    store.ensure_ready("ns/rs")


def test_untracked_resources_never_block() -> None:
    # Only pods are tracked here: a ReplicaSet write the store has no informer for is
    # remembered but never waited for, while the tracked pods still are.
    seen = {PODS: "5"}
    store = ConsistencyStore({PODS: lambda: seen[PODS]})
    store.wrote_at("ns/rs", "uid", REPLICASETS, "50")
    store.wrote_at("ns/rs", "uid", PODS, "6")
    assert store.pending("ns/rs") == {REPLICASETS: "50", PODS: "6"}

    with pytest.raises(StaleCache) as raised:
        store.ensure_ready("ns/rs")
    assert raised.value.resource == PODS

    seen[PODS] = "6"
    store.ensure_ready("ns/rs")  # the untracked ReplicaSet version does not hold it back
    assert store.pending("ns/rs") == {}  # and the passing check cleared the record


def test_a_new_uid_replaces_the_record_and_clear_checks_the_uid() -> None:
    informers = Informers()
    store = informers.store()
    store.wrote_at("ns/rs", "old", PODS, "10")
    store.wrote_at("ns/rs", "new", REPLICASETS, "3")
    assert store.pending("ns/rs") == {REPLICASETS: "3"}

    store.clear("ns/rs", "old")
    assert store.pending("ns/rs") == {REPLICASETS: "3"}
    store.clear("ns/rs", "new")
    assert store.pending("ns/rs") == {}

    store.wrote_at("ns/rs", "any", PODS, "4")
    store.clear("ns/rs")
    assert store.pending("ns/rs") == {}


def test_wrote_owned_records_for_the_owner_its_controller_ref_names() -> None:
    informers = Informers()
    store = informers.store()
    pod = {"metadata": {"namespace": "ns", "name": "p", "resourceVersion": "12"}}
    store.wrote_owned(PODS, pod, {"kind": "ReplicaSet", "name": "rs", "uid": "u1"})
    store.wrote_owned(PODS, pod, None)  # no owner: nothing to remember
    assert store.pending("ns/rs") == {PODS: "12"}
    informers.seen[PODS] = "11"
    with pytest.raises(StaleCache):
        store.ensure_ready("ns/rs")
    store.clear("ns/rs", "u2")  # another owner's UID: kept
    assert store.pending("ns/rs") == {PODS: "12"}


async def test_recording_records_tracked_writes_and_guards_copies_within_the_block() -> None:
    """Inside recording(), every write of a tracked resource - by any client - is recorded
    for the owner, and a write based on a copy older than the block's own earlier write of
    the same object raises StaleCache; other objects, untracked kinds and code outside the
    block are not affected."""
    client = FakeClient()
    seen = {CONFIGMAPS: "1"}
    store = ConsistencyStore({CONFIGMAPS: lambda: seen[CONFIGMAPS]})
    made = await client.create(
        CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}, "data": {"k": "0"}}
    )
    other = await client.create(CONFIGMAPS, {"metadata": {"name": "b", "namespace": "ns"}})
    with store.recording("ns/owner", "uid"):
        store.ensure_current(CONFIGMAPS, made)  # nothing written yet
        answer = await client.patch(CONFIGMAPS, "a", {"data": {"k": "1"}}, namespace="ns")
        with pytest.raises(StaleCache):
            store.ensure_current(CONFIGMAPS, made)  # the copy predates the block's own write
        store.ensure_current(CONFIGMAPS, answer)
        store.ensure_current(CONFIGMAPS, other)
    store.ensure_current(CONFIGMAPS, made)  # outside the block: no guard
    assert store.pending("ns/owner") == {CONFIGMAPS: answer["metadata"]["resourceVersion"]}
    await client.patch(CONFIGMAPS, "b", {"data": {"k": "2"}}, namespace="ns")
    assert store.pending("ns/owner") == {CONFIGMAPS: answer["metadata"]["resourceVersion"]}


class SeveralNamespaces(SharedIndexInformer):
    """An informer of namespaces a and b whose reflectors have got this far (by namespace)."""

    def __init__(self, seen: dict[str, str]) -> None:
        super().__init__(FakeClient(), PODS, namespaces=tuple(seen))
        self.seen = seen

    def last_sync_resource_version_in(self, namespace: str) -> str:
        return self.seen.get(namespace, "")

    @property
    def last_sync_resource_version(self) -> str:
        return min(self.seen.values(), key=lambda v: (len(v), v))


def test_an_informer_of_several_namespaces_is_asked_about_the_written_ones() -> None:
    """A write in namespace a waits for a's reflector only: b, quiet and behind, must not
    hold it back (its last version moves only with its own events)."""
    informer = SeveralNamespaces({"a": "20", "b": "10"})
    store = ConsistencyStore({PODS: informer})
    store.wrote_at("a/web", "uid", PODS, "15", namespace="a")
    store.ensure_ready("a/web")  # a has seen 20 >= 15, although b is at 10

    store.wrote_at("a/web", "uid", PODS, "25", namespace="a")
    with pytest.raises(StaleCache):
        store.ensure_ready("a/web")
    informer.seen["a"] = "25"
    store.ensure_ready("a/web")

    store.wrote_at("a/web", "uid", PODS, "30", namespace="elsewhere")  # not cached at all
    store.ensure_ready("a/web")


def _rs(version: str, *, status: int = 1, replicas: int = 3, labels: str = "web") -> dict[str, Any]:
    return {
        "metadata": {
            "name": "web",
            "namespace": "ns",
            "resourceVersion": version,
            "labels": {"app": labels},
            "managedFields": [{"manager": version}],
        },
        "spec": {"replicas": replicas},
        "status": {"replicas": status},
    }


def test_own_status_write_coming_back_is_recognised() -> None:
    """The informer's update carrying the controller's own newest status write need not
    queue the owner; what differs from it in version, in what changed, or in namespace
    does."""
    store = Informers().store()
    store.wrote_at("ns/web", "uid", REPLICASETS, "11", namespace="ns")

    assert store.is_own_status_write("ns/web", REPLICASETS, _rs("10"), _rs("11", status=3))
    # Another writer's change after it, or an older one of the controller's own.
    assert not store.is_own_status_write("ns/web", REPLICASETS, _rs("11"), _rs("12", status=2))
    assert not store.is_own_status_write("ns/web", REPLICASETS, _rs("9"), _rs("10", status=2))
    # A relist that folds a spec or label change into the same event.
    assert not store.is_own_status_write("ns/web", REPLICASETS, _rs("9", replicas=5), _rs("11"))
    assert not store.is_own_status_write("ns/web", REPLICASETS, _rs("9", labels="x"), _rs("11"))
    # A periodic resync of that very version: still queues (it retries what failed).
    assert not store.is_own_status_write("ns/web", REPLICASETS, _rs("11"), _rs("11"))
    # Another owner, another resource, an owner with no record.
    assert not store.is_own_status_write("ns/db", REPLICASETS, _rs("10"), _rs("11", status=3))
    assert not store.is_own_status_write("ns/web", PODS, _rs("10"), _rs("11", status=3))
    store.clear("ns/web")
    assert not store.is_own_status_write("ns/web", REPLICASETS, _rs("10"), _rs("11", status=3))

    store.wrote_at("ns/web", "uid", REPLICASETS, "21")  # recorded without a namespace
    assert store.is_own_status_write("ns/web", REPLICASETS, _rs("20"), _rs("21", status=3))


def test_own_status_write_a_held_back_sync_waits_for_still_queues() -> None:
    """A sync held back because the cache was behind the write (ensure_ready, or
    ensure_current inside a recording) may be waiting for that very event: from then on,
    until a sync passes, the write's echo is not recognised."""
    informers = Informers()
    informers.seen[REPLICASETS] = "10"
    store = informers.store()
    store.wrote_at("ns/web", "uid", REPLICASETS, "11", namespace="ns")
    assert store.is_own_status_write("ns/web", REPLICASETS, _rs("10"), _rs("11", status=3))
    with pytest.raises(StaleCache):
        store.ensure_ready("ns/web")
    assert not store.is_own_status_write("ns/web", REPLICASETS, _rs("10"), _rs("11", status=3))

    informers.seen[REPLICASETS] = "11"
    store.ensure_ready("ns/web")  # passes and forgets the record
    store.wrote_at("ns/web", "uid", REPLICASETS, "12", namespace="ns")
    assert store.is_own_status_write("ns/web", REPLICASETS, _rs("11"), _rs("12", status=3))


async def test_own_status_write_after_a_guarded_copy_still_queues() -> None:
    """A sync that ended at ensure_current (it was about to write from a copy older than its
    own write) relies on its write's event to sync the owner again."""
    client = FakeClient()
    store = ConsistencyStore({CONFIGMAPS: lambda: "1"})
    made = await client.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}})
    with store.recording("ns/owner", "uid"):
        answer = await client.patch(CONFIGMAPS, "a", {"data": {"k": "1"}}, namespace="ns")
        old = {**answer, "metadata": {**made["metadata"]}, "data": {"k": "1"}}
        assert store.is_own_status_write("ns/owner", CONFIGMAPS, old, answer)
        with pytest.raises(StaleCache):
            store.ensure_current(CONFIGMAPS, made)
    assert not store.is_own_status_write("ns/owner", CONFIGMAPS, old, answer)
