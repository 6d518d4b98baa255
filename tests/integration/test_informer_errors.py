"""410 Gone and 429 Too Many Requests, injected by a fault proxy in front of a real apiserver.

- 410 on a watch: the reflector relists, from its last synced version (a LIST at that version
  answers with data at least that fresh); 410 on that LIST: it lists again with no version at
  all (a quorum read).
- A storm of 429s on watches: no relist, every retry waits at least the ``Retry-After``, the
  request count stays bounded, and the informer converges afterwards.
- 429 "storage is (re)initializing" on the first LISTs: the informer backs off and syncs once
  the apiserver answers.

The ``Retry-After`` (3 s) is far above the informers' own backoff here (0.1 s doubling,
capped at 1 s), so a reflector or client that ignored it would retry far sooner and fail.
"""

from __future__ import annotations

from aiohttp import web

from kcontrol.client import CONFIGMAPS
from kcontrol.envtest import ControlPlane
from kcontrol.errors import TooManyRequests
from kcontrol.informers import ReflectorOptions, SharedIndexInformer

from .helpers import (
    Recorder,
    configmap,
    gaps,
    is_list,
    is_watch,
    new_client,
    new_proxy,
    poll,
    running,
    wait_converged,
)

RETRY_AFTER = 3


def watch_request(request: web.Request) -> bool:
    return request.query.get("watch") == "true"


def list_request(request: web.Request) -> bool:
    return request.method == "GET" and "watch" not in request.query


def pinned_list_request(request: web.Request) -> bool:
    """A LIST at a specific resourceVersion (not "" and not "0")."""
    return list_request(request) and request.query.get("resourceVersion", "") not in ("", "0")


async def test_410_on_watch_relists_and_410_on_list_relists_from_scratch(
    control_plane: ControlPlane, namespace: str
) -> None:
    async with (
        new_client(control_plane) as writer,
        new_proxy(control_plane) as proxy,
        new_client(control_plane, proxy.host) as informer_client,
    ):
        await writer.create(CONFIGMAPS, configmap("cm-0", namespace, v="0"))
        informer = SharedIndexInformer(
            informer_client,
            CONFIGMAPS,
            namespace=namespace,
            # The server ends each watch after 2-3 s: the next one meets the injection.
            reflector_options=ReflectorOptions(min_watch_timeout=2),
        )
        recorder = Recorder()
        informer.add_event_handler(recorder)

        async with running(informer) as (task,):
            [first_list] = [r for r in proxy.requests if is_list(r)]
            assert first_list.query.get("resourceVersion") == "0"

            # 1. 410 on the next watch -> a LIST at the last synced version.
            mark = len(proxy.requests)
            synced_rv = int(informer.last_sync_resource_version)
            proxy.inject(410, match=watch_request)
            await writer.create(CONFIGMAPS, configmap("cm-1", namespace, v="1"))
            await poll(
                lambda: any(is_list(r) for r in proxy.requests[mark:]),
                within=15,
                message="no LIST after the 410 on a watch",
            )
            seen = proxy.requests[mark:]
            first_watch = next(r for r in seen if is_watch(r))
            assert first_watch.answered_by == "injected:410"
            relist = next(r for r in seen if is_list(r))
            assert relist.answered_by == "upstream"
            relist_rv = relist.query.get("resourceVersion", "")
            assert relist_rv not in ("", "0"), relist.query
            assert int(relist_rv) >= synced_rv
            await wait_converged(informer, writer, recorder, within=15, namespace=namespace)

            # 2. 410 on that relist too -> the LIST is retried with no resourceVersion.
            mark = len(proxy.requests)
            proxy.inject(410, match=pinned_list_request)
            proxy.inject(410, match=watch_request)
            await writer.delete(CONFIGMAPS, "cm-0", namespace=namespace)
            await poll(
                lambda: sum(is_list(r) for r in proxy.requests[mark:]) >= 2,
                within=15,
                message="no second LIST after the 410 on a pinned LIST",
            )
            lists = [r for r in proxy.requests[mark:] if is_list(r)]
            assert lists[0].answered_by == "injected:410"
            assert lists[0].query.get("resourceVersion", "") not in ("", "0")
            assert lists[1].answered_by == "upstream"
            assert lists[1].query.get("resourceVersion", "") == "", lists[1].query
            await wait_converged(informer, writer, recorder, within=15, namespace=namespace)
            # After the quorum relist the reflector watches from that list's version again.
            await poll(
                lambda: any(
                    is_watch(r) and r.answered_by == "upstream" for r in proxy.requests[mark:]
                ),
                within=10,
                message="no watch after the relist",
            )
            assert not task.done()

        assert proxy.count(is_list) == 4  # the initial list, then 1 + 2 relists
        assert [obj["metadata"]["name"] for obj in recorder.of_kind("add")] == ["cm-0", "cm-1"]
        assert recorder.of_kind("update") == [], "relists of unchanged objects announce nothing"


QUICK_BACKOFF = ReflectorOptions(backoff_initial=0.1, backoff_cap=1.0)
"""Informers of the 429 tests back off from 0.1 s (capped at 1 s) instead of 0.8 s (30 s):
any wait of more than a second is the server's ``Retry-After`` at work."""


