"""ApiClient.metadata_only against a local server: what it asks for, what it returns.

The server here plays both kinds of API server: one that answers the ``as=PartialObject...``
Accept with ``PartialObjectMetadata`` (kept as sent), and one that ignores it and sends whole
objects (reduced to the same shape on arrival, as client-go's metadata client does).
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from client_fakes import FakeApiServer, event_line, status_body

from kcontrol.client import (
    NAMESPACES,
    PODS,
    ApiClient,
    ListOptions,
    MetadataClient,
    Reader,
    WatchEvent,
)
from kcontrol.errors import Gone, NotFound

POD_PATH = "/api/v1/namespaces/ns/pods"
ACCEPT_OBJECT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
ACCEPT_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

METADATA = {
    "name": "a",
    "namespace": "ns",
    "uid": "u-1",
    "resourceVersion": "7",
    "labels": {"app": "web"},
    "finalizers": ["example.com/cleanup"],
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "r"}],
}


def partial(metadata: dict[str, Any]) -> dict[str, Any]:
    """A PartialObjectMetadata as the API server sends one."""
    return {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": metadata}


def whole_pod(metadata: dict[str, Any]) -> dict[str, Any]:
    """The whole object, as a server that ignores the ``as=`` parameter sends it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": "Pending"},
    }


def test_the_view_is_a_reader(client: ApiClient) -> None:
    def check(view: MetadataClient) -> Reader:
        return view  # mypy verifies the structural match

    assert isinstance(client.metadata_only(), MetadataClient)


# ---------------------------------------------------------------------- get


@pytest.mark.parametrize(
    "answer",
    [pytest.param(partial(METADATA), id="partial"), pytest.param(whole_pod(METADATA), id="whole")],
)
async def test_get_asks_for_partial_object_metadata(
    api: FakeApiServer, client: ApiClient, answer: dict[str, Any]
) -> None:
    api.respond("GET", f"{POD_PATH}/a", answer)
    obj = await client.metadata_only().get(PODS, "a", namespace="ns")
    assert api.requests[-1].headers["Accept"] == ACCEPT_OBJECT
    assert obj == partial(METADATA)


async def test_get_maps_errors_and_checks_the_name(api: FakeApiServer, client: ApiClient) -> None:
    api.respond("GET", f"{POD_PATH}/gone", status_body(404, "NotFound"), status=404)
    view = client.metadata_only()
    with pytest.raises(NotFound):
        await view.get(PODS, "gone", namespace="ns")
    with pytest.raises(ValueError, match="namespace"):
        await view.get(PODS, "a")
    with pytest.raises(ValueError, match="name"):
        await view.get(PODS, "", namespace="ns")


async def test_get_of_a_cluster_scoped_object(api: FakeApiServer, client: ApiClient) -> None:
    api.respond("GET", "/api/v1/namespaces/kube-system", partial({"name": "kube-system"}))
    obj = await client.metadata_only().get(NAMESPACES, "kube-system")
    assert obj["metadata"] == {"name": "kube-system"}


# ---------------------------------------------------------------------- list


def list_body(items: list[dict[str, Any]], *, partial_list: bool) -> dict[str, Any]:
    kind, api_version = ("PartialObjectMetadataList", "meta.k8s.io/v1")
    if not partial_list:
        kind, api_version = "PodList", "v1"
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"resourceVersion": "42", "continue": "next-page"},
        "items": items,
    }


