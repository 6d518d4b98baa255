"""The example controller's sync, fixture style: seed the cache, sync a key, assert the API
actions it sent (the fake client records them) and the events it recorded."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from examples.configmap_annotator import ANNOTATION, LABEL_SELECTOR, SPEC, new_reconcile
from kcontrol.builder import Request
from kcontrol.client import CONFIGMAPS, PatchType
from kcontrol.controller import Result
from kcontrol.errors import Conflict, NotFound
from kcontrol.informers import SharedInformerFactory
from kcontrol.manager import ControllerContext, ManagerOptions
from kcontrol.testing import Action, FakeClient, FakeRecorder


def configmap(annotation: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": "cm",
        "namespace": "ns",
        "resourceVersion": "42",
        "labels": {"kcontrol.example/annotate": "true"},
    }
    if annotation is not None:
        metadata["annotations"] = {ANNOTATION: annotation, "other": "kept"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


class Fixture:
    """The builder-made controller of the example, wired on a fake client as the manager would
    (its factory called with a ControllerContext), with the cache seeded by hand."""

    def __init__(self, cached: dict[str, Any] | None) -> None:
        self.client = FakeClient([cached] if cached else [])
        self.recorder = FakeRecorder()
        self.informers = SharedInformerFactory(self.client)
        context = ControllerContext(
            client=self.client,
            informers=self.informers,
            options=ManagerOptions(),
            registry=CollectorRegistry(),
            identity="me",
            recorder_factory=lambda component: self.recorder,
        )
        self.controller = SPEC.factory(context)
        self.reconcile = new_reconcile(context)
        self.resource_version = ""
        if cached is not None:
            # cache what the server holds (the tracker assigns its own resourceVersion)
            stored = self.client.tracker.get(CONFIGMAPS, "cm", namespace="ns")
            self.resource_version = stored["metadata"]["resourceVersion"]
            (informer,) = self.informers.informers()
            informer.indexer.add(stored)

    async def sync(self, key: str) -> Result | None:
        return await self.reconcile(Request.from_key(key))

    def writes(self) -> list[Action]:
        return [a for a in self.client.actions if a.verb not in ("get", "list", "watch")]


def test_watches_only_labelled_configmaps() -> None:
    fixture = Fixture(None)
    (informer,) = fixture.informers.informers()
    assert informer.resource == CONFIGMAPS
    assert LABEL_SELECTOR == "kcontrol.example/annotate=true"
    # The factory hands out one informer per (resource, selectors): this is the labelled one.
    assert fixture.informers.for_resource(CONFIGMAPS, label_selector=LABEL_SELECTOR) is informer
    assert fixture.controller.name == "configmap-annotator"


@pytest.mark.parametrize("current", [None, "someone-else"], ids=["missing", "other-writer"])
async def test_writes_its_identity_with_a_guarded_merge_patch(current: str | None) -> None:
    fixture = Fixture(configmap(current))
    assert await fixture.sync("ns/cm") is None
    (patch,) = fixture.writes()
    assert (patch.verb, patch.namespace, patch.name) == ("patch", "ns", "cm")
    assert patch.patch_type == PatchType.MERGE
    assert patch.patch == {
        "metadata": {"resourceVersion": fixture.resource_version, "annotations": {ANNOTATION: "me"}}
    }
    assert fixture.recorder.events == ["Normal Annotated Marked as seen by me"]
    stored = fixture.client.tracker.get(CONFIGMAPS, "cm", namespace="ns")
    assert stored["metadata"]["annotations"][ANNOTATION] == "me"
    if current is not None:
        assert stored["metadata"]["annotations"]["other"] == "kept"


async def test_a_stale_cached_copy_gets_a_conflict_not_an_overwrite() -> None:
    fixture = Fixture(configmap())
    newer = fixture.client.tracker.get(CONFIGMAPS, "cm", namespace="ns")
    newer["metadata"]["annotations"] = {ANNOTATION: "someone-else"}
    fixture.client.tracker.add(newer)  # another writer; our cache still has the old copy
    assert await fixture.sync("ns/cm") == Result(requeue=True)
    stored = fixture.client.tracker.get(CONFIGMAPS, "cm", namespace="ns")
    assert stored["metadata"]["annotations"][ANNOTATION] == "someone-else"


async def test_already_annotated_by_us_sends_nothing() -> None:
    fixture = Fixture(configmap("me"))
    assert await fixture.sync("ns/cm") is None
    assert fixture.client.actions == []
    assert fixture.recorder.events == []


async def test_not_in_the_cache_is_done() -> None:
    fixture = Fixture(None)
    assert await fixture.sync("ns/gone") is None
    assert fixture.client.actions == []


async def test_stale_cache_conflict_requeues_without_an_event() -> None:
    fixture = Fixture(configmap())

    def conflict(action: Action) -> None:
        raise Conflict("the object has been modified")

    fixture.client.prepend_reactor("patch", CONFIGMAPS, conflict)
    assert await fixture.sync("ns/cm") == Result(requeue=True)
    assert fixture.recorder.events == []


async def test_deleted_meanwhile_is_done() -> None:
    fixture = Fixture(configmap())

    def gone(action: Action) -> None:
        raise NotFound("gone")

    fixture.client.prepend_reactor("patch", CONFIGMAPS, gone)
    assert await fixture.sync("ns/cm") is None
    assert fixture.recorder.events == []


async def test_other_errors_propagate_for_a_rate_limited_retry() -> None:
    fixture = Fixture(configmap())

    def broken(action: Action) -> None:
        raise RuntimeError("apiserver on fire")

    fixture.client.prepend_reactor("patch", CONFIGMAPS, broken)
    with pytest.raises(RuntimeError, match="on fire"):
        await fixture.sync("ns/cm")
