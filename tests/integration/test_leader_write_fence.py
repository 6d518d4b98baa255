"""Leadership that never writes twice, against the real apiserver.

A kcontrol Manager leads, talking to the apiserver through a fault proxy; a sync is in flight
when the proxy starts failing every Lease request, so the leader cannot renew. The sync would
sleep past the renew deadline - until a standby elector has acquired the Lease - and then
write. The deposed leader must cancel it rather than let it finish, refuse any write made on
the way out (the write gate), and stop with LeadershipLost (kcontrol-manager exits 1).

A watch on the ConfigMaps proves it: no write of the old leader carries a resourceVersion
newer than the standby's acquisition of the Lease. (resourceVersions are etcd revisions,
ordered across resources on this single etcd; clients must not rely on that in general.)
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.client import (
    CONFIGMAPS,
    LEASES,
    ApiClient,
    Client,
    ClientConfig,
    ListOptions,
    StaticTokenAuth,
    WriteRefused,
)
from kcontrol.controller import Controller, ControllerOptions
from kcontrol.envtest import ControlPlane
from kcontrol.errors import NotFound
from kcontrol.informers import ResourceEventHandlerFuncs, split_meta_namespace_key
from kcontrol.leaderelection import (
    LeaderElectionConfig,
    LeaderElectionOptions,
    LeaderElector,
    LeadershipLost,
    LeaseLock,
)
from kcontrol.manager import (
    ControllerContext,
    ControllerRegistry,
    ControllerSpec,
    Manager,
    ManagerOptions,
)
from kcontrol.serving import ServingOptions
from kcontrol.testing.faults import FaultProxy

pytestmark = pytest.mark.slow

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 4.0, 3.0, 0.5
LABEL_SELECTOR = "kcontrol.test/fence=true"
WRITER = "kcontrol.test/written-by"
OLD, NEW = "old-leader", "standby"
WITHIN = 60.0  # generous: two busy cores


class SlowWriter:
    """A controller annotating each labelled ConfigMap with ``WRITER: <identity>``.

    The sync of ConfigMaps named ``slow-*`` first waits for ``proceed`` (set once the standby
    has acquired the Lease: well past the old leader's renew deadline), then writes.
    ``outcomes`` records how each sync ended: written, refused or cancelled.
    """

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.proceed = asyncio.Event()
        self.outcomes: dict[str, str] = {}
        self.client: Client | None = None

    def factory(self, ctx: ControllerContext) -> Controller:
        client = self.client = ctx.client
        informer = ctx.informers.for_resource(CONFIGMAPS, label_selector=LABEL_SELECTOR)
        lister = informer.lister()

        async def sync(key: str) -> None:
            namespace, name = split_meta_namespace_key(key)
            try:
                configmap = lister.get(namespace, name)
            except NotFound:
                return
            if (configmap["metadata"].get("annotations") or {}).get(WRITER) == ctx.identity:
                return
            if name.startswith("slow"):
                self.started.set()
                try:
                    await self.proceed.wait()
                    await asyncio.sleep(0.5)
                except asyncio.CancelledError:
                    self.outcomes[name] = "cancelled"
                    raise
            patch = {"metadata": {"annotations": {WRITER: ctx.identity}}}
            try:
                await client.patch(CONFIGMAPS, name, patch, namespace=namespace)
            except WriteRefused:
                self.outcomes[name] = "refused"
                raise
            self.outcomes[name] = "written"

        controller = Controller(
            ControllerOptions(
                name="fence-writer",
                sync=sync,
                workers=2,
                has_synced=[informer.has_synced],
                registry=ctx.registry,
            )
        )
        informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=controller.enqueue_object,
                update_func=lambda old, new: controller.enqueue_object(new),
            )
        )
        return controller


class LastWord:
    """A runnable that makes one more write while it is being cancelled, as a careless
    component might on its way out; ``outcome`` says what became of it."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.outcome = "not tried"
        self.client: Client | None = None

    def factory(self, ctx: ControllerContext) -> LastWord:
        self.client = ctx.client
        return self

    async def run(self) -> None:
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            assert self.client is not None
            configmap = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "last-word", "annotations": {WRITER: OLD}},
            }
            try:
                await self.client.create(CONFIGMAPS, configmap, namespace=self.namespace)
            except WriteRefused:
                self.outcome = "refused"
            except Exception as error:
                self.outcome = f"failed: {error!r}"
            else:
                self.outcome = "written"
            raise


async def eventually(probe: Callable[[], Awaitable[Any]], message: str) -> Any:
    deadline = time.monotonic() + WITHIN
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{message} not reached within {WITHIN}s")
        await asyncio.sleep(0.05)


def configmap(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kcontrol.test/fence": "true"},
        },
    }


