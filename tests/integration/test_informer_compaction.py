"""410 Gone produced by the real apiserver, through etcd compaction - not injected.

A private control plane compacts etcd every second (``--etcd-compaction-interval=1s``) and
serves watches and LISTs straight from etcd (``--watch-cache=false``; the watch cache keeps
its own window of events, whatever etcd compacted). Then:

- a watch from a compacted resourceVersion is accepted (HTTP 200) and then ended by an
  in-stream ``ERROR`` event carrying a 410 ``Expired`` Status - the answer a reflector
  resuming an old watch gets, and not the HTTP 410 a proxy injects;
- an informer cut off while objects change, whose resourceVersion is compacted meanwhile,
  meets exactly that when it re-watches: it relists, sends tombstones for what vanished,
  adds for what appeared, updates for what changed and nothing for what did not;
- a paged LIST whose continue token outlives compaction is answered with an HTTP 410 by
  the server; the reflector lists again in one piece at the same version.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from kcontrol.client import CONFIGMAPS, ApiClient, ListOptions, Object, Resource, WatchEvent
from kcontrol.envtest import ControlPlane
from kcontrol.errors import Gone
from kcontrol.informers import (
    DeletedFinalStateUnknown,
    IndexedStore,
    Reflector,
    ReflectorOptions,
    SharedIndexInformer,
)

from .helpers import (
    Recorder,
    configmap,
    is_list,
    is_watch,
    namespaces,
    new_client,
    new_proxy,
    poll,
    running,
    wait_converged,
)

pytestmark = pytest.mark.integration

COMPACTION_WAIT = 45.0
"""Seconds allowed for etcd compaction to pass a resourceVersion (it runs every second)."""


@pytest.fixture(scope="module")
def compacting_plane() -> Iterator[ControlPlane]:
    plane = ControlPlane(
        extra_apiserver_args=["--etcd-compaction-interval=1s", "--watch-cache=false"]
    )
    asyncio.run(plane.start())
    try:
        yield plane
    finally:
        plane.stop()


async def watch_answer(client: ApiClient, namespace: str, resource_version: str) -> str:
    """How the server answers a watch from ``resource_version``: ``"events"``, or
    ``"in-stream 410"`` (HTTP 200, then an ERROR event), or ``"HTTP 410"`` (refused)."""
    try:
        async with client.watch(
            CONFIGMAPS,
            namespace=namespace,
            options=ListOptions(resource_version=resource_version, timeout_seconds=2),
        ) as events:
            try:
                async for _ in events:
                    return "events"
            except Gone:
                return "in-stream 410"
            return "events"  # no event within the timeout: nothing to replay, not compacted
    except Gone:
        return "HTTP 410"


async def wait_compacted(client: ApiClient, namespace: str, resource_version: str) -> str:
    """Write (so revisions advance) until a watch from ``resource_version`` is refused;
    returns how it was refused."""
    answers: list[str] = []
    await client.create(CONFIGMAPS, configmap("ticker", namespace, n="0"))

    async def compacted() -> bool:
        patch = {"data": {"n": str(len(answers))}}
        await client.patch(CONFIGMAPS, "ticker", patch, namespace=namespace)
        answers.append(await watch_answer(client, namespace, resource_version))
        return answers[-1] != "events"

    await poll(
        compacted,
        within=COMPACTION_WAIT,
        interval=0.5,
        message=f"resourceVersion {resource_version} never compacted",
    )
    return answers[-1]


async def test_a_watch_at_a_compacted_version_ends_with_an_in_stream_410(
    compacting_plane: ControlPlane,
) -> None:
    async with (
        new_client(compacting_plane) as client,
        namespaces(client, 1) as (namespace,),
    ):
        created = await client.create(CONFIGMAPS, configmap("cm", namespace, v="0"))
        old = created["metadata"]["resourceVersion"]
        assert await watch_answer(client, namespace, old) == "events", "not compacted yet"
        answer = await wait_compacted(client, namespace, old)
    assert answer == "in-stream 410"


async def test_informer_relists_after_the_servers_own_410(
    compacting_plane: ControlPlane,
) -> None:
    async with (
        new_client(compacting_plane) as writer,
        namespaces(writer, 1) as (namespace,),
        new_proxy(compacting_plane) as proxy,
        new_client(compacting_plane, proxy.host) as informer_client,
    ):
        for index in range(5):
            await writer.create(CONFIGMAPS, configmap(f"cm-{index}", namespace, v="0"))
        informer = SharedIndexInformer(informer_client, CONFIGMAPS, namespace=namespace)
        recorder = Recorder()
        informer.add_event_handler(recorder)
        errors: list[Exception] = []
        informer.set_watch_error_handler(errors.append)

        async with running(informer) as (task,):
            last_known = {
                f"{namespace}/{name}": informer.indexer.get_by_key(f"{namespace}/{name}")
                for name in ("cm-0", "cm-1")
            }
            synced_rv = informer.last_sync_resource_version
            lists_before = proxy.count(is_list)
            await poll(lambda: proxy.count(is_watch) == 1, within=10, message="no watch")

            proxy.blackhole()  # the informer hears nothing of what follows
            await writer.delete(CONFIGMAPS, "cm-0", namespace=namespace)
            await writer.delete(CONFIGMAPS, "cm-1", namespace=namespace)
            await writer.patch(CONFIGMAPS, "cm-2", {"data": {"v": "1"}}, namespace=namespace)
            await writer.create(CONFIGMAPS, configmap("new-0", namespace, v="0"))
            assert await wait_compacted(writer, namespace, synced_rv) == "in-stream 410"
            mark = len(proxy.requests)
            await proxy.drop_connections()  # its stream breaks; it re-watches from synced_rv
            proxy.restore()

            await poll(
                lambda: proxy.count(is_list) > lists_before,
                within=30,
                message=lambda: f"no relist; errors: {errors}",
            )
            await wait_converged(informer, writer, recorder, within=30, namespace=namespace)
            assert not task.done()

        assert any(isinstance(e, Gone) for e in errors), errors
        after = proxy.requests[mark:]
        assert all(r.answered_by == "upstream" for r in after), "nothing was injected"
        first_watch = next(r for r in after if is_watch(r))
        assert first_watch.query["resourceVersion"] == synced_rv
        assert proxy.count(is_list) == lists_before + 1

        tombstones = recorder.of_kind("delete")
        assert all(isinstance(t, DeletedFinalStateUnknown) for t in tombstones), tombstones
        assert {t.key: t.obj for t in tombstones} == last_known
        updated = [obj["metadata"]["name"] for obj in recorder.of_kind("update")]
        assert updated == ["cm-2"], "unchanged objects produce no update"
        added = [obj["metadata"]["name"] for obj in recorder.of_kind("add")]
        assert sorted(added) == sorted(["cm-0", "cm-1", "cm-2", "cm-3", "cm-4", "new-0", "ticker"])


class PausingReader:
    """A Reader over a real client that, before a LIST with a continue token, lets ``pause``
    run (to let compaction pass the list's version). Records each LIST's parameters and
    whether it raised."""

    def __init__(self, client: ApiClient, pause: Any) -> None:
        self._client = client
        self._pause = pause
        self.lists: list[tuple[dict[str, Any], str]] = []

    async def get(self, resource: Resource, name: str, **params: Any) -> Object:
        return await self._client.get(resource, name, **params)

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
        transform: Callable[[Object], Object] | None = None,
    ) -> Object:
        options = options or ListOptions()
        if options.continue_:
            await self._pause(options.continue_)
        shown = {"namespace": namespace, **dataclasses.asdict(options)}
        try:
            result = await self._client.list(
                resource, namespace=namespace, options=options, transform=transform
            )
        except Exception as err:
            self.lists.append((shown, type(err).__name__))
            raise
        self.lists.append((shown, "ok"))
        return result

    def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[WatchEvent]]:
        return self._client.watch(resource, namespace=namespace, options=options)


async def test_expired_continue_token_lists_again_in_one_piece(
    compacting_plane: ControlPlane,
) -> None:
    async with (
        new_client(compacting_plane) as client,
        namespaces(client, 1) as (namespace,),
    ):
        for index in range(12):
            await client.create(CONFIGMAPS, configmap(f"cm-{index}", namespace, v="0"))
        first_page = await client.list(
            CONFIGMAPS, namespace=namespace, options=ListOptions(limit=5)
        )
        list_rv = first_page["metadata"]["resourceVersion"]

        async def until_token_expired(token: str) -> None:
            if any(outcome == "Gone" for _, outcome in reader.lists):
                return
            await wait_compacted(client, namespace, list_rv)
            with pytest.raises(Gone):  # the server itself refuses the token now
                await client.list(
                    CONFIGMAPS, namespace=namespace, options=ListOptions(limit=5, continue_=token)
                )

        reader = PausingReader(client, until_token_expired)
        store = IndexedStore()
        reflector = Reflector(
            reader,
            CONFIGMAPS,
            _Store(store),
            namespace=namespace,
            options=ReflectorOptions(page_size=5),
        )
        async with asyncio.TaskGroup() as group:
            task = group.create_task(reflector.run())
            await poll(
                lambda: bool(reflector.last_sync_resource_version),
                within=COMPACTION_WAIT + 15,
                message=lambda: f"never synced; lists: {reader.lists}",
            )
            task.cancel()

        calls = [
            (params.get("resource_version"), bool(params.get("continue_")), params.get("limit"))
            for params, _ in reader.lists
        ]
        outcomes = [outcome for _, outcome in reader.lists]
        assert calls == [("0", False, 5), (None, True, 5), ("0", False, None)], reader.lists
        assert outcomes == ["ok", "Gone", "ok"]
        names = sorted(obj["metadata"]["name"] for obj in store.list())
        assert names == sorted([*(f"cm-{i}" for i in range(12)), "ticker"])


class _Store:
    """The ReflectorStore of a bare reflector: an IndexedStore."""

    def __init__(self, store: IndexedStore) -> None:
        self.store = store

    def add(self, obj: Object) -> None:
        self.store.add(obj)

    def update(self, obj: Object) -> None:
        self.store.update(obj)

    def delete(self, obj: Object) -> None:
        self.store.delete(obj)

    async def replace(self, items: list[Object], resource_version: str) -> None:
        self.store.replace(items, resource_version)
