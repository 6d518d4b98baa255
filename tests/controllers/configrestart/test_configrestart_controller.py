"""The controller on the fake client: the requests it sends (upstream's "fixture" style),
its grace period on a fake clock, its metrics, and the wiring the factory does."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.client import CONFIGMAPS, DEPLOYMENTS, SECRETS, Object
from kcontrol.clock import FakeClock
from kcontrol.errors import Invalid, OptionsError
from kcontrol.informers import SharedInformerFactory
from kcontrol.manager import ControllerContext, ControllerRegistry, ManagerOptions
from kcontrol.manager.flags import parse_args
from kcontrol.testing import Action, FakeClient, FakeRecorder
from kcontrol_controllers.configrestart import (
    CHECKSUM_FIELD,
    DAEMONSETS,
    KCONTROL,
    NAME,
    SPEC,
    STATEFULSETS,
    XING,
    ConfigRestartController,
    HmacKey,
    new_controller,
)
from tests.controllers.configrestart.test_configrestart_checksums import legacy_checksum

KEY = HmacKey(b"0123456789abcdef0123456789abcdef")
CANARY = "canary-7c1f0a"
W = "deployment/ns/web"


def configmap(name: str, **data: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns"},
        "data": data,
    }


def secret(name: str, value: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "ns"},
        "data": {"password": base64.b64encode(value.encode()).decode()},
    }


def workload(
    kind: str = "Deployment", annotations: dict[str, str] | None = None, name: str = "web"
) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "ns",
            "annotations": {KCONTROL.enabled: "enabled"} if annotations is None else annotations,
        },
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "app:1",
                            "envFrom": [{"configMapRef": {"name": "app"}}],
                            "env": [
                                {
                                    "name": "P",
                                    "valueFrom": {"secretKeyRef": {"name": "db", "key": "p"}},
                                }
                            ],
                        }
                    ]
                },
            },
        },
    }


class Fixture:
    def __init__(self, *objects: Object, ignored: tuple[str, ...] = ()) -> None:
        self.client = FakeClient(objects, resources=[STATEFULSETS, DAEMONSETS])
        self.clock = FakeClock()
        self.recorder = FakeRecorder()
        self.registry = CollectorRegistry()
        self.informers = SharedInformerFactory(self.client)
        self.controller = ConfigRestartController(
            client=self.client,
            informers=self.informers,
            recorder=self.recorder,
            key=KEY,
            check_period=0.5,
            grace_period=5.0,
            ignored_errors=[re.compile(p) for p in ignored],
            clock=self.clock,
            registry=self.registry,
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Fixture]:
        """The informers (not the workers or the change loop: tests drive those)."""
        own = (self.controller.configmaps, self.controller.secrets)
        async with asyncio.TaskGroup() as tasks:
            runs = [tasks.create_task(self.informers.run())]
            runs += [tasks.create_task(informer.run()) for informer in own]
            await self.informers.wait_for_cache_sync()
            for informer in own:
                await informer.wait_for_cache_sync()
            try:
                yield self
            finally:
                for run in runs:
                    run.cancel()

    def metric(self, name: str) -> float:
        value = self.registry.get_sample_value("deployment_restart_controller_" + name)
        return value if value is not None else 0.0

    async def settle(self) -> None:
        for _ in range(20):
            await asyncio.sleep(0)
        await asyncio.sleep(0.05)

    async def process(self, seconds: float = 5.0) -> list[str]:
        """Let the grace period pass, take the due changes, and sync what they affect."""
        await self.settle()
        self.clock.step(seconds)
        affected = self.controller.process_due_changes()
        for key in affected:
            await self.controller.sync(key)
        return affected

    def patches(self) -> list[Action]:
        return [a for a in self.client.actions if a.verb == "patch"]

    async def stored(self, name: str = "web", family: Any = KCONTROL) -> dict[str, str]:
        d = await self.client.get(DEPLOYMENTS, name, namespace="ns")
        return json.loads(d["metadata"]["annotations"][family.checksums])  # type: ignore[no-any-return]

    async def restarted_at(self, name: str = "web", family: Any = KCONTROL) -> str | None:
        d = await self.client.get(DEPLOYMENTS, name, namespace="ns")
        annotations = d["spec"]["template"]["metadata"].get("annotations") or {}
        return annotations.get(family.timestamp)  # type: ignore[no-any-return]

    async def advance(self, seconds: float) -> None:
        self.clock.step(seconds)
        await self.settle()

    async def update(self, resource: Any, obj: Object) -> None:
        current = await self.client.get(resource, obj["metadata"]["name"], namespace="ns")
        obj = {**obj, "metadata": {**obj["metadata"], **current["metadata"]}}
        await self.client.update(resource, obj, namespace="ns")


async def test_first_sight_stores_checksums_without_restart() -> None:
    f = Fixture(configmap("app", a="1"), secret("db", "s1"), workload())
    async with f.running():
        assert await f.process() == [W]
        (patch,) = f.patches()
        assert set(patch.patch) == {"metadata"}, "no restart: nothing under spec"
        assert patch.patch["metadata"]["resourceVersion"]
        assert await f.stored() == {
            "configmap/ns/app": KEY.config_checksum("configmap", configmap("app", a="1")),
            "secret/ns/db": KEY.config_checksum("secret", secret("db", "s1")),
        }
        assert await f.restarted_at() is None
        assert f.metric("deployment_annotation_updates_total") == 1
        assert f.metric("deployment_restarts_total") == 0
        # our own patch is a change of the workload; it needs nothing more
        await f.process()
        assert len(f.patches()) == 1


async def test_config_change_restarts_after_the_grace_period_once() -> None:
    f = Fixture(configmap("app", a="1"), secret("db", "s1"), workload())
    async with f.running():
        await f.process()
        f.client.clear_actions()
        await f.update(CONFIGMAPS, configmap("app", a="2"))
        await f.settle()
        f.clock.step(2.0)
        await f.update(CONFIGMAPS, configmap("app", a="3"))
        await f.settle()
        assert f.controller.changes.get("configmap/ns/app").count == 2  # type: ignore[union-attr]
        f.clock.step(2.9)
        assert f.controller.process_due_changes() == [], "still within the grace period"
        assert await f.process(0.1) == [W]
        (patch,) = f.patches()
        assert KCONTROL.timestamp in patch.patch["spec"]["template"]["metadata"]["annotations"]
        assert (await f.stored())["configmap/ns/app"] == KEY.config_checksum(
            "configmap", configmap("app", a="3")
        )
        assert f.metric("deployment_restarts_total") == 1
        assert f.metric("changes_processed_total") >= 2
        assert f.recorder.events == ["Normal ConfigChanged Restarting: configmap/ns/app changed"]


async def test_a_workload_change_does_not_act_early_on_a_waiting_config_change() -> None:
    """The workload's own change comes due while a config change is within its grace
    period: the config is left for its own change, so a second edit within the grace period
    still restarts once."""
    f = Fixture(configmap("app", a="1"), secret("db", "s1"), workload())
    async with f.running():
        await f.process()
        f.client.clear_actions()
        await f.update(CONFIGMAPS, configmap("app", a="2"))
        await f.settle()
        f.clock.step(1.0)
        f.controller.changes.discard(W)
        f.controller.changes.add(W, f.clock.now() - 5.0)  # e.g. the previous patch, seen late
        assert f.controller.process_due_changes() == [W]
        await f.controller.sync(W)
        assert await f.restarted_at() is None, "the waiting config change is not acted on"
        await f.update(CONFIGMAPS, configmap("app", a="3"))
        assert await f.process(4.0) == [W]
        assert len([p for p in f.patches() if "spec" in p.patch]) == 1
        assert (await f.stored())["configmap/ns/app"] == KEY.config_checksum(
            "configmap", configmap("app", a="3")
        )


async def test_metadata_only_change_restarts_nothing() -> None:
    f = Fixture(configmap("app", a="1"), secret("db", "s1"), workload())
    async with f.running():
        await f.process()
        f.client.clear_actions()
        labelled = configmap("app", a="1")
        labelled["metadata"]["labels"] = {"new": "label"}
        await f.update(CONFIGMAPS, labelled)
        await f.process()
        assert f.patches() == []
        assert f.controller.changes.get("configmap/ns/app") is None


async def test_secret_change_restarts_and_the_cache_holds_no_value() -> None:
    f = Fixture(configmap("app", a="1"), secret("db", CANARY), workload())
    async with f.running():
        await f.process()
        cached = f.controller.secrets.lister().get("ns", "db")
        assert CHECKSUM_FIELD in cached and "data" not in cached
        assert CANARY not in repr(cached)
        assert base64.b64encode(CANARY.encode()).decode() not in repr(cached)
        await f.update(SECRETS, secret("db", CANARY + "-2"))
        await f.process()
        assert await f.restarted_at() is not None
        for action in f.patches():
            assert CANARY not in json.dumps(action.patch)


async def test_the_configmap_cache_holds_no_data_and_changes_still_restart() -> None:
    """ConfigMaps are cached as Secrets are: identity and checksum, not a byte of data (any
    tenant can create a thousand 1 MiB ones)."""
    f = Fixture(configmap("app", a=CANARY), secret("db", "s1"), workload())
    async with f.running():
        await f.process()
        cached = f.controller.configmaps.lister().get("ns", "app")
        assert set(cached) == {"apiVersion", "kind", "metadata", CHECKSUM_FIELD}
        assert set(cached["metadata"]) <= {"name", "namespace", "uid", "resourceVersion"}
        assert cached[CHECKSUM_FIELD] == KEY.config_checksum(
            "configmap", configmap("app", a=CANARY)
        )
        assert CANARY not in repr(cached)
        await f.update(CONFIGMAPS, configmap("app", a=CANARY + "-2"))
        await f.process()
        assert await f.restarted_at() is not None
        assert f.recorder.events == ["Normal ConfigChanged Restarting: configmap/ns/app changed"]


async def test_opted_out_workloads_are_left_alone() -> None:
    f = Fixture(
        configmap("app", a="1"),
        secret("db", "s1"),
        workload(annotations={}),
        workload(annotations={KCONTROL.enabled: "disabled", XING.enabled: "enabled"}, name="x"),
    )
    async with f.running():
        assert await f.process() == []
        assert f.patches() == []
        assert f.controller.catalog.workload_count == 0


async def test_opt_out_stops_restarts() -> None:
    f = Fixture(configmap("app", a="1"), secret("db", "s1"), workload())
    async with f.running():
        await f.process()
        d = await f.client.get(DEPLOYMENTS, "web", namespace="ns")
        d["metadata"]["annotations"][KCONTROL.enabled] = "no"
        await f.client.update(DEPLOYMENTS, d, namespace="ns")
        await f.settle()
        f.client.clear_actions()
        await f.update(CONFIGMAPS, configmap("app", a="2"))
        assert await f.process() == []
        assert f.patches() == []


async def test_xing_annotations_are_honoured() -> None:
    f = Fixture(
        configmap("app", a="1"), secret("db", "s1"), workload(annotations={XING.enabled: "enabled"})
    )
    async with f.running():
        await f.process()
        assert "configmap/ns/app" in await f.stored(family=XING)
        await f.update(CONFIGMAPS, configmap("app", a="2"))
        await f.process()
        assert await f.restarted_at(family=XING) is not None


async def test_a_stored_checksum_survives_the_controller() -> None:
    """The durable state: a new controller (nothing in memory) finds the stored checksum
    different from the config's and restarts; it would not without the annotation."""
    stale = KEY.config_checksum("configmap", configmap("app", a="old"))
    secret_sum = KEY.config_checksum("secret", secret("db", "s1"))
    stored = json.dumps({"configmap/ns/app": stale, "secret/ns/db": secret_sum})
    annotations = {KCONTROL.enabled: "enabled", KCONTROL.checksums: stored}
    f = Fixture(configmap("app", a="new"), secret("db", "s1"), workload(annotations=annotations))
    async with f.running():
        await f.process()
        assert await f.restarted_at() is not None
        assert f.recorder.events == ["Normal ConfigChanged Restarting: configmap/ns/app changed"]