@contextlib.asynccontextmanager
async def recording_writes(
    client: ApiClient, namespace: str
) -> AsyncIterator[list[tuple[int, str, str | None]]]:
    """Every ConfigMap write in ``namespace`` from now on: (resourceVersion, name, writer)."""
    start = await client.list(CONFIGMAPS, namespace=namespace)
    writes: list[tuple[int, str, str | None]] = []

    async def watch() -> None:
        async with client.watch(
            CONFIGMAPS,
            namespace=namespace,
            options=ListOptions(
                resource_version=start["metadata"]["resourceVersion"], timeout_seconds=300
            ),
        ) as events:
            async for event in events:
                if event.type in ("ADDED", "MODIFIED"):
                    metadata = event.object["metadata"]
                    writer = (metadata.get("annotations") or {}).get(WRITER)
                    writes.append((int(metadata["resourceVersion"]), metadata["name"], writer))

    task = asyncio.create_task(watch())
    try:
        yield writes
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_deposed_leader_writes_nothing_after_the_standby_acquired(
    control_plane: ControlPlane, namespace: str
) -> None:
    lease = f"fence-{uuid.uuid4().hex[:8]}"
    admin_config = ClientConfig(
        host=control_plane.host,
        auth=StaticTokenAuth(control_plane.token()),
        ca_file=str(control_plane.ca_file),
    )
    writer, last_word = SlowWriter(), LastWord(namespace)
    registry = ControllerRegistry(
        [
            ControllerSpec("fence-writer", writer.factory),
            ControllerSpec("last-word", last_word.factory),
        ]
    )
    options = ManagerOptions(
        election=LeaderElectionOptions(
            lease_duration=LEASE_DURATION,
            renew_deadline=RENEW_DEADLINE,
            retry_period=RETRY_PERIOD,
            resource_namespace=namespace,
            resource_name=lease,
            identity=OLD,
        ),
        serving=ServingOptions(),
    )
    proxy = FaultProxy(
        control_plane.host, control_plane.ssl_context(), control_plane.serving_cert_pair
    )
    async with (
        ApiClient(admin_config, qps=0, registry=CollectorRegistry(), timeout=10) as admin,
        proxy,
        recording_writes(admin, namespace) as writes,
    ):
        manager = Manager(
            options,
            registry,
            registry=CollectorRegistry(),
            client_config=ClientConfig(
                host=proxy.host,
                auth=StaticTokenAuth(control_plane.token()),
                ca_file=str(control_plane.ca_file),
            ),
            freeze_gc_after_sync=False,
        )
        old_leader = asyncio.create_task(manager.run())
        standby_task: asyncio.Task[None] | None = None
        try:
            await eventually(
                lambda: _is(holder(admin, namespace, lease), OLD), "the old leader holds the lease"
            )
            # It writes normally while it leads.
            await admin.create(CONFIGMAPS, configmap(namespace, "fast"))
            await eventually(
                lambda: _true(writer.outcomes.get("fast") == "written"), "'fast' annotated"
            )
            await admin.create(CONFIGMAPS, configmap(namespace, "slow"))
            await eventually(lambda: _true(writer.started.is_set()), "the slow sync started")

            # From now on the old leader cannot renew: every Lease request it sends fails.
            proxy.inject(503, match=lambda request: "/leases" in request.path, times=10**9)

            acquired_rv: list[int] = []
            standby_lock = LeaseLock(admin, namespace, lease, NEW)

            async def lead() -> None:
                current = standby_lock.lease
                assert current is not None
                acquired_rv.append(int(current["metadata"]["resourceVersion"]))
                writer.proceed.set()  # the slow sync may now write - if it still runs
                await asyncio.get_running_loop().create_future()

            standby = LeaderElector(
                LeaderElectionConfig(
                    lock=standby_lock,
                    lease_duration=LEASE_DURATION,
                    renew_deadline=RENEW_DEADLINE,
                    retry_period=RETRY_PERIOD,
                    registry=CollectorRegistry(),
                )
            )
            standby_task = asyncio.create_task(standby.run(lead))

            await asyncio.wait({old_leader}, timeout=WITHIN)
            assert old_leader.done(), "the deposed leader did not stop"
            assert isinstance(old_leader.exception(), LeadershipLost)
            await eventually(lambda: _true(bool(acquired_rv)), "the standby acquired the lease")

            # The old leader has exited (its session is closed). A marker written now is
            # ordered after anything it sent: once the watch shows it, nothing is missing.
            await admin.create(CONFIGMAPS, configmap(namespace, "marker"))
            await eventually(
                lambda: _true(any(name == "marker" for _, name, _ in writes)), "marker seen"
            )
            assert await holder(admin, namespace, lease) == NEW
        finally:
            for task in (old_leader, standby_task):
                if task is not None and not task.done():
                    task.cancel()
            await asyncio.gather(
                *(t for t in (old_leader, standby_task) if t is not None), return_exceptions=True
            )

        late = [(rv, name) for rv, name, by in writes if by == OLD and rv > acquired_rv[0]]
        assert late == [], f"the deposed leader wrote after the standby acquired: {late}"
        assert "fast" in {name for _, name, by in writes if by == OLD}
        assert writer.outcomes.get("slow") == "cancelled", writer.outcomes
        assert last_word.outcome == "refused", last_word.outcome


async def holder(client: ApiClient, namespace: str, lease: str) -> str | None:
    try:
        spec = (await client.get(LEASES, lease, namespace=namespace))["spec"]
    except NotFound:
        return None
    return str(spec.get("holderIdentity") or "")


async def _is(probe: Awaitable[Any], expected: Any) -> bool:
    return bool(await probe == expected)


async def _true(value: bool) -> bool:
    return value
