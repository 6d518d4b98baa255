"""The informer's cache equals a fresh LIST after thousands of concurrent writes.

A cluster-wide ConfigMap informer (restricted by a label to this test's objects) starts on
more than 500 objects spread over three namespaces, then watches while 20 writers perform
2,000 creates, patches and deletes between them, re-creating deleted names now and then.
Once the writes are over, the cache and the state folded from the handler's notifications
must both equal a fresh quorum LIST - same keys, same resourceVersions - and each object's
notifications must come in server order, none twice. Nothing fails along the way, so every
write produced exactly one notification: one add per create (the first LIST's flagged as
initial), one update per patch, one delete per delete.

It runs twice: on the session's apiserver, whose watch cache answers the first LIST in one
piece, and on a private one without the watch cache, where that LIST comes from etcd in
pages of 500.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Iterator

import pytest

from kcontrol.client import CONFIGMAPS, ApiClient, ListOptions
from kcontrol.envtest import ControlPlane
from kcontrol.informers import DeletedFinalStateUnknown, SharedIndexInformer

from .helpers import (
    Recorder,
    configmap,
    is_list,
    namespaces,
    new_client,
    new_proxy,
    poll,
    running,
    wait_converged,
)

WRITERS = 20
OPS_PER_WRITER = 100
SEED_PER_WRITER = 26  # 520 objects before the informer starts: more than one page of 500
REUSE = 0.5
"""Chance that a create re-uses a name its writer deleted earlier."""


@pytest.fixture(scope="module", params=["watch cache", "no watch cache"])
def plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """The session's apiserver, or a private one without the watch cache (there a LIST at
    "0" is paged from etcd)."""
    if request.param == "watch cache":
        yield request.getfixturevalue("control_plane")
        return
    private = ControlPlane(extra_apiserver_args=["--watch-cache=false"])
    asyncio.run(private.start())
    try:
        yield private
    finally:
        private.stop()


class Writer:
    """One of the concurrent writers: owns its objects, so writers never conflict."""

    def __init__(
        self, client: ApiClient, index: int, spaces: list[str], labels: dict[str, str]
    ) -> None:
        self.client = client
        self.index = index
        self.spaces = spaces
        self.labels = labels
        self.rng = random.Random(index)
        self.live: list[tuple[str, str]] = []  # (namespace, name) of its existing objects
        self.deleted: list[tuple[str, str]] = []  # deleted, not re-created (yet)
        self.names = 0
        self.creates = self.patches = self.deletes = self.reuses = 0

    async def create(self) -> None:
        if self.deleted and self.rng.random() < REUSE:
            namespace, name = self.deleted.pop(self.rng.randrange(len(self.deleted)))
            self.reuses += 1
        else:
            namespace = self.spaces[self.names % len(self.spaces)]
            name = f"w{self.index}-{self.names}"
            self.names += 1
        await self.client.create(CONFIGMAPS, configmap(name, namespace, self.labels, counter="0"))
        self.live.append((namespace, name))
        self.creates += 1

    async def run(self, ops: int) -> None:
        for step in range(ops):
            roll = self.rng.random()
            if not self.live or roll < 0.4:
                await self.create()
                continue
            namespace, name = self.rng.choice(self.live)
            if roll < 0.8:
                patch = {"data": {"counter": str(step + 1)}}  # always a change
                await self.client.patch(CONFIGMAPS, name, patch, namespace=namespace)
                self.patches += 1
            else:
                await self.client.delete(CONFIGMAPS, name, namespace=namespace)
                self.live.remove((namespace, name))
                self.deleted.append((namespace, name))
                self.deletes += 1

    async def seed(self, count: int) -> None:
        for _ in range(count):
            await self.create()

    async def delete_all(self) -> None:
        for namespace, name in self.live:
            await self.client.delete(CONFIGMAPS, name, namespace=namespace)


@pytest.mark.integration
async def test_cache_equals_list_after_thousands_of_writes(plane: ControlPlane) -> None:
    paged = "--watch-cache=false" in plane.extra_apiserver_args
    run_id = uuid.uuid4().hex[:8]
    labels = {"kcontrol-fault-test": run_id}
    selector = f"kcontrol-fault-test={run_id}"
    async with (
        new_client(plane) as writer_client,
        new_proxy(plane) as proxy,
        new_client(plane, proxy.host) as informer_client,
        namespaces(writer_client, 3) as spaces,
    ):
        writers = [Writer(writer_client, i, spaces, labels) for i in range(WRITERS)]
        async with asyncio.TaskGroup() as group:  # objects that exist before the informer
            for writer in writers:
                group.create_task(writer.seed(SEED_PER_WRITER))
        seeded = WRITERS * SEED_PER_WRITER

        async def cache_has_the_seed() -> bool:
            # The informer's first LIST asks for "0": whatever the watch cache holds, which may
            # lag the last seed write by a moment. The test is about what follows, so start
            # once that cache has every seeded object (a LIST at "0" answers from it).
            listed = await writer_client.list(
                CONFIGMAPS, options=ListOptions(label_selector=selector, resource_version="0")
            )
            return len(listed["items"]) == seeded

        await poll(cache_has_the_seed, within=30, message="the seed never reached the cache")
        informer = SharedIndexInformer(
            informer_client, CONFIGMAPS, list_options=ListOptions(label_selector=selector)
        )
        recorder = Recorder()
        informer.add_event_handler(recorder)
        errors: list[Exception] = []
        informer.set_watch_error_handler(errors.append)
        async with running(informer):
            assert len(informer.indexer) == seeded
            first_list = [r for r in proxy.requests if is_list(r)]
            async with asyncio.TaskGroup() as group:  # WRITERS requests in flight
                for writer in writers:
                    group.create_task(writer.run(OPS_PER_WRITER))

            expected = await wait_converged(
                informer, writer_client, recorder, within=60, label_selector=selector
            )

        if paged:
            assert len(first_list) == 2, [r.query for r in first_list]  # 500 + 20
            assert "continue" in first_list[1].query
        else:
            assert len(first_list) == 1, [r.query for r in first_list]
        assert errors == [], "a healthy apiserver: no watch failed, nothing was relisted"
        assert proxy.count(is_list) == len(first_list)

        creates = sum(writer.creates for writer in writers)
        patches = sum(writer.patches for writer in writers)
        deletes = sum(writer.deletes for writer in writers)
        assert creates + patches + deletes == WRITERS * (SEED_PER_WRITER + OPS_PER_WRITER)
        assert sum(writer.reuses for writer in writers) > 0, "some names were re-used"
        live = {f"{ns}/{name}" for writer in writers for ns, name in writer.live}
        assert set(expected) == live
        assert {key.split("/")[0] for key in expected} == set(spaces)

        # Exactly one notification per write, of the write's kind.
        assert len(recorder.initial_adds) == seeded
        assert len(recorder.of_kind("add")) == creates
        assert len(recorder.of_kind("update")) == patches
        assert len(recorder.of_kind("delete")) == deletes
        assert len(recorder.events) == creates + patches + deletes
        assert not any(isinstance(d, DeletedFinalStateUnknown) for d in recorder.of_kind("delete"))
        # Per object, notifications in server order and none twice (re-created names too).
        for key, versions in recorder.history.items():
            assert versions == sorted(set(versions)), f"{key}: out of order {versions}"

        # Leave the apiserver as small as it was (no namespace controller runs).
        async with asyncio.TaskGroup() as group:
            for writer in writers:
                group.create_task(writer.delete_all())
