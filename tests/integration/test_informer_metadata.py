"""Metadata-only informers against a real apiserver: PartialObjectMetadata lists and watches.

- the apiserver answers the client's Accept header with ``PartialObjectMetadataList`` /
  ``PartialObjectMetadata`` (checked on the raw body, so the client's own reduction of whole
  objects - its fallback - cannot pass for it);
- a metadata-only informer of ConfigMaps and of Pods caches ``apiVersion``/``kind`` (the
  resource's) and ``metadata`` only - no ``data``, ``spec`` or ``status`` - with labels,
  annotations, ownerReferences, finalizers and resourceVersion as a GET of the whole object
  shows them; it gets adds, updates and deletes;
- a 410 on its watch makes it relist and converge, as the full informer does;
- the factory shares it between callers, apart from the full informer of the same collection.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from aiohttp import web

from kcontrol.client import CONFIGMAPS, PODS, Object
from kcontrol.envtest import ControlPlane
from kcontrol.informers import ReflectorOptions, SharedInformerFactory

from .helpers import (
    Recorder,
    configmap,
    is_list,
    is_watch,
    new_client,
    new_proxy,
    poll,
    running,
    wait_converged,
)

pytestmark = pytest.mark.integration

ACCEPT_OBJECT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
ACCEPT_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
OWNER = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "name": "web",
    "uid": "7a3c5f0e-1111-4222-8333-444455556666",
    "controller": True,
    "blockOwnerDeletion": True,
}


def owned_configmap(name: str, namespace: str, **data: str) -> Object:
    obj = configmap(name, namespace, {"app": "web"}, **data)
    obj["metadata"].update(
        annotations={"example.com/note": "kept"},
        finalizers=["example.com/cleanup"],
        ownerReferences=[OWNER],
    )
    return obj


def pod(name: str, namespace: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": "web"},
            "ownerReferences": [OWNER],
        },
        "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
    }


def assert_metadata_of(cached: Object, whole: Object) -> None:
    """``cached`` is ``whole`` reduced to its type and metadata: every field of
    ``metadata`` (labels, annotations, ownerReferences, finalizers, resourceVersion, uid,
    managedFields, ...) as the GET of the whole object shows it."""
    assert set(cached) == {"apiVersion", "kind", "metadata"}, sorted(cached)
    assert (cached["apiVersion"], cached["kind"]) == (whole["apiVersion"], whole["kind"])
    assert cached["metadata"] == whole["metadata"]


async def raw_get(plane: ControlPlane, path: str, accept: str) -> Any:
    """GET ``path`` with ``accept``, decoded as the server sent it (no kcontrol client)."""
    headers = {"Authorization": f"Bearer {plane.token()}", "Accept": accept}
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=plane.ssl_context())) as session,
        session.get(plane.host + path, headers=headers) as response,
    ):
        assert response.status == 200, await response.text()
        return await response.json()


async def test_the_apiserver_answers_with_partial_object_metadata(
    control_plane: ControlPlane, namespace: str
) -> None:
    async with new_client(control_plane) as client:
        whole = await client.create(CONFIGMAPS, owned_configmap("cm", namespace, big="x" * 4096))
        path = CONFIGMAPS.path(namespace)
        raw_list = await raw_get(control_plane, path, ACCEPT_LIST)
        raw_object = await raw_get(control_plane, f"{path}/cm", ACCEPT_OBJECT)
        page = await client.metadata_only().list(CONFIGMAPS, namespace=namespace)
        obj = await client.metadata_only().get(CONFIGMAPS, "cm", namespace=namespace)
    assert (raw_list["apiVersion"], raw_list["kind"]) == (
        "meta.k8s.io/v1",
        "PartialObjectMetadataList",
    )
    [raw_item] = raw_list["items"]
    assert set(raw_item) == {"apiVersion", "kind", "metadata"}
    assert raw_item["kind"] == raw_object["kind"] == "PartialObjectMetadata"
    assert "data" not in raw_object
    # The client's view keeps the server's kind.
    [item] = page["items"]
    for partial in (item, obj):
        assert (partial["apiVersion"], partial["kind"]) == (
            "meta.k8s.io/v1",
            "PartialObjectMetadata",
        )
        assert partial["metadata"]["resourceVersion"] == whole["metadata"]["resourceVersion"]


async def test_configmaps_cache_metadata_only_and_get_every_change(
    control_plane: ControlPlane, namespace: str
) -> None:
    async with new_client(control_plane) as client:
        await client.create(CONFIGMAPS, owned_configmap("before", namespace, big="x" * 4096))
        factory = SharedInformerFactory(client, namespace=namespace)
        informer = factory.for_resource(CONFIGMAPS, metadata_only=True)
        assert factory.for_resource(CONFIGMAPS, metadata_only=True) is informer
        full = factory.for_resource(CONFIGMAPS)
        assert full is not informer
        recorder = Recorder()
        informer.add_event_handler(recorder)

        async with running(informer, full):
            await client.create(CONFIGMAPS, owned_configmap("after", namespace, v="1"))
            labelled = {"metadata": {"labels": {"app": "db"}}}
            await client.patch(CONFIGMAPS, "before", labelled, namespace=namespace)
            await client.patch(CONFIGMAPS, "after", {"data": {"v": "2"}}, namespace=namespace)
            released = {"metadata": {"finalizers": None}}
            await client.patch(CONFIGMAPS, "after", released, namespace=namespace)
            await client.delete(CONFIGMAPS, "after", namespace=namespace)
            await wait_converged(informer, client, recorder, within=15, namespace=namespace)

            whole = await client.get(CONFIGMAPS, "before", namespace=namespace)
            [cached] = informer.indexer.list()
            assert_metadata_of(cached, whole)
            assert cached["metadata"]["labels"] == {"app": "db"}
            assert cached["metadata"]["finalizers"] == ["example.com/cleanup"]
            [full_cached] = full.indexer.list()
            assert full_cached["data"] == {"big": "x" * 4096}, "the full informer keeps data"
            # What the handler got up to here; the clean-up patch below may or may not be
            # delivered before the informer stops.
            names = [(kind, obj["metadata"]["name"]) for kind, obj in recorder.events]

            await client.patch(CONFIGMAPS, "before", released, namespace=namespace)

    assert names == [
        ("add", "before"),
        ("add", "after"),
        ("update", "before"),
        ("update", "after"),
        ("update", "after"),
        ("delete", "after"),
    ]
    for _, obj in recorder.events:
        assert set(obj) == {"apiVersion", "kind", "metadata"}, obj
        assert (obj["apiVersion"], obj["kind"]) == ("v1", "ConfigMap")
    assert recorder.events[1][1]["metadata"]["ownerReferences"] == [OWNER]


async def test_pods_cache_metadata_only(control_plane: ControlPlane, namespace: str) -> None:
    async with new_client(control_plane) as client:
        for i in range(3):
            await client.create(PODS, pod(f"p{i}", namespace))
        factory = SharedInformerFactory(client, namespace=namespace)
        lister = factory.lister(PODS, metadata_only=True)
        async with running(factory.for_resource(PODS, metadata_only=True)):
            await client.create(PODS, pod("p3", namespace))
            await poll(lambda: len(lister.list()) == 4, within=15, message="no add of p3")
            for name in ("p0", "p3"):
                whole = await client.get(PODS, name, namespace=namespace)
                assert "spec" in whole and "status" in whole
                assert_metadata_of(lister.get(namespace, name), whole)


def metadata_watch(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return request.query.get("watch") == "true" and "as=PartialObjectMetadata;" in accept


async def test_a_410_on_the_watch_relists_and_converges(
    control_plane: ControlPlane, namespace: str
) -> None:
    async with (
        new_client(control_plane) as writer,
        new_proxy(control_plane) as proxy,
        new_client(control_plane, proxy.host) as informer_client,
    ):
        await writer.create(CONFIGMAPS, configmap("cm-0", namespace, v="0"))
        await writer.create(CONFIGMAPS, configmap("cm-1", namespace, v="1"))
        factory = SharedInformerFactory(
            informer_client,
            namespace=namespace,
            # The server ends each watch after 2-3 s: the next one meets the injection.
            reflector_options=ReflectorOptions(min_watch_timeout=2),
        )
        informer = factory.for_resource(CONFIGMAPS, metadata_only=True)
        recorder = Recorder()
        informer.add_event_handler(recorder)
        async with running(informer):
            synced_rv = int(informer.last_sync_resource_version)
            mark = len(proxy.requests)
            proxy.inject(410, match=metadata_watch)
            await writer.delete(CONFIGMAPS, "cm-0", namespace=namespace)
            await writer.patch(CONFIGMAPS, "cm-1", {"data": {"v": "2"}}, namespace=namespace)
            await writer.create(CONFIGMAPS, configmap("cm-2", namespace, v="2"))
            await poll(
                lambda: any(is_list(r) for r in proxy.requests[mark:]),
                within=15,
                message="no LIST after the 410 on a watch",
            )
            seen = proxy.requests[mark:]
            assert next(r for r in seen if is_watch(r)).answered_by == "injected:410"
            relist = next(r for r in seen if is_list(r))
            assert int(relist.query["resourceVersion"]) >= synced_rv
            await wait_converged(informer, writer, recorder, within=15, namespace=namespace)
        for obj in informer.indexer.list():
            assert set(obj) == {"apiVersion", "kind", "metadata"}
    names = sorted(obj["metadata"]["name"] for obj in informer.indexer.list())
    assert names == ["cm-1", "cm-2"]
