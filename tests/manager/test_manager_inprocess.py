"""The Manager in this process against the real apiserver: it runs the example controller,
serves health and metrics, and on shutdown drains, releases the lease and leaves nothing
behind (the _loop_hygiene fixture fails the test on a leaked task or an unclosed session)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from manager_helpers import (
    admin_client,
    annotations,
    create_configmap,
    eventually,
    free_port,
    http_get,
    lease_spec,
)
from prometheus_client import CollectorRegistry

from examples.configmap_annotator import SPEC
from kcontrol.client import EVENTS, LEASES, NAMESPACES, ApiClient
from kcontrol.envtest import ControlPlane
from kcontrol.leaderelection import LeaderElectionOptions, LeadershipLost
from kcontrol.manager import (
    ClientOptions,
    ControllerContext,
    ControllerRegistry,
    ControllerSpec,
    Manager,
    ManagerOptions,
)
from kcontrol.serving import ServingOptions


def options(
    plane: ControlPlane,
    namespace: str,
    *,
    metrics_port: int | None = None,
    leader_elect: bool = True,
    kube_api_qps: float = 20.0,
    kube_api_burst: int = 30,
    **overrides: Any,
) -> ManagerOptions:
    """Options against ``plane`` with the Lease in ``namespace`` (``leader_elect``: whether
    to elect); plain HTTP on ``metrics_port`` (default: a free port; 0: none). The secure port
    has its own tests."""
    values: dict[str, Any] = {
        "client": ClientOptions(
            kubeconfig=str(plane.kubeconfig_path),
            kube_api_qps=kube_api_qps,
            kube_api_burst=kube_api_burst,
        ),
        "election": LeaderElectionOptions(
            leader_elect=leader_elect,
            lease_duration=4.0,
            renew_deadline=3.0,
            retry_period=0.5,
            resource_namespace=namespace,
            resource_name=f"lease-{uuid.uuid4().hex[:8]}",
            identity="in-process",
        ),
        "serving": ServingOptions(
            bind_address="127.0.0.1",
            metrics_port=free_port() if metrics_port is None else metrics_port,
        ),
        **overrides,
    }
    return ManagerOptions(**values)


@contextlib.contextmanager
def loop_reports() -> Iterator[list[str]]:
    """Collect what the event loop reports (unclosed sessions, lost task exceptions) while
    the block runs, plus what a final garbage collection finds; also passed on as usual."""
    loop = asyncio.get_running_loop()
    reports: list[str] = []
    previous = loop.get_exception_handler()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        reports.append(str(context.get("message")))
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
    try:
        yield reports
        gc.collect()
    finally:
        loop.set_exception_handler(previous)


async def stop(manager: Manager, task: asyncio.Task[None]) -> None:
    manager.shutdown()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_leading_manager_syncs_serves_and_releases_the_lease_on_shutdown(
    control_plane: ControlPlane, namespace: str
) -> None:
    opts = options(control_plane, namespace)
    port = opts.serving.metrics_port
    manager = Manager(opts, ControllerRegistry([SPEC]), registry=CollectorRegistry())
    assert manager.controller_names == ["configmap-annotator"]
    assert gc.get_freeze_count() == 0
    async with await admin_client(control_plane) as client:
        await create_configmap(client, namespace, "before")
        try:
            with loop_reports() as reports:
                await run_and_check(manager, client, namespace, opts)
            assert gc.get_freeze_count() > 0, "the GC is frozen once the caches have synced"
        finally:
            gc.unfreeze()
        # Everything the manager started has ended with it, and its session is closed.
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert others == []
        assert reports == []
        assert not manager.leading()
        spec = await lease_spec(client, namespace, opts.election.resource_name)
        assert spec is not None
        assert spec.get("holderIdentity", "") == ""
        assert spec["leaseDurationSeconds"] == 1
        status, _ = await http_get(port, "/healthz")
        assert status == 0, "the health server must be closed after shutdown"


async def run_and_check(
    manager: Manager, client: ApiClient, namespace: str, opts: ManagerOptions
) -> None:
    port = opts.serving.metrics_port
    task = asyncio.create_task(manager.run())
    try:
        status, body = await eventually(
            lambda: _ok(http_get(port, "/readyz?verbose")), within=30, message="/readyz 200"
        )
        assert "[+]informer-sync ok" in body
        assert "[+]leaderElection ok" in body
        await eventually(
            lambda: _equals(annotations(client, namespace), {"before": "in-process"}),
            within=30,
            message="existing ConfigMap annotated",
        )
        await create_configmap(client, namespace, "after")
        await eventually(
            lambda: _equals(
                annotations(client, namespace), {"before": "in-process", "after": "in-process"}
            ),
            within=30,
            message="new ConfigMap annotated",
        )
        spec = await lease_spec(client, namespace, opts.election.resource_name)
        assert spec is not None
        assert spec["holderIdentity"] == "in-process"
        assert spec["leaseDurationSeconds"] == 4
        assert manager.leading()

        status, metrics = await http_get(port, "/metrics")
        assert status == 200
        assert (
            'controller_runtime_reconcile_total{controller="configmap-annotator",'
            'result="success"}' in metrics
        )
        assert 'workqueue_adds_total{name="configmap-annotator"}' in metrics
        assert 'leader_election_master_status{name="' in metrics
        assert "process_cpu_seconds_total" not in metrics  # only what we registered
    finally:
        await stop(manager, task)


async def test_manager_without_leader_election_runs_at_once_and_writes_no_lease(
    control_plane: ControlPlane, namespace: str
) -> None:
    opts = options(control_plane, namespace, leader_elect=False, metrics_port=0)
    manager = Manager(
        opts, ControllerRegistry([SPEC]), registry=CollectorRegistry(), freeze_gc_after_sync=False
    )
    async with await admin_client(control_plane) as client:
        task = asyncio.create_task(manager.run())
        try:
            await create_configmap(client, namespace, "one")
            await eventually(
                lambda: _equals(annotations(client, namespace), {"one": "in-process"}),
                within=30,
                message="ConfigMap annotated",
            )
            assert manager.leading()
        finally:
            await stop(manager, task)
        assert await lease_spec(client, namespace, opts.election.resource_name) is None


async def test_disabled_controller_is_not_started(
    control_plane: ControlPlane, namespace: str
) -> None:
    opts = options(
        control_plane,
        namespace,
        leader_elect=False,
        controllers=("*", "-configmap-annotator"),
        metrics_port=0,
    )
    manager = Manager(
        opts, ControllerRegistry([SPEC]), registry=CollectorRegistry(), freeze_gc_after_sync=False
    )
    assert manager.controller_names == []
    async with await admin_client(control_plane) as client:
        task = asyncio.create_task(manager.run())
        try:
            await create_configmap(client, namespace, "ignored")
            await asyncio.sleep(1.0)
            assert await annotations(client, namespace) == {"ignored": None}
        finally:
            await stop(manager, task)


async def test_lost_lease_stops_controllers_and_raises(
    control_plane: ControlPlane, namespace: str
) -> None:
    """Another writer takes the Lease over: the manager stops every controller, then raises
    LeadershipLost (main turns that into exit status 1)."""
    opts = options(control_plane, namespace, metrics_port=0)
    manager = Manager(
        opts, ControllerRegistry([SPEC]), registry=CollectorRegistry(), freeze_gc_after_sync=False
    )
    name = opts.election.resource_name
    async with await admin_client(control_plane) as client:
        task = asyncio.create_task(manager.run())
        try:
            await eventually(
                lambda: _holder_is(lease_spec(client, namespace, name), "in-process"),
                within=30,
                message="lease acquired",
            )
            lease = await client.get(LEASES, name, namespace=namespace)
            lease["spec"]["holderIdentity"] = "usurper"
            await client.update(LEASES, lease)
            with pytest.raises(LeadershipLost):
                await asyncio.wait_for(task, timeout=30)
        finally:
            if not task.done():
                await stop(manager, task)
        assert not manager.leading()
        await create_configmap(client, namespace, "after-loss")
        await asyncio.sleep(0.5)
        assert (await annotations(client, namespace))["after-loss"] is None
        spec = await lease_spec(client, namespace, name)
        assert spec is not None
        assert spec["holderIdentity"] == "usurper", "a deposed leader must not release"


async def _ok(probe: Any) -> tuple[int, str] | None:
    status, body = await probe
    return (status, body) if status == 200 else None


async def _equals(probe: Any, expected: Any) -> bool:
    return bool(await probe == expected)


async def _holder_is(probe: Any, holder: str) -> bool:
    spec = await probe
    return bool(spec and spec.get("holderIdentity") == holder)


class _Probe:
    """A controller that reads once through its own client, records one event, then idles."""

    def __init__(self, context: ControllerContext, name: str, namespace: str) -> None:
        self.context = context
        self.name = name
        self.namespace = namespace
        self.read = asyncio.get_running_loop().create_future()

    async def run(self) -> None:
        namespace = await self.context.client.get(NAMESPACES, self.namespace)
        recorder = self.context.new_recorder(self.name)
        recorder.event(namespace, "Normal", "Probed", f"probed by {self.name}")
        self.read.set_result(None)
        await asyncio.Event().wait()


async def test_each_controller_has_its_own_client_budget_user_agent_and_event_queue(
    control_plane: ControlPlane, namespace: str
) -> None:
    """As kube-controller-manager's client builder: each controller's requests and events
    spend its own --kube-api-qps budget and carry its name in the user agent. At 0.01 QPS
    with a burst of 2, each component has two requests before a 100 s wait: each controller
    needs exactly two (a read, then its event), so with one shared bucket the second
    controller would stall."""
    probes: dict[str, _Probe] = {}
    built = asyncio.Event()

    def spec(name: str) -> ControllerSpec:
        def factory(context: ControllerContext) -> _Probe:
            probes[name] = _Probe(context, name, namespace)
            if len(probes) == 2:
                built.set()
            return probes[name]

        return ControllerSpec(name, factory)

    opts = options(
        control_plane,
        namespace,
        leader_elect=False,
        metrics_port=0,
        kube_api_qps=0.01,
        kube_api_burst=2,
    )
    registry = CollectorRegistry()
    manager = Manager(
        opts,
        ControllerRegistry([spec("first-controller"), spec("second-controller")]),
        registry=registry,
        freeze_gc_after_sync=False,
    )
    task = asyncio.create_task(manager.run())
    try:
        async with asyncio.timeout(60):
            await built.wait()  # once the manager has loaded its config
            await asyncio.gather(*(probe.read for probe in probes.values()))
        first, second = (
            probes[n].context.client for n in ("first-controller", "second-controller")
        )
        assert isinstance(first, ApiClient) and isinstance(second, ApiClient)
        assert first.user_agent == "kcontrol-manager/in-process/first-controller"
        assert second.user_agent == "kcontrol-manager/in-process/second-controller"
        assert first.rate_limiter is not second.rate_limiter
        async with await admin_client(control_plane) as client:

            async def sources() -> set[str]:
                # A Namespace is cluster-scoped: its events live in "default".
                events = await client.list(EVENTS, namespace="default")
                return {
                    e.get("source", {}).get("component", "")
                    for e in events["items"]
                    if e["involvedObject"].get("name") == namespace
                }

            # Each event went out through its controller's own broadcaster and client: the
            # second of that client's two tokens.
            await eventually(
                lambda: _equals(sources(), {"first-controller", "second-controller"}),
                within=30,
                message="both controllers' events written",
            )
        for name in ("first-controller", "second-controller"):
            written = registry.get_sample_value(
                "kcontrol_events_written_total", {"component": name, "verb": "create"}
            )
            assert written == 1.0, name
    finally:
        await stop(manager, task)
