"""A manager may build its controllers more than once on one Prometheus registry - a sharded
kcontrol-manager does whenever the shards it holds change: every installed controller's
factory runs twice on one registry, each time on a fresh informer factory, without a
duplicate metric."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.informers import SharedInformerFactory
from kcontrol.manager import ControllerContext, ControllerRegistry, ManagerOptions
from kcontrol.manager._registry import resolve_controller_flags
from kcontrol.testing import FakeClient, FakeRecorder

INSTALLED = ControllerRegistry.from_entry_points()


@pytest.mark.parametrize("spec", list(INSTALLED), ids=lambda spec: spec.name)
def test_each_controller_builds_twice_on_one_registry(spec: object, tmp_path: Path) -> None:
    registry = CollectorRegistry()
    key = tmp_path / "hmac.key"
    key.write_text("0123456789abcdef0123456789abcdef")  # configrestart requires its key
    flags = resolve_controller_flags(INSTALLED.flags(), {"configrestart-hmac-key-file": str(key)})
    built = []
    for _ in range(2):
        client = FakeClient()
        context = ControllerContext(
            client=client,
            informers=SharedInformerFactory(client),
            options=ManagerOptions(),
            registry=registry,
            identity="me",
            recorder_factory=lambda component: FakeRecorder(),
            flags=flags,
        )
        built.append(spec.factory(context))  # type: ignore[attr-defined]
    assert all(controller is not None for controller in built), spec
    assert built[0] is not built[1]
