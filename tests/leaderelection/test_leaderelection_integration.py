"""Leader election against a real kube-apiserver, among kcontrol electors and against client-go.

The interoperability tests build ``hack/k8s/leaderelect`` (client-go's leaderelection with a
LeaseLock) and run it as a rival candidate: each side must respect, and be able to take over,
the Lease the other one wrote.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.client import LEASES, ApiClient, ClientConfig
from kcontrol.envtest import ControlPlane
from kcontrol.errors import Conflict
from kcontrol.leaderelection import (
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElector,
    LeadershipLost,
    LeaseLock,
)

REPO = Path(__file__).resolve().parents[2]
LEASE = "interop"
# Long enough a lease that a takeover without release (>= LEASE_DURATION) is easy to tell
# from one after release (<= 2.2 retry periods).
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 6.0, 4.0, 0.5
HANDOVER_LIMIT = 2.5  # seconds: 2.2 retry periods plus slack for a loaded machine


@pytest.fixture
async def client(control_plane: ControlPlane) -> AsyncIterator[ApiClient]:
    config = ClientConfig.from_kube_configuration(await control_plane.kube_configuration())
    async with ApiClient(config, qps=0, registry=CollectorRegistry(), timeout=5) as api:
        yield api


@contextlib.asynccontextmanager
async def new_client(control_plane: ControlPlane) -> AsyncIterator[ApiClient]:
    """A client of its own, as a separate process would have."""
    config = ClientConfig.from_kube_configuration(await control_plane.kube_configuration())
    async with ApiClient(config, qps=0, registry=CollectorRegistry(), timeout=5) as api:
        yield api


class PyCandidate:
    """A kcontrol elector running in a task, holding the lease until cancelled."""

    def __init__(self, client: ApiClient, namespace: str, identity: str) -> None:
        self.identity = identity
        self.lock = LeaseLock(client, namespace, LEASE, identity)
        self.elector = LeaderElector(
            LeaderElectionConfig(
                lock=self.lock,
                lease_duration=LEASE_DURATION,
                renew_deadline=RENEW_DEADLINE,
                retry_period=RETRY_PERIOD,
                name=identity,
                registry=CollectorRegistry(),
            )
        )
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self.elector.run(), name=f"elector {self.identity}")

    async def stop(self) -> None:
        """Cancel run() and wait until it is over (work done, lease released)."""
        if self.task is None:
            return
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, LeadershipLost):
            await self.task
        self.task = None


@contextlib.asynccontextmanager
async def py_candidate(
    control_plane: ControlPlane, namespace: str, identity: str
) -> AsyncIterator[PyCandidate]:
    async with new_client(control_plane) as api:
        candidate = PyCandidate(api, namespace, identity)
        candidate.start()
        try:
            yield candidate
        finally:
            await candidate.stop()


async def until(
    predicate: Callable[[], bool],
    limit: float,
    what: str,
    *,
    invariant: Callable[[], None] = lambda: None,
) -> float:
    """Poll ``predicate`` (checking ``invariant`` at every poll); return the time it took."""
    start = time.monotonic()
    while True:
        invariant()
        if predicate():
            return time.monotonic() - start
        if time.monotonic() - start > limit:
            raise AssertionError(f"timed out after {limit}s waiting for {what}")
        await asyncio.sleep(0.02)


async def hold(seconds: float, invariant: Callable[[], None]) -> None:
    """Check ``invariant`` continuously for ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        invariant()
        await asyncio.sleep(0.02)


async def read_lease(client: ApiClient, namespace: str) -> dict[str, Any]:
    lease: dict[str, Any] = await client.get(LEASES, LEASE, namespace=namespace)
    return lease


# -- kcontrol among itself ------------------------------------------------------------------


