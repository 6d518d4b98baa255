"""The package's public surface, its registration with kcontrol-manager, and the runner it
builds (workers, retries, queue name)."""

from __future__ import annotations

from importlib.metadata import entry_points

from deployment_fixtures import Fixture, new_deployment
from prometheus_client import CollectorRegistry

import kcontrol_controllers.deployment as package
from kcontrol.informers import SharedInformerFactory
from kcontrol.manager import ControllerContext, ControllerRegistry, ManagerOptions
from kcontrol.testing import Action, FakeClient, FakeRecorder
from kcontrol_controllers.deployment import (
    MAX_RETRIES,
    NAME,
    SPEC,
    DeploymentController,
    new_controller,
)
from kcontrol_controllers.deployment._factory import AUTO_ROLLBACK

EXPECTED_SURFACE = {
    "AUTO_ROLLBACK_ANNOTATION",
    "DEFAULT_WORKERS",
    "MAX_RETRIES",
    "NAME",
    "QUEUE_NAME",
    "ROLLED_BACK",
    "ROLLED_BACK_TO_ANNOTATION",
    "SPEC",
    "DeploymentController",
    "compute_hash",
    "new_controller",
}


def test_public_surface() -> None:
    assert set(package.__all__) == EXPECTED_SURFACE
    for name in package.__all__:
        assert hasattr(package, name)
    assert not [n for n in package.__all__ if n.startswith("_")]


def test_spec_and_entry_point() -> None:
    assert SPEC.name == NAME == "deployment-controller"
    assert SPEC.enabled_by_default
    (entry,) = [e for e in entry_points(group="kcontrol.controllers") if e.name == NAME]
    assert entry.value == "kcontrol_controllers.deployment:SPEC"
    assert entry.load() is SPEC
    registry = ControllerRegistry.from_entry_points()
    assert NAME in registry


def _context(workers: int, auto_rollback: bool = False) -> tuple[ControllerContext, list[str]]:
    client = FakeClient()
    components: list[str] = []

    def recorder(component: str) -> FakeRecorder:
        components.append(component)
        return FakeRecorder()

    ctx = ControllerContext(
        client=client,
        informers=SharedInformerFactory(client),
        options=ManagerOptions(),
        registry=CollectorRegistry(),
        identity="test",
        recorder_factory=recorder,
        flags={"concurrent-deployment-syncs": workers, "deployment-auto-rollback": auto_rollback},
    )
    return ctx, components


def test_new_controller_wires_workers_and_event_source() -> None:
    ctx, components = _context(7)
    controller = new_controller(ctx)
    assert isinstance(controller, DeploymentController)
    assert components == ["deployment-controller"]
    workers = ctx.registry.get_sample_value(
        "controller_runtime_max_concurrent_reconciles", {"controller": "deployment"}
    )
    assert workers == 7
    # informers for the three resources were asked for
    plurals = sorted(i.resource.plural for i in ctx.informers.informers())
    assert plurals == ["deployments", "pods", "replicasets"]


def test_auto_rollback_flag_reaches_the_controller() -> None:
    assert [f.name for f in SPEC.flags] == [
        "concurrent-deployment-syncs",
        "deployment-auto-rollback",
    ]
    assert AUTO_ROLLBACK.default is False
    assert AUTO_ROLLBACK.parse("true") is True
    for value in (False, True):
        ctx, _ = _context(5, auto_rollback=value)
        assert new_controller(ctx)._auto_rollback is value


def test_default_workers() -> None:
    ctx, _ = _context(5)
    new_controller(ctx)
    assert (
        ctx.registry.get_sample_value(
            "controller_runtime_max_concurrent_reconciles", {"controller": "deployment"}
        )
        == 5
    )


def test_a_sync_has_no_time_limit() -> None:
    # As upstream: each API call is bounded by the client's timeout, the whole sync is not
    # (a limit would cancel slow syncs and count them toward MAX_RETRIES).
    ctx, _ = _context(5)
    controller = new_controller(ctx)
    assert controller.controller._options.sync_timeout is None


async def test_failing_key_is_dropped_after_max_retries() -> None:
    f = Fixture()
    (d,) = f.seed(new_deployment("foo", 1))
    calls = 0

    def fail(action: Action) -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("boom")

    f.client.prepend_reactor("create", "replicasets", fail)
    queue = f.dc.controller.queue
    key = f"{d['metadata']['namespace']}/{d['metadata']['name']}"
    # upstream maxRetries = 15: the first failure and 14 more are requeued rate-limited, the
    # 16th failure (after the 15th retry) drops the key.
    assert MAX_RETRIES == 15
    for retries in range(1, 16):
        await f.dc.controller._process(key)
        assert queue.num_requeues(key) == retries, f"failure {retries} was not requeued"
    await f.dc.controller._process(key)
    assert calls == 16
    assert queue.num_requeues(key) == 0  # forgotten: dropped until the next event


def test_controller_constructor_defaults() -> None:
    client = FakeClient()
    dc = DeploymentController(
        client=client,
        informers=SharedInformerFactory(client),
        recorder=FakeRecorder(),
        registry=CollectorRegistry(),
    )
    assert dc.controller.name == "deployment"
