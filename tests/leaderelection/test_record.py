"""The election record and LeaseLock's mapping onto a Lease (MicroTime: tests/test_metatime.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kcontrol.client import LEASES
from kcontrol.errors import Conflict
from kcontrol.leaderelection import LeaderElectionRecord, LeaseLock, LockNotInitialized
from kcontrol.leaderelection._record import record_from_lease_spec, record_to_lease_spec
from kcontrol.testing import FakeClient, FakeRecorder

MOMENT = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)


def test_record_round_trips_through_a_lease_spec() -> None:
    record = LeaderElectionRecord(
        holder_identity="a",
        lease_duration_seconds=15,
        acquire_time=MOMENT,
        renew_time=MOMENT + timedelta(seconds=2),
        leader_transitions=3,
    )
    spec = record_to_lease_spec(record)
    assert spec == {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "acquireTime": "2026-03-04T05:06:07.890123Z",
        "renewTime": "2026-03-04T05:06:09.890123Z",
        "leaseTransitions": 3,
    }
    assert record_from_lease_spec(spec) == record


def test_empty_spec_reads_as_zero_record() -> None:
    assert record_from_lease_spec({}) == LeaderElectionRecord()
    assert record_from_lease_spec(None) == LeaderElectionRecord()


def test_writing_a_record_keeps_fields_it_does_not_own() -> None:
    base = {
        "holderIdentity": "old",
        "strategy": "OldestEmulationVersion",
        "preferredHolder": "b",
        "futureField": {"x": 1},
    }
    spec = record_to_lease_spec(LeaderElectionRecord(holder_identity="a"), base)
    assert spec["holderIdentity"] == "a"
    assert spec["strategy"] == "OldestEmulationVersion"
    assert spec["preferredHolder"] == "b"
    assert spec["futureField"] == {"x": 1}
    assert "acquireTime" not in spec
    assert base["holderIdentity"] == "old"  # not modified in place


async def test_lease_lock_create_get_update() -> None:
    client = FakeClient()
    lock = LeaseLock(client, "ns", "lease", "a", labels={"app": "x"})
    record = LeaderElectionRecord(
        holder_identity="a", lease_duration_seconds=10, acquire_time=MOMENT, renew_time=MOMENT
    )
    await lock.create(record)
    stored = client.tracker.get(LEASES, "lease", namespace="ns")
    assert stored["apiVersion"] == "coordination.k8s.io/v1"
    assert stored["kind"] == "Lease"
    assert stored["metadata"]["labels"] == {"app": "x"}
    assert stored["spec"]["renewTime"] == "2026-03-04T05:06:07.890123Z"
    assert await lock.get() == record

    # Another writer adds a label and an annotation: the next update keeps both.
    changed = client.tracker.get(LEASES, "lease", namespace="ns")
    changed["metadata"]["labels"]["team"] = "y"
    changed["metadata"]["annotations"] = {"note": "kept"}
    written = client.tracker.update(LEASES, changed)
    await lock.get()
    renewed = LeaderElectionRecord(
        holder_identity="a",
        lease_duration_seconds=10,
        acquire_time=MOMENT,
        renew_time=MOMENT + timedelta(seconds=1),
    )
    await lock.update(renewed)
    stored = client.tracker.get(LEASES, "lease", namespace="ns")
    assert stored["metadata"]["labels"] == {"app": "x", "team": "y"}
    assert stored["metadata"]["annotations"] == {"note": "kept"}
    assert record_from_lease_spec(stored["spec"]) == renewed
    put = client.actions_for("update", LEASES)[-1]
    assert put.object is not None
    assert put.object["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]


async def test_lease_lock_update_is_guarded_by_resource_version() -> None:
    client = FakeClient()
    lock = LeaseLock(client, "ns", "lease", "a")
    await lock.create(LeaderElectionRecord(holder_identity="a", lease_duration_seconds=10))
    other = client.tracker.get(LEASES, "lease", namespace="ns")
    other["spec"]["holderIdentity"] = "b"
    client.tracker.update(LEASES, other)
    with pytest.raises(Conflict):
        await lock.update(LeaderElectionRecord(holder_identity="a", lease_duration_seconds=10))
    assert client.tracker.get(LEASES, "lease", namespace="ns")["spec"]["holderIdentity"] == "b"


async def test_lease_lock_update_needs_a_read_first() -> None:
    lock = LeaseLock(FakeClient(), "ns", "lease", "a")
    with pytest.raises(LockNotInitialized):
        await lock.update(LeaderElectionRecord(holder_identity="a"))


async def test_lease_lock_records_events_on_the_lease() -> None:
    recorder = FakeRecorder(include_object=True)
    lock = LeaseLock(FakeClient(), "ns", "lease", "a", recorder=recorder)
    await lock.create(LeaderElectionRecord(holder_identity="a", lease_duration_seconds=10))
    lock.record_event("became leader")
    assert recorder.events == [
        "Normal LeaderElection a became leader "
        "involvedObject{kind=Lease,apiVersion=coordination.k8s.io/v1}"
    ]
    assert lock.describe() == "ns/lease"
    assert lock.identity == "a"