async def test_two_electors_contend_and_one_leads(
    control_plane: ControlPlane, namespace: str, client: ApiClient
) -> None:
    async with (
        py_candidate(control_plane, namespace, "py-a") as a,
        py_candidate(control_plane, namespace, "py-b") as b,
    ):

        def at_most_one() -> None:
            assert not (a.elector.is_leader() and b.elector.is_leader()), "two leaders"

        await until(
            lambda: a.elector.is_leader() or b.elector.is_leader(),
            10,
            "a leader",
            invariant=at_most_one,
        )
        leader, standby = (a, b) if a.elector.is_leader() else (b, a)
        await hold(2 * RETRY_PERIOD, at_most_one)
        lease = await read_lease(client, namespace)
        assert lease["spec"]["holderIdentity"] == leader.identity
        assert lease["spec"]["leaseDurationSeconds"] == int(LEASE_DURATION)
        # The standby learns the leader at its next try, which the 1.2 jitter factor may put
        # up to 2.2 retry periods after its failed create.
        await until(
            lambda: standby.elector.get_leader() == leader.identity,
            HANDOVER_LIMIT,
            "the standby to observe the leader",
            invariant=at_most_one,
        )
        transitions = lease["spec"]["leaseTransitions"]

        await leader.stop()
        released = await read_lease(client, namespace)
        if released["spec"]["holderIdentity"] == "":
            assert released["spec"]["leaseDurationSeconds"] == 1
        else:
            # The standby was quicker than our read: well inside the 6 s lease, which only a
            # release (holder "", duration 1 s) makes possible.
            assert released["spec"]["holderIdentity"] == standby.identity
        took = await until(standby.elector.is_leader, HANDOVER_LIMIT, "the standby to take over")
        assert took < HANDOVER_LIMIT
        lease = await read_lease(client, namespace)
        assert lease["spec"]["holderIdentity"] == standby.identity
        assert lease["spec"]["leaseTransitions"] == transitions + 1


async def test_a_stale_writer_gets_conflict_from_the_apiserver(
    control_plane: ControlPlane, namespace: str, client: ApiClient
) -> None:
    async with new_client(control_plane) as other:
        mine = LeaseLock(client, namespace, LEASE, "a")
        theirs = LeaseLock(other, namespace, LEASE, "b")
        await mine.create(LeaderElectionRecord(holder_identity="a", lease_duration_seconds=5))
        await theirs.get()
        await theirs.update(LeaderElectionRecord(holder_identity="b", lease_duration_seconds=5))
        with pytest.raises(Conflict):
            await mine.update(LeaderElectionRecord(holder_identity="a", lease_duration_seconds=5))
        assert (await mine.get()).holder_identity == "b"


# -- interoperability with client-go ---------------------------------------------------------