async def test_foreign_checksums_are_adopted_without_restart() -> None:
    stored = json.dumps({"configmap/ns/app": "189832cc316e7594"})  # xing's format
    annotations = {XING.enabled: "enabled", XING.checksums: stored}
    f = Fixture(configmap("app", a="1"), secret("db", "s1"), workload(annotations=annotations))
    async with f.running():
        await f.process()
        assert await f.restarted_at(family=XING) is None
        assert KEY.is_own((await f.stored(family=XING))["configmap/ns/app"])


async def test_upgrade_from_legacy_checksums_restarts_nothing() -> None:
    """A workload annotated by a version whose checksums covered the data only: the first
    sync rewrites the annotation in the current format, without touching the pod template;
    later changes restart as usual."""
    legacy = {
        "configmap/ns/app": legacy_checksum("configmap", configmap("app", a="1")["data"]),
        "secret/ns/db": legacy_checksum("secret", secret("db", "s1")["data"]),
    }
    annotations = {KCONTROL.enabled: "enabled", KCONTROL.checksums: json.dumps(legacy)}
    f = Fixture(configmap("app", a="1"), secret("db", "s1"), workload(annotations=annotations))
    async with f.running():
        assert await f.process() == [W]
        (patch,) = f.patches()
        assert set(patch.patch) == {"metadata"}, "no restart: nothing under spec"
        assert await f.stored() == {
            "configmap/ns/app": KEY.config_checksum("configmap", configmap("app", a="1")),
            "secret/ns/db": KEY.config_checksum("secret", secret("db", "s1")),
        }
        assert f.metric("deployment_restarts_total") == 0 and f.recorder.events == []
        await f.process()
        assert len(f.patches()) == 1, "migrated once"
        await f.update(SECRETS, secret("db", "s2"))
        await f.process()
        assert await f.restarted_at() is not None
        assert f.recorder.events == ["Normal ConfigChanged Restarting: secret/ns/db changed"]