async def test_429_storm_on_watch_backs_off_without_relisting(
    control_plane: ControlPlane, namespace: str
) -> None:
    storm = 3
    async with (
        new_client(control_plane) as writer,
        new_proxy(control_plane) as proxy,
        # The client's own Retry-After retries are off: this is the reflector's handling.
        new_client(control_plane, proxy.host, max_retries=0) as informer_client,
    ):
        for index in range(3):
            await writer.create(CONFIGMAPS, configmap(f"cm-{index}", namespace, v="0"))
        informer = SharedIndexInformer(
            informer_client, CONFIGMAPS, namespace=namespace, reflector_options=QUICK_BACKOFF
        )
        recorder = Recorder()
        informer.add_event_handler(recorder)
        errors: list[Exception] = []
        informer.set_watch_error_handler(errors.append)
        proxy.inject(429, match=watch_request, times=storm, retry_after=RETRY_AFTER)

        async with running(informer) as (task,):
            await poll(
                lambda: any(is_watch(r) and r.answered_by == "upstream" for r in proxy.requests),
                within=storm * (RETRY_AFTER + 1) + 5,
                message=lambda: f"no watch got through: {proxy.requests}",
            )
            # Changes made after the storm arrive through the watch.
            await writer.delete(CONFIGMAPS, "cm-0", namespace=namespace)
            await writer.patch(CONFIGMAPS, "cm-1", {"data": {"v": "1"}}, namespace=namespace)
            await writer.create(CONFIGMAPS, configmap("new", namespace, v="0"))
            expected = await wait_converged(
                informer, writer, recorder, within=10, namespace=namespace
            )
            assert not task.done()

        assert set(expected) == {f"{namespace}/{n}" for n in ("cm-1", "cm-2", "new")}
        watches = [r for r in proxy.requests if is_watch(r)]
        assert [r.answered_by for r in watches[: storm + 1]] == [
            *["injected:429"] * storm,
            "upstream",
        ]
        # Retry-After honoured between consecutive attempts (small clock tolerance); the
        # backoff alone would have retried within a second.
        waits = gaps([r.at for r in watches[: storm + 1]])
        assert all(wait >= RETRY_AFTER - 0.05 for wait in waits), waits
        assert max(waits) < RETRY_AFTER + 2, waits  # ...and nothing much longer
        # No relist, and a bounded number of requests overall.
        assert proxy.count(is_list) == 1
        assert len(proxy.requests) < 15, proxy.requests
        assert sum(isinstance(e, TooManyRequests) for e in errors) == storm
        # The deletion came from the watch: the object's final state, not a tombstone.
        [deleted] = recorder.of_kind("delete")
        assert deleted["metadata"]["name"] == "cm-0"
        assert [obj["metadata"]["name"] for obj in recorder.of_kind("update")] == ["cm-1"]


async def test_storage_initializing_429_on_first_list_backs_off_then_syncs(
    control_plane: ControlPlane, namespace: str
) -> None:
    refusals = 2
    async with (
        new_client(control_plane) as writer,
        new_proxy(control_plane) as proxy,
        new_client(control_plane, proxy.host, max_retries=0) as informer_client,
    ):
        await writer.create(CONFIGMAPS, configmap("cm-0", namespace, v="0"))
        proxy.inject(
            429,
            match=list_request,
            times=refusals,
            retry_after=RETRY_AFTER,
            message="storage is (re)initializing",
        )
        informer = SharedIndexInformer(
            informer_client, CONFIGMAPS, namespace=namespace, reflector_options=QUICK_BACKOFF
        )
        errors: list[Exception] = []
        informer.set_watch_error_handler(errors.append)

        async with running(informer, sync=False) as (task,):
            await poll(informer.has_synced, within=30, message="never synced")
            assert not task.done()
            assert [obj["metadata"]["name"] for obj in informer.indexer.list()] == ["cm-0"]
            await poll(
                lambda: any(is_watch(r) for r in proxy.requests),
                within=5,
                message="no watch after the list",
            )

        lists = [r for r in proxy.requests if is_list(r)]
        assert [r.answered_by for r in lists] == [*["injected:429"] * refusals, "upstream"]
        assert all(wait >= RETRY_AFTER - 0.05 for wait in gaps([r.at for r in lists]))
        # The first LIST's version rule is kept across the retries.
        assert all(r.query.get("resourceVersion") == "0" for r in lists)
        assert len(errors) == refusals
        assert all(isinstance(e, TooManyRequests) and "initializing" in e.message for e in errors)


async def test_client_retries_429_with_retry_after_through_the_proxy(
    control_plane: ControlPlane, namespace: str
) -> None:
    """With its defaults the client itself waits out a short 429 storm, as client-go's rest
    client does: the caller sees one successful call."""
    async with (
        new_client(control_plane) as writer,
        new_proxy(control_plane) as proxy,
        new_client(control_plane, proxy.host) as client,
    ):
        await writer.create(CONFIGMAPS, configmap("cm-0", namespace, v="0"))
        proxy.inject(429, match=list_request, times=2, retry_after=RETRY_AFTER)
        page = await client.list(CONFIGMAPS, namespace=namespace)
        assert [item["metadata"]["name"] for item in page["items"]] == ["cm-0"]
        lists = [r for r in proxy.requests if is_list(r)]
        assert [r.answered_by for r in lists] == ["injected:429", "injected:429", "upstream"]
        assert all(wait >= RETRY_AFTER - 0.05 for wait in gaps([r.at for r in lists]))