@pytest.mark.parametrize("partial_list", [True, False], ids=["partial", "whole"])
async def test_list_asks_for_a_partial_object_metadata_list(
    api: FakeApiServer, client: ApiClient, partial_list: bool
) -> None:
    second = dict(METADATA, name="b", uid="u-2")
    if partial_list:
        items = [partial(METADATA), partial(second)]
    else:  # a whole list's items come without kind/apiVersion
        items = [{k: v for k, v in whole_pod(m).items() if k != "kind"} for m in (METADATA, second)]
    api.respond("GET", POD_PATH, list_body(items, partial_list=partial_list))
    seen: list[dict[str, Any]] = []

    def transform(item: dict[str, Any]) -> dict[str, Any]:
        seen.append(dict(item))
        return {**item, "transformed": True}

    page = await client.metadata_only().list(
        PODS,
        namespace="ns",
        options=ListOptions(label_selector="app=web", limit=2, resource_version="0"),
        transform=transform,
    )
    sent = api.requests[-1]
    assert sent.headers["Accept"] == ACCEPT_LIST
    assert sent.query == {"labelSelector": "app=web", "limit": "2", "resourceVersion": "0"}
    assert seen == [partial(METADATA), partial(second)], "transform sees the reduced item"
    assert page == {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadataList",
        "metadata": {"resourceVersion": "42", "continue": "next-page"},
        "items": [{**partial(m), "transformed": True} for m in (METADATA, second)],
    }


async def test_list_without_transform_keeps_the_servers_kind(
    api: FakeApiServer, client: ApiClient
) -> None:
    api.respond("GET", POD_PATH, list_body([partial(METADATA)], partial_list=True))
    page = await client.metadata_only().list(PODS, namespace="ns")
    # Not the resource's "Pod": the view gives what the server sent.
    assert page["items"] == [partial(METADATA)]


# ---------------------------------------------------------------------- watch


def stream(lines: list[bytes]) -> Any:
    """A watch handler that writes ``lines`` and ends the stream."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        for line in lines:
            await response.write(line)
        await response.write_eof()
        return response

    return handler


async def collect(client: ApiClient, options: ListOptions | None = None) -> list[WatchEvent]:
    async with client.metadata_only().watch(PODS, namespace="ns", options=options) as events:
        return [event async for event in events]


async def test_watch_asks_for_partial_object_metadata(
    api: FakeApiServer, client: ApiClient
) -> None:
    modified = dict(METADATA, resourceVersion="8", labels={"app": "db"})
    bookmark = {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}}
    api.route(
        "GET",
        POD_PATH,
        stream(
            [
                event_line("ADDED", partial(METADATA)),
                event_line("MODIFIED", whole_pod(modified)),  # a server without the as= support
                event_line("BOOKMARK", bookmark),
                event_line("DELETED", partial(modified)),
            ]
        ),
    )
    events = await collect(client, ListOptions(resource_version="7", timeout_seconds=30))
    sent = api.requests[-1]
    assert sent.headers["Accept"] == ACCEPT_OBJECT
    assert sent.query == {
        "watch": "true",
        "resourceVersion": "7",
        "timeoutSeconds": "30",
        "allowWatchBookmarks": "true",
    }
    assert events == [
        WatchEvent("ADDED", partial(METADATA)),
        WatchEvent("MODIFIED", partial(modified)),
        WatchEvent("BOOKMARK", partial({"resourceVersion": "9"})),
        WatchEvent("DELETED", partial(modified)),
    ]


async def test_watch_error_event_raises(api: FakeApiServer, client: ApiClient) -> None:
    api.route(
        "GET",
        POD_PATH,
        stream(
            [
                event_line("ADDED", partial(METADATA)),
                event_line("ERROR", status_body(410, "Expired", "too old resource version")),
            ]
        ),
    )
    received: list[WatchEvent] = []
    with pytest.raises(Gone):
        async with client.metadata_only().watch(PODS, namespace="ns") as events:
            async for event in events:
                received.append(event)
    assert received == [WatchEvent("ADDED", partial(METADATA))]


# ---------------------------------------------------------------------- the client below


async def test_the_view_leaves_its_client_alone_and_shares_its_identity(
    api: FakeApiServer, client: ApiClient
) -> None:
    component = client.for_component("owner-controller", qps=0, burst=0)
    await component.metadata_only().get(PODS, "a", namespace="ns")
    await client.get(PODS, "a", namespace="ns")
    await client.list(PODS, namespace="ns")
    via_view, plain_get, plain_list = api.requests[-3:]
    assert via_view.headers["User-Agent"] == component.user_agent
    assert via_view.headers["Authorization"] == "Bearer s3cret"
    assert plain_get.headers["Accept"] == "application/json"
    assert plain_list.headers["Accept"] == "application/json"