@pytest.fixture(scope="session")
def leaderelect_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``hack/k8s/leaderelect`` built with the Go toolchain (from the module cache if warm)."""
    go = shutil.which("go")
    if go is None:  # `make test` builds with Go, so its absence is a broken setup
        pytest.fail("the Go toolchain (`go`) is not installed: cannot build hack/k8s/leaderelect")
    out = tmp_path_factory.mktemp("leaderelect") / "leaderelect"
    env = {**os.environ, "GOSUMDB": "off", "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
    done = subprocess.run(
        [go, "build", "-o", str(out), "./leaderelect"],
        cwd=REPO / "hack" / "k8s",
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, f"building hack/k8s/leaderelect failed:\n{done.stderr}"
    return out


class GoCandidate:
    """The client-go elector as a child process; its stdout lines tell its state."""

    def __init__(self, binary: Path, control_plane: ControlPlane, namespace: str, identity: str):
        self.identity = identity
        self.argv = [
            str(binary),
            f"--kubeconfig={control_plane.kubeconfig_path}",
            f"--namespace={namespace}",
            f"--name={LEASE}",
            f"--id={identity}",
            f"--lease-duration={LEASE_DURATION}s",
            f"--renew-deadline={RENEW_DEADLINE}s",
            f"--retry-period={int(RETRY_PERIOD * 1000)}ms",
        ]
        self.stdout = control_plane.directory / f"leaderelect-{namespace}-{identity}.out"
        self.stderr = self.stdout.with_suffix(".err")
        self.popen: subprocess.Popen[bytes] | None = None
        self.terminated = False

    def start(self) -> None:
        with self.stdout.open("wb") as out, self.stderr.open("wb") as err:
            self.popen = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err
            )

    def lines(self) -> list[str]:
        return self.stdout.read_text().splitlines()

    def saw(self, line: str) -> bool:
        return line in self.lines()

    def leading(self) -> bool:
        """Whether its guarded work runs: from LEADING until it is told to stop (SIGTERM
        cancels the work at once; STOPPED is printed only after the release)."""
        if self.terminated:
            return False
        state = False
        for line in self.lines():
            if line.startswith("LEADING "):
                state = True
            elif line.startswith("STOPPED "):
                state = False
        return state

    def terminate(self) -> None:
        assert self.popen is not None
        self.terminated = True
        self.popen.send_signal(signal.SIGTERM)

    async def wait_exit(self, limit: float) -> int:
        assert self.popen is not None
        await until(lambda: self.popen is not None and self.popen.poll() is not None, limit, "exit")
        return self.popen.returncode

    def kill(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()

    def describe(self) -> str:
        return (
            f"stdout:\n{self.stdout.read_text()}\nstderr tail:\n{self.stderr.read_text()[-2000:]}"
        )


@pytest.fixture
def go_candidates(
    leaderelect_binary: Path, control_plane: ControlPlane, namespace: str
) -> Iterator[Callable[[str], GoCandidate]]:
    started: list[GoCandidate] = []

    def start(identity: str) -> GoCandidate:
        candidate = GoCandidate(leaderelect_binary, control_plane, namespace, identity)
        candidate.start()
        started.append(candidate)
        return candidate

    yield start
    for candidate in started:
        candidate.kill()


# A cold Go build of the rival elector (first test only) can take several minutes.
@pytest.mark.timeout(900)
async def test_client_go_leader_hands_over_to_kcontrol(
    control_plane: ControlPlane,
    namespace: str,
    client: ApiClient,
    go_candidates: Callable[[str], GoCandidate],
) -> None:
    go = go_candidates("go-1")
    await until(lambda: go.saw("LEADING go-1"), 20, "client-go to lead")
    lease = await read_lease(client, namespace)
    assert lease["spec"]["holderIdentity"] == "go-1"

    async with py_candidate(control_plane, namespace, "py-1") as py:

        def one_leader() -> None:
            assert not (py.elector.is_leader() and go.leading()), "two leaders\n" + go.describe()

        # client-go's renewals keep us out well past a lease duration: we read its record.
        await hold(LEASE_DURATION * 1.5, one_leader)
        assert not py.elector.is_leader()
        assert py.elector.get_leader() == "go-1"
        record = await py.lock.get()
        assert record.holder_identity == "go-1"
        assert record.lease_duration_seconds == int(LEASE_DURATION)
        assert record.renew_time is not None and record.acquire_time is not None
        assert record.renew_time > record.acquire_time
        transitions = record.leader_transitions

        go.terminate()  # client-go releases on cancel
        assert await go.wait_exit(10) == 0, go.describe()
        assert go.saw("STOPPED go-1")
        took = await until(
            py.elector.is_leader, HANDOVER_LIMIT, "kcontrol to take over", invariant=one_leader
        )
        assert took < HANDOVER_LIMIT
        lease = await read_lease(client, namespace)
        assert lease["spec"]["holderIdentity"] == "py-1"
        assert lease["spec"]["leaseTransitions"] == transitions + 1


# A cold Go build of the rival elector (first test only) can take several minutes.
@pytest.mark.timeout(900)
async def test_kcontrol_leader_hands_over_to_client_go(
    control_plane: ControlPlane,
    namespace: str,
    client: ApiClient,
    go_candidates: Callable[[str], GoCandidate],
) -> None:
    async with py_candidate(control_plane, namespace, "py-2") as py:
        await until(py.elector.is_leader, 10, "kcontrol to lead")
        go = go_candidates("go-2")

        def one_leader() -> None:
            assert not (py.elector.is_leader() and go.leading()), "two leaders\n" + go.describe()

        await until(lambda: go.saw("NEW_LEADER py-2"), 20, "client-go to see us lead")
        # Our renewals (MicroTime records) keep client-go out well past a lease duration.
        await hold(LEASE_DURATION * 1.5, one_leader)
        assert not go.saw("LEADING go-2"), go.describe()
        transitions = (await read_lease(client, namespace))["spec"]["leaseTransitions"]

        await py.stop()
        assert not py.elector.is_leader()
        took = await until(lambda: go.saw("LEADING go-2"), HANDOVER_LIMIT, "client-go to take over")
        assert took < HANDOVER_LIMIT, go.describe()
        lease = await read_lease(client, namespace)
        assert lease["spec"]["holderIdentity"] == "go-2"
        assert lease["spec"]["leaseTransitions"] == transitions + 1

        # And back: client-go's record is one we respect, then take over after its release.
        py.start()
        await hold(LEASE_DURATION * 1.5, one_leader)
        assert not py.elector.is_leader()
        assert py.elector.get_leader() == "go-2"
        go.terminate()
        await until(py.elector.is_leader, HANDOVER_LIMIT + 1, "kcontrol to take over again")
        assert await go.wait_exit(10) == 0, go.describe()
        lease = await read_lease(client, namespace)
        assert lease["spec"]["holderIdentity"] == "py-2"
        assert lease["spec"]["leaseTransitions"] == transitions + 2
