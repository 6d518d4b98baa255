"""The informer's cache equals a fresh LIST after thousands of concurrent writes.

A cluster-wide ConfigMap informer (restricted by a label to this test's objects) watches three
namespaces while 20 writers perform 2,000 creates, patches and deletes between them. Once the
writes are over, the cache and the state folded from the handler's notifications must both
equal a fresh quorum LIST - same keys, same resourceVersions - and each object's notifications
must come in server order, none twice.
"""

from __future__ import annotations

import asyncio
import random
import uuid

from kcontrol.client import CONFIGMAPS, ApiClient
from kcontrol.informers import SharedIndexInformer
from kcontrol.testing.envtest import ControlPlane

from .helpers import Recorder, configmap, namespaces, new_client, running, wait_converged

WRITERS = 20
OPS_PER_WRITER = 100
SEED_PER_WRITER = 3


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
        self.created = 0
        self.ops = 0

    async def create(self) -> None:
        namespace = self.spaces[self.created % len(self.spaces)]
        name = f"w{self.index}-{self.created}"
        self.created += 1
        await self.client.create(CONFIGMAPS, configmap(name, namespace, self.labels, counter="0"))
        self.live.append((namespace, name))
        self.ops += 1

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
            else:
                await self.client.delete(CONFIGMAPS, name, namespace=namespace)
                self.live.remove((namespace, name))
            self.ops += 1

    async def delete_all(self) -> None:
        for namespace, name in self.live:
            await self.client.delete(CONFIGMAPS, name, namespace=namespace)


async def test_cache_equals_list_after_thousands_of_writes(control_plane: ControlPlane) -> None:
    run_id = uuid.uuid4().hex[:8]
    labels = {"kcontrol-fault-test": run_id}
    selector = f"kcontrol-fault-test={run_id}"
    async with (
        new_client(control_plane) as writer_client,
        new_client(control_plane) as informer_client,
        namespaces(writer_client, 3) as spaces,
    ):
        writers = [Writer(writer_client, i, spaces, labels) for i in range(WRITERS)]
        for writer in writers:  # some objects exist before the informer starts
            for _ in range(SEED_PER_WRITER):
                await writer.create()

        informer = SharedIndexInformer(informer_client, CONFIGMAPS, label_selector=selector)
        recorder = Recorder()
        informer.add_event_handler(recorder)
        errors: list[Exception] = []
        informer.set_watch_error_handler(errors.append)
        async with running(informer):
            assert len(informer.indexer) == WRITERS * SEED_PER_WRITER
            async with asyncio.TaskGroup() as group:  # WRITERS requests in flight
                for writer in writers:
                    group.create_task(writer.run(OPS_PER_WRITER))

            expected = await wait_converged(
                informer, writer_client, recorder, within=30, label_selector=selector
            )

        total_ops = sum(writer.ops for writer in writers)
        assert total_ops == WRITERS * (SEED_PER_WRITER + OPS_PER_WRITER)
        live = {f"{ns}/{name}" for writer in writers for ns, name in writer.live}
        assert set(expected) == live
        assert {key.split("/")[0] for key in expected} == set(spaces)
        # Per object, notifications in server order and none twice.
        for key, versions in recorder.history.items():
            assert versions == sorted(set(versions)), f"{key}: out of order {versions}"
        if not errors:  # no relist: exactly one notification per write
            assert len(recorder.events) == total_ops

        # Leave the shared apiserver as small as it was (no namespace controller runs).
        async with asyncio.TaskGroup() as group:
            for writer in writers:
                group.create_task(writer.delete_all())
