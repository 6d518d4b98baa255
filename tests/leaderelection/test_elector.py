"""LeaderElector against the fake client, on a fake clock (client-go leaderelection_test.go
scenarios: acquire, hold off, expiry on observation time, renew, lose, release, transitions,
conflicts)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.client import LEASES
from kcontrol.clock import FakeClock
from kcontrol.errors import Conflict, ServiceUnavailable
from kcontrol.leaderelection import (
    HealthzAdaptor,
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElector,
    LeadershipLost,
    LeaseLock,
)
from kcontrol.metatime import parse_time
from kcontrol.testing import Action, FakeClient, FakeRecorder

from .clock_helpers import advance, settle

NS = "kube-system"
NAME = "kcm"
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 10.0, 5.0, 1.0


def lease_spec(client: FakeClient) -> dict[str, Any]:
    spec: dict[str, Any] = client.tracker.get(LEASES, NAME, namespace=NS)["spec"]
    return spec


def seed_lease(holder: str, renew_time: str, *, transitions: int = 0) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": int(LEASE_DURATION),
            "acquireTime": renew_time,
            "renewTime": renew_time,
            "leaseTransitions": transitions,
        },
    }


def write_lease(client: FakeClient, **spec: Any) -> None:
    """Another writer changes the Lease (no action recorded)."""
    lease = client.tracker.get(LEASES, NAME, namespace=NS)
    lease["spec"].update(spec)
    client.tracker.update(LEASES, lease)


class Harness:
    """One candidate: its fake client (sharing the tracker), lock, elector and what it saw."""

    def __init__(
        self,
        clock: FakeClock,
        identity: str,
        client: FakeClient,
        *,
        release_on_cancel: bool = True,
        registry: CollectorRegistry | None = None,
        name: str = NAME,
    ) -> None:
        self.clock = clock
        self.client = client
        self.recorder = FakeRecorder()
        self.log: list[str] = []
        self.registry = registry or CollectorRegistry()
        self.lock = LeaseLock(client, NS, NAME, identity, recorder=self.recorder)
        self.elector = LeaderElector(
            LeaderElectionConfig(
                lock=self.lock,
                lease_duration=LEASE_DURATION,
                renew_deadline=RENEW_DEADLINE,
                retry_period=RETRY_PERIOD,
                release_on_cancel=release_on_cancel,
                name=name,
                clock=clock,
                registry=self.registry,
                callbacks=LeaderCallbacks(
                    on_stopped_leading=lambda: self.log.append("on_stopped_leading"),
                    on_new_leader=lambda who: self.log.append(f"new_leader {who}"),
                ),
            )
        )

    def master_status(self) -> float | None:
        return self.registry.get_sample_value(
            "leader_election_master_status", {"name": self.elector.config.metric_name}
        )

    async def work(self) -> None:
        """Guarded work that logs when it starts and how it ends."""
        self.log.append("work started")
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            self.log.append(f"work cancelled leader={self.elector.is_leader()}")
            await asyncio.sleep(0)  # some asynchronous clean-up
            self.log.append("work finished")
            raise

    @contextlib.asynccontextmanager
    async def running(
        self, work: Callable[[], Awaitable[None]] | None = None
    ) -> AsyncIterator[asyncio.Task[None]]:
        task = asyncio.create_task(self.elector.run(work or self.work))
        try:
            yield task
        finally:
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, LeadershipLost):
                await task


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(wall_start=datetime(2026, 1, 1, tzinfo=UTC))


def candidate(
    clock: FakeClock, identity: str, objects: list[dict[str, Any]] | None = None, **kw: Any
) -> Harness:
    return Harness(clock, identity, FakeClient(objects or [], clock=clock), **kw)


def peer(first: Harness, identity: str, **kw: Any) -> Harness:
    """A second candidate talking to the same (fake) API server."""
    client = FakeClient(clock=first.clock, tracker=first.client.tracker)
    return Harness(first.clock, identity, client, **kw)


async def test_acquires_a_free_lease_at_once(clock: FakeClock) -> None:
    a = candidate(clock, "a")
    assert a.master_status() == 0
    async with a.running():
        await settle()
        assert a.elector.is_leader()
        assert a.elector.elected.is_set()
        assert a.elector.get_leader() == "a"
        spec = lease_spec(a.client)
        assert spec["holderIdentity"] == "a"
        assert spec["leaseDurationSeconds"] == 10
        assert spec["leaseTransitions"] == 0
        assert spec["acquireTime"] == spec["renewTime"] == "2026-01-01T00:00:00.000000Z"
        assert [str(x) for x in a.client.actions] == [
            f"get leases {NS}/{NAME}",
            f"create leases {NS}/{NAME}",
        ]
        assert a.log == ["new_leader a", "work started"]
        assert a.recorder.events == ["Normal LeaderElection a became leader"]
        assert a.master_status() == 1


async def test_does_not_acquire_a_held_valid_lease(clock: FakeClock) -> None:
    b = candidate(clock, "b", [seed_lease("a", "2026-01-01T00:00:00.000000Z")])
    async with b.running() as task:
        for second in range(9):  # the holder renews, for longer than a lease duration
            write_lease(b.client, renewTime=f"2026-01-01T00:00:{second:02d}.000000Z")
            await advance(clock, RETRY_PERIOD * 2.2)
        assert not task.done()
        assert not b.elector.is_leader()
        assert not b.elector.elected.is_set()
        assert b.elector.get_leader() == "a"
        assert b.client.actions_for("update") == []
        assert b.client.actions_for("create") == []
        assert lease_spec(b.client)["holderIdentity"] == "a"
        assert b.log == ["new_leader a"]
        assert b.master_status() == 0


@pytest.mark.parametrize(
    "remote_renew_time",
    [
        pytest.param("2100-01-01T00:00:00.000000Z", id="renew-time-far-in-the-future"),
        pytest.param("1970-01-01T00:00:00.000000Z", id="renew-time-far-in-the-past"),
    ],
)
async def test_acquires_after_expiry_measured_on_local_observation_time(
    clock: FakeClock, remote_renew_time: str
) -> None:
    b = candidate(clock, "b", [seed_lease("a", remote_renew_time, transitions=3)])
    async with b.running():
        await settle()
        observed_at = clock.now()
        # Just before a full lease duration since we saw the record: still held.
        await advance(clock, LEASE_DURATION - 0.5)
        assert not b.elector.is_leader()
        assert b.client.actions_for("update") == []
        # A retry right after the lease expired (not a jittered period later) takes it over.
        await advance(clock, 0.5 + 0.01)
        assert b.elector.is_leader()
        spec = lease_spec(b.client)
        assert spec["holderIdentity"] == "b"
        assert spec["leaseTransitions"] == 4
        acquired = parse_time(spec["acquireTime"])
        assert acquired is not None
        wall_at_observation = clock.wall() - timedelta(seconds=clock.now() - observed_at)
        assert (acquired - wall_at_observation).total_seconds() >= LEASE_DURATION
        assert b.log[:2] == ["new_leader a", "new_leader b"]


async def test_a_renewing_holder_keeps_a_standby_out_indefinitely(clock: FakeClock) -> None:
    a = candidate(clock, "a")
    b = peer(a, "b")
    async with a.running():
        await settle()
        async with b.running():
            await advance(clock, LEASE_DURATION * 4)
            assert a.elector.is_leader()
            assert not b.elector.is_leader()
            assert b.client.actions_for("update") == []


async def test_leader_renews_every_retry_period(clock: FakeClock) -> None:
    a = candidate(clock, "a")
    async with a.running():
        await settle()
        first = lease_spec(a.client)
        a.client.clear_actions()
        await advance(clock, 10 * RETRY_PERIOD)
        updates = a.client.actions_for("update", LEASES)
        assert len(updates) == 10
        # The fast path: no read before each renewal.
        assert a.client.actions_for("get") == []
        spec = lease_spec(a.client)
        assert spec["holderIdentity"] == "a"
        assert spec["acquireTime"] == first["acquireTime"]
        assert spec["leaseTransitions"] == 0
        assert spec["renewTime"] == "2026-01-01T00:00:10.000000Z"
        assert a.elector.is_leader()
        assert a.elector.check(0)


async def test_losing_the_lease_cancels_the_work_before_reporting(clock: FakeClock) -> None:
    a = candidate(clock, "a")
    async with a.running() as task:
        await settle()
        await advance(clock, 3 * RETRY_PERIOD)
        last_renew = clock.now()

        def down(action: Action) -> None:
            a.log.append(f"request {action.verb}")
            raise ServiceUnavailable("apiserver is down")

        a.client.prepend_reactor("*", "leases", down)
        await advance(clock, RENEW_DEADLINE - 0.5)
        assert a.elector.is_leader()
        assert a.elector.holds_lease()
        assert not task.done()
        await advance(clock, 0.5)
        assert task.done()
        with pytest.raises(LeadershipLost):
            task.result()
        assert clock.now() - last_renew == pytest.approx(RENEW_DEADLINE)
    events = [entry for entry in a.log if not entry.startswith("request")]
    assert events == [
        "new_leader a",
        "work started",
        "work cancelled leader=False",
        "work finished",
        "on_stopped_leading",
    ]
    # Renewal kept failing up to the deadline; nothing was sent once the work was cancelled
    # (no release either: the lease is not known to be ours).
    cancelled = a.log.index("work cancelled leader=False")
    assert a.log[cancelled - 1].startswith("request")
    assert not [entry for entry in a.log[cancelled:] if entry.startswith("request")]
    assert a.recorder.events == [
        "Normal LeaderElection a became leader",
        "Normal LeaderElection a stopped leading",
    ]
    assert not a.elector.is_leader()
    assert not a.elector.elected.is_set()
    assert a.master_status() == 0


async def test_a_hanging_renewal_ends_leadership_at_the_renew_deadline(clock: FakeClock) -> None:
    """The renewal request never answers: the lease stops being trusted (holds_lease, the
    write gate's check) and the work is cancelled at the renew deadline, counted on the
    leader's own clock from its last successful renewal."""
    a = candidate(clock, "a")
    async with a.running() as task:
        await settle()
        await advance(clock, RETRY_PERIOD)  # one successful renewal, sent now
        last_renew = clock.now()
        hung: list[str] = []

        async def hang(action: Action) -> None:
            hung.append(action.verb)
            await asyncio.get_running_loop().create_future()  # no answer, ever

        a.client.prepend_reactor("*", "leases", hang)
        await advance(clock, RENEW_DEADLINE - 0.25)
        assert hung, "a renewal is hanging"
        assert a.elector.holds_lease()
        assert not task.done()
        await advance(clock, 0.25)
        assert clock.now() - last_renew == pytest.approx(RENEW_DEADLINE)
        assert not a.elector.holds_lease()
        assert task.done()
        with pytest.raises(LeadershipLost):
            task.result()
    assert a.log[-3:] == ["work cancelled leader=False", "work finished", "on_stopped_leading"]


async def test_a_fractional_lease_duration_is_rounded_up_in_the_lease(clock: FakeClock) -> None:
    """2.5 s must not be written as 2: a standby would take over half a second early."""
    lock = LeaseLock(FakeClient(clock=clock), NS, NAME, "a")
    elector = LeaderElector(
        LeaderElectionConfig(
            lock=lock,
            lease_duration=2.5,
            renew_deadline=2.0,
            retry_period=0.5,
            clock=clock,
            registry=CollectorRegistry(),
        )
    )
    task = asyncio.create_task(elector.run())
    try:
        await settle()
        assert elector.is_leader()
        lease = lock.lease
        assert lease is not None
        assert lease["spec"]["leaseDurationSeconds"] == 3
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_a_stale_leader_gets_conflict_and_never_overwrites(clock: FakeClock) -> None:
    a = candidate(clock, "a")
    async with a.running() as task:
        await settle()
        # Another candidate took the lease over behind a's back (say a was partitioned).
        write_lease(a.client, holderIdentity="b", leaseTransitions=1)
        await advance(clock, RETRY_PERIOD)
        assert task.done()
        with pytest.raises(LeadershipLost):
            task.result()
    verbs = [str(x) for x in a.client.actions]
    assert verbs[-2:] == [f"update leases {NS}/{NAME}", f"get leases {NS}/{NAME}"]
    assert lease_spec(a.client)["holderIdentity"] == "b"
    assert a.log[-3:] == ["work cancelled leader=False", "work finished", "on_stopped_leading"]
    assert "new_leader b" in a.log


async def test_release_on_cancel_after_the_work_finished(clock: FakeClock) -> None:
    a = candidate(clock, "a")

    def note_release(action: Action) -> None:
        if action.object is not None and action.object["spec"]["holderIdentity"] == "":
            a.log.append("release sent")

    a.client.add_reactor("update", "leases", note_release)
    async with a.running() as task:
        await settle()
        await advance(clock, 3 * RETRY_PERIOD)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    spec = lease_spec(a.client)
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 0
    assert spec["renewTime"] == spec["acquireTime"] == "2026-01-01T00:00:03.000000Z"
    assert a.log == [
        "new_leader a",
        "work started",
        "work cancelled leader=True",
        "work finished",
        "release sent",
        "on_stopped_leading",
    ]
    assert a.recorder.events[-1] == "Normal LeaderElection a stopped leading"
    assert not a.elector.is_leader()
    assert a.master_status() == 0


async def test_release_keeps_fields_set_by_other_writers(clock: FakeClock) -> None:
    a = candidate(clock, "a")
    async with a.running() as task:
        await settle()
        lease = a.client.tracker.get(LEASES, NAME, namespace=NS)
        lease["metadata"]["labels"] = {"owner": "ops"}
        lease["spec"]["preferredHolder"] = "c"
        a.client.tracker.update(LEASES, lease)
        await advance(clock, RETRY_PERIOD)  # renewal hits a conflict, re-reads, renews
        assert a.elector.is_leader()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    lease = a.client.tracker.get(LEASES, NAME, namespace=NS)
    assert lease["spec"]["holderIdentity"] == ""
    assert lease["spec"]["preferredHolder"] == "c"
    assert lease["metadata"]["labels"] == {"owner": "ops"}


async def test_no_release_when_disabled(clock: FakeClock) -> None:
    a = candidate(clock, "a", release_on_cancel=False)
    async with a.running() as task:
        await settle()
        a.client.clear_actions()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert a.client.actions == []
    assert lease_spec(a.client)["holderIdentity"] == "a"
    assert a.log[-1] == "on_stopped_leading"


async def test_standby_takes_over_at_once_after_release(clock: FakeClock) -> None:
    a = candidate(clock, "a")
    b = peer(a, "b")
    async with a.running() as a_task:
        await settle()
        async with b.running():
            await advance(clock, 3 * RETRY_PERIOD)
            assert not b.elector.is_leader()
            a_task.cancel()
            await settle()
            assert lease_spec(a.client)["holderIdentity"] == ""
            # b's next (jittered) retry takes it, long before the lease duration.
            await advance(clock, RETRY_PERIOD * 2.2)
            assert b.elector.is_leader()
            assert lease_spec(b.client)["holderIdentity"] == "b"
            assert lease_spec(b.client)["leaseTransitions"] == 1
            # Renewals do not count as transitions.
            await advance(clock, 5 * RETRY_PERIOD)
            assert lease_spec(b.client)["leaseTransitions"] == 1
    assert b.log[:3] == ["new_leader a", "new_leader b", "work started"]


async def test_standby_takes_over_a_dead_leader_when_its_lease_expires(
    clock: FakeClock,
) -> None:
    a = candidate(clock, "a", release_on_cancel=False)
    b = peer(a, "b")
    async with a.running() as a_task:
        await settle()
        async with b.running():
            await advance(clock, 3 * RETRY_PERIOD)
            a_task.cancel()  # a dies without releasing (think SIGKILL)
            await settle()
            died = clock.now()
            assert lease_spec(a.client)["holderIdentity"] == "a"
            # a last renewed less than a retry period before it died, so b, which waits a
            # lease duration from when it *saw* that renewal, cannot take over earlier...
            await advance(clock, LEASE_DURATION - RETRY_PERIOD - 0.1)
            assert not b.elector.is_leader()
            # ...and does no later than a lease duration after its next poll saw it.
            await advance(clock, died + LEASE_DURATION + 2.2 * RETRY_PERIOD + 0.25 - clock.now())
            assert b.elector.is_leader()
            assert lease_spec(b.client)["holderIdentity"] == "b"
            assert lease_spec(b.client)["leaseTransitions"] == 1


async def test_transitions_across_three_holders(clock: FakeClock) -> None:
    a = candidate(clock, "a")
    b = peer(a, "b")
    async with a.running() as a_task:
        await settle()
        async with b.running() as b_task:
            await settle()
            a_task.cancel()
            await settle()  # released before time moves on
            await advance(clock, RETRY_PERIOD * 2.2)
            assert b.elector.is_leader()
            assert lease_spec(a.client)["leaseTransitions"] == 1
            c = peer(a, "c")
            async with c.running():
                await advance(clock, RETRY_PERIOD * 2.2)
                assert not c.elector.is_leader()
                b_task.cancel()
                await settle()
                await advance(clock, RETRY_PERIOD * 2.2)
                assert c.elector.is_leader()
                assert lease_spec(a.client)["holderIdentity"] == "c"
                assert lease_spec(a.client)["leaseTransitions"] == 2
            assert lease_spec(a.client)["leaseTransitions"] == 2
    assert c.log[:3] == ["new_leader b", "new_leader c", "work started"]


async def test_conflict_on_renewal_falls_back_to_read_and_retries(clock: FakeClock) -> None:
    a = candidate(clock, "a")
    conflicts = 1

    def conflict_once(action: Action) -> None:
        nonlocal conflicts
        if conflicts:
            conflicts -= 1
            raise Conflict("the object has been modified")

    async with a.running():
        await settle()
        a.client.clear_actions()
        a.client.prepend_reactor("update", "leases", conflict_once)
        await advance(clock, RETRY_PERIOD)
        assert [x.verb for x in a.client.actions] == ["update", "get", "update"]
        assert a.elector.is_leader()
        assert a.registry.get_sample_value("leader_election_slowpath_total", {"name": NAME}) == 1
        await advance(clock, RETRY_PERIOD)
        assert [x.verb for x in a.client.actions][3:] == ["update"]


async def test_conflict_while_acquiring_is_retried(clock: FakeClock) -> None:
    b = candidate(clock, "b", [seed_lease("", "2026-01-01T00:00:00.000000Z")])
    raced: list[Action] = []

    def lose_race(action: Action) -> None:
        if not raced:
            raced.append(action)
            raise Conflict("the object has been modified")

    b.client.prepend_reactor("update", "leases", lose_race)
    async with b.running():
        await settle()
        assert not b.elector.is_leader()
        await advance(clock, RETRY_PERIOD * 2.2)
        assert b.elector.is_leader()
        assert [x.verb for x in b.client.actions] == ["get", "update", "get", "update"]


async def test_work_returning_releases_and_returns(clock: FakeClock) -> None:
    a = candidate(clock, "a")

    async def work() -> None:
        await clock.sleep(3)

    async with a.running(work) as task:
        await settle()
        await advance(clock, 3)
        assert task.done()
        assert task.result() is None
    assert lease_spec(a.client)["holderIdentity"] == ""
    assert not a.elector.is_leader()


async def test_work_raising_releases_and_reraises(clock: FakeClock) -> None:
    a = candidate(clock, "a")

    class Boom(Exception):
        pass

    async def work() -> None:
        raise Boom("controller crashed")

    with pytest.raises(Boom):
        await a.elector.run(work)
    assert lease_spec(a.client)["holderIdentity"] == ""
    assert a.log[-1] == "on_stopped_leading"


async def test_cancel_while_acquiring_releases_nothing(clock: FakeClock) -> None:
    b = candidate(clock, "b", [seed_lease("a", "2026-01-01T00:00:00.000000Z")])
    async with b.running() as task:
        await settle()
        b.client.clear_actions()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert b.client.actions == []
    assert b.log == ["new_leader a", "on_stopped_leading"]
    assert b.recorder.events == []


async def test_holds_lease_fences_a_leader_paused_past_its_deadline(clock: FakeClock) -> None:
    a = candidate(clock, "a")
    async with a.running():
        await settle()
        assert a.elector.holds_lease()
        # The process is frozen: time moves on, no task runs.
        clock.set_time(clock.now() + RENEW_DEADLINE)
        assert a.elector.is_leader()  # the renew loop has not run yet...
        assert not a.elector.holds_lease()  # ...but a write fence already says no
        await settle()
        assert not a.elector.is_leader()


async def test_healthz_reports_a_stuck_leader(clock: FakeClock) -> None:
    a = candidate(clock, "a")
    healthz = HealthzAdaptor(timeout=2.0)
    assert healthz.name == "leaderElection"
    assert healthz.check()  # no elector yet
    healthz.set_leader_election(a.elector)
    unblock = asyncio.Event()

    async def stuck(action: Action) -> None:
        # A request that ignores cancellation (a deadlock, say): the renew loop cannot move.
        while not unblock.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await unblock.wait()

    async with a.running():
        await settle()
        assert healthz.check()
        a.client.prepend_reactor("update", "leases", stuck)
        await advance(clock, LEASE_DURATION + 2.0)
        assert a.elector.is_leader()
        assert healthz.check()
        await advance(clock, 0.5)
        assert not healthz.check()
        unblock.set()
        await advance(clock, 2 * RETRY_PERIOD)
        assert not a.elector.is_leader()


async def test_standby_is_always_healthy(clock: FakeClock) -> None:
    b = candidate(clock, "b", [seed_lease("a", "2026-01-01T00:00:00.000000Z")])
    async with b.running():
        await advance(clock, 100)
        assert b.elector.check(0)


async def test_run_rejects_two_guarded_works_and_concurrent_runs(clock: FakeClock) -> None:
    async def work() -> None:
        await asyncio.sleep(0)

    lock = LeaseLock(FakeClient(clock=clock), NS, NAME, "a")
    config = LeaderElectionConfig(
        lock=lock,
        clock=clock,
        registry=CollectorRegistry(),
        callbacks=LeaderCallbacks(on_started_leading=work),
    )
    elector = LeaderElector(config)
    with pytest.raises(ValueError, match="either"):
        await elector.run(work)
    a = candidate(clock, "a")
    async with a.running():
        await settle()
        with pytest.raises(RuntimeError, match="already running"):
            await a.elector.run()


async def test_on_started_leading_callback_is_the_guarded_work(clock: FakeClock) -> None:
    started = asyncio.Event()

    async def work() -> None:
        started.set()
        await asyncio.get_running_loop().create_future()

    lock = LeaseLock(FakeClient(clock=clock), NS, NAME, "a")
    elector = LeaderElector(
        LeaderElectionConfig(
            lock=lock,
            clock=clock,
            registry=CollectorRegistry(),
            callbacks=LeaderCallbacks(on_started_leading=work),
        )
    )
    task = asyncio.create_task(elector.run())
    await settle()
    assert started.is_set()
    assert elector.is_leader()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_failing_callbacks_are_logged_not_fatal(clock: FakeClock) -> None:
    def explode(*_: object) -> None:
        raise RuntimeError("callback bug")

    lock = LeaseLock(FakeClient(clock=clock), NS, NAME, "a")
    elector = LeaderElector(
        LeaderElectionConfig(
            lock=lock,
            clock=clock,
            registry=CollectorRegistry(),
            callbacks=LeaderCallbacks(on_new_leader=explode, on_stopped_leading=explode),
        )
    )
    task = asyncio.create_task(elector.run())
    await settle()
    assert elector.is_leader()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_metric_families_are_shared_per_registry(clock: FakeClock) -> None:
    registry = CollectorRegistry()
    a = candidate(clock, "a", registry=registry, name="first")
    b = peer(a, "b", registry=registry, name="second")
    async with a.running():
        await settle()
        async with b.running():
            await settle()
            assert a.elector.is_leader() and not b.elector.is_leader()
            assert (
                registry.get_sample_value("leader_election_master_status", {"name": "first"}) == 1
            )
            assert (
                registry.get_sample_value("leader_election_master_status", {"name": "second"}) == 0
            )
    assert registry.get_sample_value("leader_election_master_status", {"name": "first"}) == 0