async def test_a_deeply_nested_annotation_is_overwritten_as_malformed() -> None:
    nested = "[" * 100_000 + "]" * 100_000
    annotations = {KCONTROL.enabled: "enabled", KCONTROL.checksums: nested}
    f = Fixture(configmap("app", a="1"), secret("db", "s1"), workload(annotations=annotations))
    async with f.running():
        assert await f.process() == [W]
        (patch,) = f.patches()
        assert set(patch.patch) == {"metadata"}, "no restart"
        assert await f.stored() == {
            "configmap/ns/app": KEY.config_checksum("configmap", configmap("app", a="1")),
            "secret/ns/db": KEY.config_checksum("secret", secret("db", "s1")),
        }


async def test_start_up_writes_a_workload_once_whichever_cache_syncs_last() -> None:
    """run(): the Secrets are listed well after the ConfigMaps and workloads, past a grace
    period. The workload is written once, with both checksums - not with the ConfigMap's
    first and the Secret's a grace period later."""
    f = Fixture(configmap("app", a="1"), secret("db", "s1"), workload())
    secrets_listed = asyncio.Event()

    async def slow_secrets(action: Action) -> None:
        await secrets_listed.wait()  # then the tracker answers

    f.client.prepend_reactor("list", SECRETS, slow_secrets)
    async with asyncio.TaskGroup() as tasks:
        runs = [tasks.create_task(f.informers.run()), tasks.create_task(f.controller.run())]
        await f.informers.wait_for_cache_sync()
        await f.controller.configmaps.wait_for_cache_sync()
        await f.settle()
        await f.advance(6.0)  # the ConfigMap's and the workload's first sight are due
        secrets_listed.set()
        await f.controller.secrets.wait_for_cache_sync()
        for _ in range(20):
            await f.advance(0.1)  # cache-sync polls, then change checks within the grace
        await f.advance(6.0)  # the Secret's first sight is due
        for _ in range(4):
            await f.advance(0.5)
        patches = f.patches()
        for run in runs:
            run.cancel()
    assert len(patches) == 1, [p.patch for p in patches]
    assert set(patches[0].patch) == {"metadata"}, "no restart"
    assert await f.stored() == {
        "configmap/ns/app": KEY.config_checksum("configmap", configmap("app", a="1")),
        "secret/ns/db": KEY.config_checksum("secret", secret("db", "s1")),
    }


