"""The whole collector on the fake client: monitors from a discovery function (ignored
resources left out, resources that appear and go away followed), the graph fed by them, and
the workers collecting; the factory's flags and the manager's sharding rule."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
from gc_fixtures import NS, obj, owner_ref, rc
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from kcontrol.client import CONFIGMAPS, EVENTS, REPLICATIONCONTROLLERS, Resource
from kcontrol.discovery import StaticRESTMapper
from kcontrol.errors import NotFound, OptionsError
from kcontrol.informers import SharedInformerFactory
from kcontrol.informers._fieldsets import list_item_decoder
from kcontrol.manager import ControllerContext, ControllerRegistry, ManagerOptions, main
from kcontrol.testing.fake import FakeClient, FakeRecorder
from kcontrol_controllers.garbagecollector import (
    SPEC,
    GarbageCollectorController,
    new_controller,
)
from kcontrol_controllers.garbagecollector._monitors import decode_graph_item, graph_metadata

WIDGETS = Resource("example.com", "v1", "widgets", "Widget")


@asynccontextmanager
async def running(
    client: FakeClient, served: Callable[[], list[Resource]]
) -> AsyncIterator[GarbageCollectorController]:
    async def discover() -> list[Resource]:
        return served()

    gc = GarbageCollectorController(
        client=client,
        mapper=StaticRESTMapper([CONFIGMAPS, REPLICATIONCONTROLLERS, EVENTS, WIDGETS]),
        discover=discover,
        recorder=FakeRecorder(),
        workers=2,
        resync_period=0.05,
    )
    task = asyncio.create_task(gc.run())
    try:
        yield gc
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def eventually(check: Callable[[], object], within: float = 5.0) -> None:
    async with asyncio.timeout(within):
        while True:
            try:
                if await check():  # type: ignore[misc]
                    return
            except NotFound:
                pass
            await asyncio.sleep(0.02)


async def gone(client: FakeClient, resource: Resource, name: str) -> bool:
    try:
        await client.get(resource, name, namespace=NS)
    except NotFound:
        return True
    return False


async def test_dependents_of_a_deleted_owner_are_collected_and_others_stay() -> None:
    client = FakeClient(
        [
            rc("owner"),
            obj("dependent", owners=[owner_ref("owner")]),
            obj("independent"),
            obj("orphan-from-start", owners=[owner_ref("never-existed")]),
        ]
    )
    async with running(client, lambda: [CONFIGMAPS, REPLICATIONCONTROLLERS, EVENTS]) as gc:
        await eventually(lambda: gone(client, CONFIGMAPS, "orphan-from-start"))
        assert not await gone(client, CONFIGMAPS, "dependent")
        await client.delete(REPLICATIONCONTROLLERS, "owner", namespace=NS)
        await eventually(lambda: gone(client, CONFIGMAPS, "dependent"))
        assert not await gone(client, CONFIGMAPS, "independent")
        assert EVENTS not in gc.monitors.resources()  # an ignored resource


async def test_monitors_are_synced_once_the_graph_has_every_listed_object() -> None:
    # Upstream's IsSynced: a monitor has synced once its handler took the initial list, so
    # the workers (started then) never compete with the graph for the start-up objects.
    listed = 1000  # well above a listener's delivery batch: it yields in between
    client = FakeClient([obj(f"cm-{i}") for i in range(listed)])
    async with running(client, lambda: [CONFIGMAPS, REPLICATIONCONTROLLERS]) as gc:
        handed: list[int] = []

        async def synced() -> bool:
            if gc.monitors.has_synced():
                handed.append(gc.builder.graph_changes.len() + len(gc.builder.uid_to_node))
                return True
            return False

        async with asyncio.timeout(5):
            # Every turn of the loop: the first one that sees it synced is the one checked.
            while not await synced():  # noqa: ASYNC110
                await asyncio.sleep(0)
        assert handed == [listed]


async def test_a_resource_that_appears_gets_a_monitor_and_loses_it_when_gone() -> None:
    client = FakeClient([rc("owner")], resources=[WIDGETS])
    served = [CONFIGMAPS, REPLICATIONCONTROLLERS]
    async with running(client, lambda: list(served)) as gc:

        async def has_monitor() -> bool:
            return WIDGETS in gc.monitors.resources() and gc.monitors.has_synced()

        served.append(WIDGETS)
        await eventually(has_monitor)
        widget = obj("w", kind="Widget", api_version="example.com/v1", owners=[owner_ref("x")])
        await client.create(WIDGETS, widget)
        await eventually(lambda: gone(client, WIDGETS, "w"))
        served.remove(WIDGETS)

        async def no_monitor() -> bool:
            return WIDGETS not in gc.monitors.resources() and client.open_watches(WIDGETS) == 0

        assert client.open_watches(WIDGETS) == 1
        await eventually(no_monitor)


def test_monitors_cache_only_what_the_graph_reads() -> None:
    full = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "a",
            "namespace": NS,
            "uid": "u",
            "resourceVersion": "7",
            "labels": {"x": "y"},
            "annotations": {"big": "z" * 100},
            "managedFields": [{"manager": "kubectl"}],
            "ownerReferences": [owner_ref("o")],
        },
    }
    kept = graph_metadata(full)
    refs = kept["metadata"].pop("ownerReferences")
    assert kept == {
        "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": NS, "uid": "u", "resourceVersion": "7"},
    }
    assert list(refs) == [owner_ref("o")]
    assert refs[0]["uid"] == "uid-o" and refs[0].get("blockOwnerDeletion") is None
    # A sibling carrying an equal reference shares it.
    sibling = graph_metadata(
        {"kind": "ConfigMap", "metadata": {"ownerReferences": [owner_ref("o")]}}
    )
    assert sibling["metadata"]["ownerReferences"][0] is refs[0]


@given(
    metadata=st.fixed_dictionaries(
        {},
        optional={
            "name": st.text(max_size=5),
            "namespace": st.text(max_size=5),
            "uid": st.text(max_size=5),
            "resourceVersion": st.text(max_size=5),
            "labels": st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
            "managedFields": st.just([{"manager": "m", "fieldsV1": {"f:a": {}}}]),
            "finalizers": st.lists(st.text(max_size=5), max_size=2),
            "deletionTimestamp": st.just("2026-11-29T00:00:00Z"),
            "ownerReferences": st.lists(
                st.fixed_dictionaries(
                    {"apiVersion": st.just("v1"), "kind": st.just("Pod"), "uid": st.text()},
                    optional={
                        "name": st.text(max_size=5),
                        "controller": st.booleans(),
                        "blockOwnerDeletion": st.booleans(),
                    },
                ),
                max_size=2,
            ),
        },
    ),
    odd=st.sampled_from([None, "refs-not-a-list", "uid-not-a-string", "metadata-null"]),
)
@settings(max_examples=150, deadline=None)
def test_the_list_item_decoder_caches_what_the_whole_decode_does(
    metadata: dict[str, Any], odd: str | None
) -> None:
    # The monitors' declared list-item decoder builds only what graph_metadata reads: the
    # cached object is the same as from a whole decode, odd shapes (which the API server
    # never sends) included - they fall back to the whole decode.
    item: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
    if odd == "refs-not-a-list":
        metadata["ownerReferences"] = "x"
    elif odd == "uid-not-a-string":
        metadata["uid"] = 7
    elif odd == "metadata-null":
        item["metadata"] = None
    data = orjson.dumps(item)
    assert list_item_decoder(graph_metadata) is decode_graph_item
    assert graph_metadata(decode_graph_item(data)) == graph_metadata(orjson.loads(data))
    with pytest.raises(ValueError):
        decode_graph_item(data[:-1])  # a candidate item end that is not one


def test_the_collector_cannot_run_sharded() -> None:
    registry = ControllerRegistry([SPEC])
    assert registry.select(["*", "garbage-collector-controller"], shards=1) == [SPEC]
    assert registry.select(["*"], shards=3) == []  # off by default: nothing refused
    with pytest.raises(OptionsError, match="garbage-collector-controller cannot run"):
        registry.select(["*", "garbage-collector-controller"], shards=3)


def test_the_spec_is_opt_in_with_upstreams_flags() -> None:
    assert not SPEC.enabled_by_default
    assert not SPEC.shardable
    flags = {f.name: f.default for f in SPEC.flags}
    assert flags == {"concurrent-gc-syncs": 20, "enable-garbage-collector": True}


def context(**flags: object) -> ControllerContext:
    client = FakeClient()
    return ControllerContext(
        client=client,
        informers=SharedInformerFactory(client),
        options=ManagerOptions(),
        registry=CollectorRegistry(),
        identity="test",
        recorder_factory=lambda _: FakeRecorder(),
        flags={"concurrent-gc-syncs": 20, "enable-garbage-collector": True, **flags},
    )


def test_enable_garbage_collector_false_leaves_nothing_to_run() -> None:
    assert new_controller(context(**{"enable-garbage-collector": False})) is None
    assert isinstance(new_controller(context()), GarbageCollectorController)


async def test_a_failed_discovery_is_counted_and_keeps_the_monitors() -> None:
    registry = CollectorRegistry()
    answers: list[list[Resource] | Exception] = [[CONFIGMAPS], RuntimeError("down")]

    async def discover() -> list[Resource]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    gc = GarbageCollectorController(
        client=FakeClient(),
        mapper=StaticRESTMapper(),
        discover=discover,
        recorder=FakeRecorder(),
        registry=registry,
    )
    await gc.monitors.resync()
    await gc.monitors.resync()
    assert gc.monitors.resources() == [CONFIGMAPS]
    total = registry.get_sample_value("garbagecollector_controller_resources_sync_error_total")
    assert total == 1.0
    names = {m.name for m in registry.collect()}
    assert "garbagecollector_controller_resources_sync_error" in names
    depth = "workqueue_depth"
    for queue in (
        "garbage_collector_attempt_to_delete",
        "garbage_collector_attempt_to_orphan",
        "garbage_collector_graph_changes",
    ):
        assert registry.get_sample_value(depth, {"name": queue}) == 0.0


def test_kcontrol_manager_refuses_the_collector_with_shards(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--controllers=*,garbage-collector-controller", "--shards=3"]
    assert main(argv, ControllerRegistry([SPEC])) == 2
    assert "garbage-collector-controller cannot run with --shards=3" in capsys.readouterr().err
