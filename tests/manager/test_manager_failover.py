"""Two kcontrol-manager processes electing on one Lease against the real apiserver
(reliability.md fault tests 5-7 with the example controller, whose annotation value is the
identity of the process that wrote it).

Lease 4 s, renew deadline 3 s, retry period 0.5 s. Acquire retries are jittered by up to
1.2 retry periods, so "within lease duration + retry period" is checked with that jitter
(and a second of slack for two busy cores) added.
"""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from manager_helpers import (
    LEASE_DURATION,
    RETRY_PERIOD,
    ManagerProcess,
    admin_client,
    annotations,
    create_configmap,
    eventually,
    http_get,
    lease_spec,
)

from examples.configmap_annotator import ANNOTATION
from kcontrol.client import CONFIGMAPS, ApiClient, ListOptions
from kcontrol.envtest import ControlPlane

pytestmark = pytest.mark.slow

JITTER = 1.2
SLACK = 1.0


class Pair:
    """Starts manager processes on one lease; kills leftovers at the end."""

    def __init__(self, plane: ControlPlane, namespace: str, log_dir: Path) -> None:
        self.plane = plane
        self.namespace = namespace
        self.lease = f"lease-{uuid.uuid4().hex[:8]}"
        self.log_dir = log_dir
        self.processes: list[ManagerProcess] = []

    def start(self, identity: str) -> ManagerProcess:
        process = ManagerProcess(self.plane, self.namespace, self.lease, identity, self.log_dir)
        self.processes.append(process)
        return process

    def logs(self) -> str:
        return "\n".join(f"--- {p.identity}\n{p.log()[-4000:]}" for p in self.processes)


@pytest.fixture
def pair(control_plane: ControlPlane, namespace: str, tmp_path: Path) -> Iterator[Pair]:
    pair = Pair(control_plane, namespace, tmp_path)
    try:
        yield pair
    finally:
        for process in pair.processes:
            process.stop()


async def holder(client: ApiClient, pair: Pair) -> str | None:
    spec = await lease_spec(client, pair.namespace, pair.lease)
    return None if spec is None else spec.get("holderIdentity", "")


async def wait_holder(client: ApiClient, pair: Pair, identity: str, within: float) -> None:
    async def probe() -> bool:
        return await holder(client, pair) == identity

    try:
        await eventually(probe, within=within, interval=0.05, message=f"{identity} holds lease")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{pair.logs()}") from None


async def wait_ready(process: ManagerProcess, within: float = 30) -> str:
    async def probe() -> str | None:
        status, body = await http_get(process.port, "/readyz?verbose")
        return body if status == 200 else None

    return await eventually(probe, within=within, message=f"{process.identity} /readyz")


async def wait_annotated(client: ApiClient, namespace: str, names: list[str], value: str) -> None:
    async def probe() -> bool:
        current = await annotations(client, namespace)
        return all(current.get(name) == value for name in names)

    await eventually(probe, within=30, message=f"{names} annotated by {value}")


async def leader_and_standby(client: ApiClient, pair: Pair) -> tuple[ManagerProcess, ...]:
    first = pair.start("manager-a")
    await wait_holder(client, pair, "manager-a", within=30)
    second = pair.start("manager-b")
    await wait_ready(first)
    body = await wait_ready(second)
    # A standby that is healthily waiting for the lease is ready.
    assert "[+]leaderElection ok" in body
    assert await holder(client, pair) == "manager-a"
    return first, second


async def test_standby_takes_over_after_the_leader_is_killed(
    control_plane: ControlPlane, namespace: str, pair: Pair
) -> None:
    async with await admin_client(control_plane) as client:
        leader, standby = await leader_and_standby(client, pair)
        await create_configmap(client, namespace, "cm-1")
        await wait_annotated(client, namespace, ["cm-1"], "manager-a")

        leader.signal(signal.SIGKILL)
        killed = time.monotonic()
        assert await leader.wait(10) == -signal.SIGKILL
        await wait_holder(
            client, pair, "manager-b", within=LEASE_DURATION + (1 + JITTER) * RETRY_PERIOD + SLACK
        )
        took = time.monotonic() - killed
        # It waited for the lease to expire: it did not take a valid lease over.
        assert took > LEASE_DURATION - RETRY_PERIOD - 0.5, took

        status, body = await http_get(standby.port, "/readyz?verbose")
        assert status == 200, body
        await create_configmap(client, namespace, "cm-2")
        await wait_annotated(client, namespace, ["cm-1", "cm-2"], "manager-b")
        spec = await lease_spec(client, namespace, pair.lease)
        assert spec is not None
        assert spec["leaseTransitions"] >= 1
        assert standby.running()