async def test_statefulsets_and_daemonsets() -> None:
    objects = [configmap("app", a="1"), secret("db", "s1")]
    objects += [workload("StatefulSet", name="sts"), workload("DaemonSet", name="ds")]
    f = Fixture(*objects)
    async with f.running():
        assert await f.process() == ["daemonset/ns/ds", "statefulset/ns/sts"]
        await f.update(CONFIGMAPS, configmap("app", a="2"))
        await f.process()
        for resource, name in ((STATEFULSETS, "sts"), (DAEMONSETS, "ds")):
            obj = await f.client.get(resource, name, namespace="ns")
            assert KCONTROL.timestamp in obj["spec"]["template"]["metadata"]["annotations"]


async def test_ignored_errors_warn_other_errors_raise() -> None:
    def invalid(action: Action) -> None:
        raise Invalid("admission webhook denied the request: frozen")

    f = Fixture(configmap("app", a="1"), secret("db", "s1"), workload(), ignored=("frozen",))
    f.client.prepend_reactor("patch", DEPLOYMENTS, invalid)
    async with f.running():
        await f.process()  # no exception: ignored
    g = Fixture(configmap("app", a="1"), secret("db", "s1"), workload(), ignored=("other",))
    g.client.prepend_reactor("patch", DEPLOYMENTS, invalid)
    async with g.running():
        with pytest.raises(Invalid):
            await g.process()


