"""Streaming list, paged relists and resync against the real apiserver, not a fake.

- Streaming list (``ReflectorOptions(use_watch_list=True)``): the informer syncs from one
  watch with ``sendInitialEvents=true`` - no LIST at all - announces the objects as the
  initial list, then keeps following changes on that stream.
- Paging: a relist at a pinned resourceVersion with an explicit page size is served page by
  page (continue tokens) from the watch cache, at exactly that version (a paged LIST at a
  resourceVersion is an exact read); nothing unchanged is announced, and the changes made
  meanwhile arrive from the watch that resumes at that version.
- Resync: a handler with a 1 s resync period gets ``update(obj, obj)`` for every cached
  object again and again, without a single request to the server; a handler without one
  gets none.
"""

from __future__ import annotations

from collections import Counter

from kcontrol.client import CONFIGMAPS
from kcontrol.envtest import ControlPlane
from kcontrol.informers import (
    DeletedFinalStateUnknown,
    ReflectorOptions,
    SharedIndexInformer,
)

from .helpers import (
    Recorder,
    configmap,
    is_list,
    is_watch,
    key_of,
    new_client,
    new_proxy,
    poll,
    running,
    rv_of,
    wait_converged,
)


async def test_streaming_list_syncs_without_a_list_and_keeps_watching(
    control_plane: ControlPlane, namespace: str
) -> None:
    async with (
        new_client(control_plane) as writer,
        new_proxy(control_plane) as proxy,
        new_client(control_plane, proxy.host) as informer_client,
    ):
        for index in range(30):
            await writer.create(CONFIGMAPS, configmap(f"cm-{index}", namespace, v="0"))
        informer = SharedIndexInformer(
            informer_client,
            CONFIGMAPS,
            namespace=namespace,
            reflector_options=ReflectorOptions(use_watch_list=True),
        )
        recorder = Recorder()
        informer.add_event_handler(recorder)
        errors: list[Exception] = []
        informer.set_watch_error_handler(errors.append)

        async with running(informer):
            assert len(informer.indexer) == 30
            await writer.patch(CONFIGMAPS, "cm-0", {"data": {"v": "1"}}, namespace=namespace)
            await writer.delete(CONFIGMAPS, "cm-1", namespace=namespace)
            await writer.create(CONFIGMAPS, configmap("new", namespace, v="0"))
            await wait_converged(informer, writer, recorder, within=20, namespace=namespace)

        assert errors == []
        assert proxy.count(is_list) == 0, "the initial state came from the stream"
        [stream] = [r for r in proxy.requests if is_watch(r)]
        assert stream.query.get("sendInitialEvents") == "true"
        assert stream.query.get("resourceVersionMatch") == "NotOlderThan"
        assert sorted(recorder.initial_adds) == sorted(
            f"{namespace}/cm-{index}" for index in range(30)
        )
        assert [key_of(obj) for obj in recorder.of_kind("add")][30:] == [f"{namespace}/new"]
        assert [key_of(obj) for obj in recorder.of_kind("update")] == [f"{namespace}/cm-0"]
        [deleted] = recorder.of_kind("delete")
        assert not isinstance(deleted, DeletedFinalStateUnknown), "seen on the stream"


async def test_paged_relist_from_the_watch_cache(
    control_plane: ControlPlane, namespace: str
) -> None:
    async with (
        new_client(control_plane) as writer,
        new_proxy(control_plane) as proxy,
        new_client(control_plane, proxy.host) as informer_client,
    ):
        for index in range(30):
            await writer.create(CONFIGMAPS, configmap(f"cm-{index}", namespace, v="0"))
        informer = SharedIndexInformer(
            informer_client,
            CONFIGMAPS,
            namespace=namespace,
            reflector_options=ReflectorOptions(page_size=7),
        )
        recorder = Recorder()
        informer.add_event_handler(recorder)

        async with running(informer) as (task,):
            synced_rv = informer.last_sync_resource_version
            await poll(lambda: proxy.count(is_watch) == 1, within=10, message="no watch")
            mark = len(proxy.requests)
            proxy.blackhole()  # changes the informer will only learn from the relist
            await writer.delete(CONFIGMAPS, "cm-0", namespace=namespace)
            await writer.delete(CONFIGMAPS, "cm-1", namespace=namespace)
            await writer.patch(CONFIGMAPS, "cm-2", {"data": {"v": "1"}}, namespace=namespace)
            await writer.create(CONFIGMAPS, configmap("new", namespace, v="0"))
            proxy.inject(410, match=lambda request: request.query.get("watch") == "true")
            await proxy.drop_connections()
            proxy.restore()
            await wait_converged(informer, writer, recorder, within=30, namespace=namespace)
            assert not task.done()

        relist = [r for r in proxy.requests[mark:] if is_list(r)]
        assert len(relist) == 5, [r.query for r in relist]  # 30 objects, 7 per page
        assert relist[0].query["resourceVersion"] == synced_rv
        assert relist[0].query["limit"] == "7"
        assert all("continue" in r.query for r in relist[1:])
        assert all(r.answered_by == "upstream" for r in relist)
        # A paged LIST at a resourceVersion is served at exactly that version: the relist
        # brought back the state the informer had, every object unchanged, and the watch
        # resumed from there delivered the changes made in the gap.
        rewatch = [r for r in proxy.requests[mark:] if is_watch(r)][-1]
        assert rewatch.query["resourceVersion"] == synced_rv
        assert [key_of(obj) for obj in recorder.of_kind("update")] == [f"{namespace}/cm-2"], (
            "the 30 unchanged objects of the relist produce no update"
        )
        deleted = recorder.of_kind("delete")
        assert sorted(key_of(obj) for obj in deleted) == [f"{namespace}/cm-{i}" for i in (0, 1)]
        assert not any(isinstance(obj, DeletedFinalStateUnknown) for obj in deleted)
        assert [key_of(obj) for obj in recorder.of_kind("add")][30:] == [f"{namespace}/new"]


async def test_resync_redelivers_the_cache_without_asking_the_server(
    control_plane: ControlPlane, namespace: str
) -> None:
    async with (
        new_client(control_plane) as writer,
        new_proxy(control_plane) as proxy,
        new_client(control_plane, proxy.host) as informer_client,
    ):
        for index in range(5):
            await writer.create(CONFIGMAPS, configmap(f"cm-{index}", namespace, v="0"))
        informer = SharedIndexInformer(informer_client, CONFIGMAPS, namespace=namespace)
        resyncing, quiet = Recorder(), Recorder()
        informer.add_event_handler(resyncing, resync_period=1.0)
        informer.add_event_handler(quiet)

        async with running(informer):
            await poll(lambda: proxy.count(is_watch) == 1, within=10, message="no watch")
            requests = len(proxy.requests)

            def resyncs() -> Counter[str]:
                updates = resyncing.of_kind("update")
                return Counter(key_of(obj) for obj in updates)

            await poll(
                lambda: len(resyncs()) == 5 and min(resyncs().values()) >= 3,
                within=30,
                message=lambda: f"resyncs so far: {resyncs()}",
            )
            assert len(proxy.requests) == requests, "resync is served from the cache"

        cached = {key_of(obj): rv_of(obj) for obj in resyncing.of_kind("add")}
        assert all(rv_of(obj) == cached[key_of(obj)] for obj in resyncing.of_kind("update"))
        assert quiet.of_kind("update") == [], "a handler without a resync period gets none"