async def test_paused_leader_writes_nothing_after_losing_the_lease_and_exits_1(
    control_plane: ControlPlane, namespace: str, pair: Pair
) -> None:
    async with await admin_client(control_plane) as client:
        leader, standby = await leader_and_standby(client, pair)
        names = ["cm-1", "cm-2"]
        for name in names:
            await create_configmap(client, namespace, name)
        await wait_annotated(client, namespace, names, "manager-a")

        # Record every ConfigMap write from here on, in order.
        start = await client.list(CONFIGMAPS, namespace=namespace)
        writes: list[tuple[str, str | None]] = []
        watching = asyncio.create_task(
            _record_writes(client, namespace, start["metadata"]["resourceVersion"], writes)
        )
        try:
            leader.signal(signal.SIGSTOP)
            await wait_holder(client, pair, "manager-b", within=LEASE_DURATION + 10)
            writes_before_takeover = len(writes)
            # Work for the paused leader: new objects, and the new leader's annotations.
            for name in ("cm-3", "cm-4"):
                await create_configmap(client, namespace, name)
                names.append(name)
            await wait_annotated(client, namespace, names, "manager-b")

            leader.signal(signal.SIGCONT)
            await create_configmap(client, namespace, "cm-5")  # more work, after the resume
            names.append("cm-5")
            code = await leader.wait(LEASE_DURATION + 10)
            assert code == 1, pair.logs()
            await wait_annotated(client, namespace, names, "manager-b")
            await asyncio.sleep(1.0)  # let any late write show up in the watch
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)

        after_takeover = writes[writes_before_takeover:]
        assert ("cm-5", "manager-b") in after_takeover
        stale = [w for w in after_takeover if w[1] == "manager-a"]
        assert stale == [], f"the deposed leader wrote {stale}"
        assert await holder(client, pair) == "manager-b"
        assert standby.running()
        events = leader.log_events()
        assert any(e.get("event") == "exiting: leader election lost" for e in events), pair.logs()
        assert not any(e.get("event") == "sync failed" for e in events), (
            "the old leader must not even try to sync"
        )


async def test_sigterm_drains_releases_the_lease_and_hands_over(
    control_plane: ControlPlane, namespace: str, pair: Pair
) -> None:
    async with await admin_client(control_plane) as client:
        leader, standby = await leader_and_standby(client, pair)
        await create_configmap(client, namespace, "cm-1")
        await wait_annotated(client, namespace, ["cm-1"], "manager-a")

        leader.signal(signal.SIGTERM)
        assert await leader.wait(30) == 0, pair.logs()
        exited = time.monotonic()
        await wait_holder(client, pair, "manager-b", within=(1 + JITTER) * RETRY_PERIOD + SLACK)
        handover = time.monotonic() - exited
        assert handover < LEASE_DURATION - 1, "the standby must not wait for the lease to expire"
        events = [e.get("event", "") for e in leader.log_events()]
        assert "released lease" in events
        assert "all workers finished" in events  # the controller drained its queue
        assert events.index("all workers finished") < events.index("released lease")
        assert "stopped cleanly" in events

        await create_configmap(client, namespace, "cm-2")
        await wait_annotated(client, namespace, ["cm-1", "cm-2"], "manager-b")

        # The last manager standing releases too: holder empty, duration 1 s.
        standby.signal(signal.SIGTERM)
        assert await standby.wait(30) == 0, pair.logs()
        spec = await lease_spec(client, namespace, pair.lease)
        assert spec is not None
        assert spec.get("holderIdentity", "") == ""
        assert spec["leaseDurationSeconds"] == 1
        status, _ = await http_get(standby.port, "/healthz")
        assert status == 0


async def _record_writes(
    client: ApiClient, namespace: str, resource_version: str, writes: list[tuple[str, Any]]
) -> None:
    async with client.watch(
        CONFIGMAPS,
        namespace=namespace,
        options=ListOptions(resource_version=resource_version, timeout_seconds=300),
    ) as events:
        async for event in events:
            if event.type in ("ADDED", "MODIFIED"):
                metadata = event.object["metadata"]
                writes.append(
                    (metadata["name"], (metadata.get("annotations") or {}).get(ANNOTATION))
                )