# -- registration -------------------------------------------------------------------------


def _context(flags: dict[str, Any]) -> ControllerContext:
    client = FakeClient(resources=[STATEFULSETS, DAEMONSETS])
    return ControllerContext(
        client=client,
        informers=SharedInformerFactory(client),
        options=ManagerOptions(),
        registry=CollectorRegistry(),
        identity="test",
        recorder_factory=lambda component: FakeRecorder(),
        flags={flag.name: flag.default for flag in SPEC.flags} | flags,
    )


def test_spec_is_opt_in_and_registered() -> None:
    assert SPEC.name == NAME == "configrestart"
    assert not SPEC.enabled_by_default
    registry = ControllerRegistry.from_entry_points()
    assert NAME in registry
    assert NAME not in [spec.name for spec in registry.select(["*"])]
    assert NAME in [spec.name for spec in registry.select(["*", "configrestart"])]
    assert sorted(flag.name for flag in SPEC.flags) == [
        "configrestart-check-period",
        "configrestart-grace-period",
        "configrestart-hmac-key-file",
        "configrestart-ignored-errors",
    ]


def test_flags_parse() -> None:
    options, _ = parse_args(
        [
            "--configrestart-check-period=250ms",
            "--configrestart-grace-period=1m",
            "--configrestart-ignored-errors=denied;frozen, really{1,2}",
        ],
        SPEC.flags,
    )
    flags = options.controller_flags
    assert flags["configrestart-check-period"] == 0.25
    assert flags["configrestart-grace-period"] == 60.0
    assert [p.pattern for p in flags["configrestart-ignored-errors"]] == [
        "denied",
        "frozen, really{1,2}",
    ]


def test_factory_needs_the_key_file(tmp_path: Path) -> None:
    with pytest.raises(OptionsError, match="--configrestart-hmac-key-file is required"):
        new_controller(_context({}))
    key = tmp_path / "key"
    key.write_text("0123456789abcdef0123456789abcdef\n")
    ctx = _context({"configrestart-hmac-key-file": str(key)})
    controller = new_controller(ctx)
    assert isinstance(controller, ConfigRestartController)
    plurals = sorted(i.resource.plural for i in ctx.informers.informers())
    assert plurals == ["daemonsets", "deployments", "statefulsets"], (
        "ConfigMaps and Secrets are not in the shared factory"
    )
