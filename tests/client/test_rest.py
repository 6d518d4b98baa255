"""ApiClient against a local aiohttp server: requests sent, answers decoded, failures mapped."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
from aiohttp import web
from client_fakes import FakeApiServer, json_response, status_body
from prometheus_client import CollectorRegistry

from kcontrol.client import (
    DEPLOYMENTS,
    NAMESPACES,
    PODS,
    ApiClient,
    Client,
    ClientConfig,
    ListOptions,
    PatchType,
    StaticTokenAuth,
)
from kcontrol.client._http import HttpProtocolError
from kcontrol.clock import FakeClock
from kcontrol.errors import (
    AlreadyExists,
    ApiConnectionError,
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    InternalError,
    Invalid,
    NotFound,
    ServiceUnavailable,
    TooManyRequests,
    Unauthorized,
)

pytestmark = pytest.mark.both_loops  # kcontrol-manager runs on uvloop

POD_PATH = "/api/v1/namespaces/ns/pods"


def pod(name: str, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}, **extra}


def test_api_client_satisfies_the_client_protocol() -> None:
    def check(c: ApiClient) -> Client:
        return c  # mypy verifies the structural match

    assert check is not None


# ---------------------------------------------------------------------- reads


async def test_get_sends_user_agent_and_token(api: FakeApiServer, client: ApiClient) -> None:
    api.respond("GET", f"{POD_PATH}/a", {"kind": "Pod", "metadata": {"name": "a"}})
    assert await client.get(PODS, "a", namespace="ns") == {"kind": "Pod", "metadata": {"name": "a"}}
    sent = api.requests[-1]
    assert sent.headers["Authorization"] == "Bearer s3cret"
    assert sent.headers["User-Agent"].startswith("kcontrol/")
    assert sent.headers["Accept"] == "application/json"


async def test_gzip_is_asked_for_unless_disabled(
    api: FakeApiServer, registry: CollectorRegistry
) -> None:
    async def empty_watch(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write_eof()
        return response

    api.route("GET", "/api/v1/namespaces", empty_watch)
    async with ApiClient(ClientConfig(host=api.url), qps=0, registry=registry) as c:
        await c.get(NAMESPACES, "default")
        async with c.watch(NAMESPACES, options=ListOptions(timeout_seconds=1)) as events:
            async for _ in events:
                pass
    assert ["gzip" in r.headers.get("Accept-Encoding", "") for r in api.requests] == [True] * 2

    config = ClientConfig(host=api.url, disable_compression=True)
    async with ApiClient(config, qps=0, registry=registry) as c:
        await c.get(NAMESPACES, "default")
        async with c.watch(NAMESPACES, options=ListOptions(timeout_seconds=1)) as events:
            async for _ in events:
                pass
    assert [r.headers.get("Accept-Encoding") for r in api.requests[2:]] == ["identity"] * 2


async def test_custom_user_agent(api: FakeApiServer, registry: CollectorRegistry) -> None:
    async with ApiClient(
        ClientConfig(host=api.url), qps=0, user_agent="my-controller/1.2", registry=registry
    ) as c:
        await c.get(NAMESPACES, "default")
    assert api.requests[-1].headers["User-Agent"] == "my-controller/1.2"
    assert "Authorization" not in api.requests[-1].headers
    assert api.requests[-1].path == "/api/v1/namespaces/default"


async def test_get_subresource_and_group_paths(api: FakeApiServer, client: ApiClient) -> None:
    echo = await client.get(DEPLOYMENTS, "web", namespace="ns", subresource="scale")
    assert echo["path"] == "/apis/apps/v1/namespaces/ns/deployments/web/scale"


async def test_namespaced_get_without_namespace_is_rejected(client: ApiClient) -> None:
    with pytest.raises(ValueError, match="namespace"):
        await client.get(PODS, "a")


async def test_list_sends_query_parameters(api: FakeApiServer, client: ApiClient) -> None:
    await client.list(
        PODS,
        namespace="ns",
        options=ListOptions(
            label_selector="app=web,tier!=db",
            field_selector="spec.nodeName=n1",
            resource_version="0",
            resource_version_match="NotOlderThan",
            limit=50,
            continue_="tok",
        ),
    )
    sent = api.requests[-1]
    assert sent.path == POD_PATH
    assert sent.query == {
        "labelSelector": "app=web,tier!=db",
        "fieldSelector": "spec.nodeName=n1",
        "resourceVersion": "0",
        "resourceVersionMatch": "NotOlderThan",
        "limit": "50",
        "continue": "tok",
    }


async def test_list_across_namespaces_fills_item_type_meta(
    api: FakeApiServer, client: ApiClient
) -> None:
    api.respond(
        "GET",
        "/api/v1/pods",
        {
            "kind": "PodList",
            "metadata": {"resourceVersion": "7"},
            "items": [pod("a"), {"kind": "Pod", "apiVersion": "v1", **pod("b")}],
        },
    )
    result = await client.list(PODS)
    assert [(i["apiVersion"], i["kind"]) for i in result["items"]] == [("v1", "Pod")] * 2
    assert result["metadata"]["resourceVersion"] == "7"


def paged_handler(api: FakeApiServer, total: int, expire_after: int | None = None) -> None:
    """LIST of ``total`` pods honouring limit/continue; the continue token after
    ``expire_after`` pages answers 410."""
    pods = [pod(f"p{i}") for i in range(total)]

    async def handler(request: web.Request) -> web.StreamResponse:
        limit = int(request.query.get("limit", "0"))
        start = int(request.query.get("continue", "0"))
        if expire_after is not None and start >= expire_after:
            return json_response(status_body(410, "Expired", "continue token expired"), 410)
        end = start + limit if limit else total
        meta: dict[str, Any] = {"resourceVersion": "100"}
        if end < total:
            meta["continue"] = str(end)
            meta["remainingItemCount"] = total - end
        return json_response({"kind": "PodList", "metadata": meta, "items": pods[start:end]})

    api.route("GET", POD_PATH, handler)


async def test_list_all_follows_continue(api: FakeApiServer, client: ApiClient) -> None:
    paged_handler(api, total=5)
    items, rv = await client.list_all(
        PODS,
        namespace="ns",
        options=ListOptions(label_selector="a=b", resource_version="0"),
        page_size=2,
    )
    assert [i["metadata"]["name"] for i in items] == [f"p{i}" for i in range(5)]
    assert all(i["kind"] == "Pod" for i in items)
    assert rv == "100"
    queries = [r.query for r in api.requests]
    assert queries == [
        {"labelSelector": "a=b", "resourceVersion": "0", "limit": "2"},
        {"labelSelector": "a=b", "limit": "2", "continue": "2"},
        {"labelSelector": "a=b", "limit": "2", "continue": "4"},
    ]


async def test_list_all_default_page_size(api: FakeApiServer, client: ApiClient) -> None:
    paged_handler(api, total=3)
    items, _ = await client.list_all(PODS, namespace="ns")
    assert len(items) == 3
    assert api.requests[0].query == {"limit": "500"}


async def test_list_all_relists_unpaged_when_continue_expires(
    api: FakeApiServer, client: ApiClient
) -> None:
    paged_handler(api, total=5, expire_after=2)
    items, rv = await client.list_all(PODS, namespace="ns", page_size=2)
    assert [i["metadata"]["name"] for i in items] == [f"p{i}" for i in range(5)]
    assert rv == "100"
    assert [r.query for r in api.requests] == [{"limit": "2"}, {"limit": "2", "continue": "2"}, {}]


async def test_list_all_first_page_gone_propagates(api: FakeApiServer, client: ApiClient) -> None:
    api.respond("GET", POD_PATH, status_body(410, "Expired"), status=410)
    with pytest.raises(Gone):
        await client.list_all(PODS, namespace="ns", options=ListOptions(resource_version="5"))


@pytest.mark.parametrize("options", [ListOptions(limit=10), ListOptions(continue_="tok")])
async def test_list_all_pages_by_itself(
    api: FakeApiServer, client: ApiClient, options: ListOptions
) -> None:
    with pytest.raises(ValueError, match="page_size"):
        await client.list_all(PODS, namespace="ns", options=options)
    assert api.requests == []


# ---------------------------------------------------------------------- writes


async def test_create_uses_the_object_namespace(api: FakeApiServer, client: ApiClient) -> None:
    echo = await client.create(PODS, pod("a", spec={"x": 1}))
    assert (echo["method"], echo["path"]) == ("POST", POD_PATH)
    assert echo["body"] == pod("a", spec={"x": 1})
    assert echo["contentType"] == "application/json"
    echo = await client.create(PODS, {"metadata": {"name": "b"}}, namespace="other")
    assert echo["path"] == "/api/v1/namespaces/other/pods"


async def test_create_namespaced_without_namespace_is_rejected(client: ApiClient) -> None:
    with pytest.raises(ValueError, match="namespace"):
        await client.create(PODS, {"metadata": {"name": "a"}})


async def test_create_cluster_scoped(client: ApiClient) -> None:
    echo = await client.create(NAMESPACES, {"metadata": {"name": "n", "namespace": "ignored"}})
    assert echo["path"] == "/api/v1/namespaces"


async def test_update_and_update_status(client: ApiClient) -> None:
    obj = pod("a", status={"phase": "Running"})
    obj["metadata"]["resourceVersion"] = "12"
    echo = await client.update(PODS, obj)
    assert (echo["method"], echo["path"], echo["body"]) == ("PUT", f"{POD_PATH}/a", obj)
    echo = await client.update_status(PODS, obj)
    assert (echo["method"], echo["path"]) == ("PUT", f"{POD_PATH}/a/status")
    with pytest.raises(ValueError, match=r"metadata\.name"):
        await client.update(PODS, {"metadata": {"namespace": "ns"}})


@pytest.mark.parametrize(
    ("patch_type", "patch", "content_type"),
    [
        (PatchType.MERGE, {"metadata": {"labels": {"a": "b"}}}, "application/merge-patch+json"),
        (
            PatchType.STRATEGIC,
            {"spec": {"containers": [{"name": "c", "image": "i"}]}},
            "application/strategic-merge-patch+json",
        ),
        (
            PatchType.JSON,
            [{"op": "replace", "path": "/spec/replicas", "value": 3}],
            "application/json-patch+json",
        ),
    ],
    ids=["merge", "strategic", "json"],
)
async def test_patch_content_types(
    client: ApiClient, patch_type: PatchType, patch: Any, content_type: str
) -> None:
    echo = await client.patch(PODS, "a", patch, namespace="ns", patch_type=patch_type)
    assert (echo["method"], echo["path"]) == ("PATCH", f"{POD_PATH}/a")
    assert echo["contentType"] == content_type
    assert echo["body"] == patch
    assert echo["query"] == {}


async def test_patch_status_subresource_with_bytes(client: ApiClient) -> None:
    echo = await client.patch(
        PODS, "a", b'{"status":{"phase":"Failed"}}', namespace="ns", subresource="status"
    )
    assert echo["path"] == f"{POD_PATH}/a/status"
    assert echo["body"] == {"status": {"phase": "Failed"}}


async def test_apply_patch(client: ApiClient) -> None:
    cfg = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "labels": {"x": "y"}}}
    echo = await client.patch(
        PODS,
        "a",
        cfg,
        namespace="ns",
        patch_type=PatchType.APPLY,
        field_manager="kcontrol-test",
        force=True,
    )
    assert echo["contentType"] == "application/apply-patch+yaml"
    assert echo["body"] == cfg
    assert echo["query"] == {"fieldManager": "kcontrol-test", "force": "true"}


async def test_apply_patch_requires_field_manager(api: FakeApiServer, client: ApiClient) -> None:
    with pytest.raises(ValueError, match="field_manager"):
        await client.patch(PODS, "a", {}, namespace="ns", patch_type=PatchType.APPLY)
    assert api.requests == []


async def test_delete_with_options(api: FakeApiServer, client: ApiClient) -> None:
    echo = await client.delete(
        PODS,
        "a",
        namespace="ns",
        preconditions={"uid": "u-1", "resourceVersion": "9"},
        propagation_policy="Foreground",
        grace_period_seconds=0,
    )
    assert (echo["method"], echo["path"]) == ("DELETE", f"{POD_PATH}/a")
    assert echo["contentType"] == "application/json"
    assert echo["body"] == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "preconditions": {"uid": "u-1", "resourceVersion": "9"},
        "propagationPolicy": "Foreground",
        "gracePeriodSeconds": 0,
    }


async def test_delete_without_options_has_no_body(api: FakeApiServer, client: ApiClient) -> None:
    echo = await client.delete(NAMESPACES, "gone")
    assert echo["body"] is None
    assert api.requests[-1].body == b""


# ---------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("code", "body", "headers", "error", "retry_after"),
    [
        pytest.param(404, status_body(404, "NotFound"), None, NotFound, None, id="404"),
        pytest.param(409, status_body(409, "Conflict"), None, Conflict, None, id="409-conflict"),
        pytest.param(409, status_body(409, "AlreadyExists"), None, AlreadyExists, None, id="409"),
        pytest.param(410, status_body(410, "Expired"), None, Gone, None, id="410"),
        pytest.param(422, status_body(422, "Invalid"), None, Invalid, None, id="422"),
        pytest.param(
            429,
            status_body(429, "TooManyRequests", details={"retryAfterSeconds": 1}),
            {"Retry-After": "3"},
            TooManyRequests,
            3.0,
            id="429-header",
        ),
        pytest.param(
            429,
            status_body(429, "TooManyRequests", details={"retryAfterSeconds": 2}),
            None,
            TooManyRequests,
            2.0,
            id="429-details",
        ),
        pytest.param(403, status_body(403, "Forbidden"), None, Forbidden, None, id="403"),
        pytest.param(401, status_body(401, "Unauthorized"), None, Unauthorized, None, id="401"),
        pytest.param(500, status_body(500, "InternalError"), None, InternalError, None, id="500"),
        pytest.param(
            503,
            b"<html>upstream down</html>",
            {"Retry-After": "junk"},
            ServiceUnavailable,
            None,
            id="503-not-json",
        ),
        pytest.param(418, b"", None, ApiError, None, id="unknown-code"),
    ],
)
async def test_error_mapping(
    api: FakeApiServer,
    client: ApiClient,
    code: int,
    body: Any,
    headers: dict[str, str] | None,
    error: type[ApiError],
    retry_after: float | None,
) -> None:
    api.respond("GET", f"{POD_PATH}/a", body, status=code, headers=headers)
    with pytest.raises(error) as info:
        await client.get(PODS, "a", namespace="ns")
    assert type(info.value) is error
    assert info.value.code == code
    assert info.value.retry_after == retry_after
    if isinstance(body, dict):
        assert info.value.message == body["message"]


async def test_connection_refused(registry: CollectorRegistry) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with ApiClient(
        ClientConfig(host=f"http://127.0.0.1:{port}"), qps=0, registry=registry
    ) as c:
        with pytest.raises(ApiConnectionError) as info:
            await c.get(NAMESPACES, "x")
    assert isinstance(info.value.__cause__, ConnectionRefusedError)


async def test_request_timeout(api: FakeApiServer, registry: CollectorRegistry) -> None:
    api.route("GET", f"{POD_PATH}/slow", api.park)
    async with ApiClient(ClientConfig(host=api.url), qps=0, timeout=0.2, registry=registry) as c:
        with pytest.raises(ApiConnectionError, match="timed out") as info:
            await c.get(PODS, "slow", namespace="ns")
    assert isinstance(info.value.__cause__, TimeoutError)


async def test_connection_dropped_mid_body(api: FakeApiServer, client: ApiClient) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = 1000
        await response.prepare(request)
        await response.write(b'{"kind": "Pod", "meta')
        assert request.transport is not None
        request.transport.close()
        return response

    api.route("GET", f"{POD_PATH}/drop", handler)
    with pytest.raises(ApiConnectionError) as info:
        await client.get(PODS, "drop", namespace="ns")
    assert isinstance(info.value.__cause__, HttpProtocolError)


async def test_non_json_success_is_a_connection_error(
    api: FakeApiServer, client: ApiClient
) -> None:
    api.respond("GET", f"{POD_PATH}/a", b"<html>proxy login</html>")
    with pytest.raises(ApiConnectionError, match="not JSON"):
        await client.get(PODS, "a", namespace="ns")


async def test_cancellation_propagates_and_client_stays_usable(
    api: FakeApiServer, client: ApiClient
) -> None:
    api.route("GET", f"{POD_PATH}/slow", api.park)
    task = asyncio.create_task(client.get(PODS, "slow", namespace="ns"))
    await api.parked.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    echo = await client.get(PODS, "fine", namespace="ns")
    assert echo["path"] == f"{POD_PATH}/fine"


# ---------------------------------------------------------------------- lifecycle, limits


async def test_session_closed_on_exit(api: FakeApiServer, registry: CollectorRegistry) -> None:
    async with ApiClient(ClientConfig(host=api.url), qps=0, registry=registry) as c:
        await c.get(NAMESPACES, "a")
        pool = c._transport.pool()
        assert not pool.closed
    assert pool.closed
    assert c.closed
    with pytest.raises(RuntimeError, match="closed"):
        await c.get(NAMESPACES, "a")
    await c.close()  # idempotent


async def test_close_without_use(registry: CollectorRegistry) -> None:
    c = ApiClient(ClientConfig(host="http://127.0.0.1:1"), registry=registry)
    await c.close()
    assert c.closed
    with pytest.raises(RuntimeError, match="closed"):
        c._transport.pool()


async def test_client_side_rate_limit(api: FakeApiServer, registry: CollectorRegistry) -> None:
    clock = FakeClock()
    async with ApiClient(
        ClientConfig(host=api.url), qps=1, burst=2, registry=registry, clock=clock
    ) as c:
        await c.get(NAMESPACES, "a")
        await c.get(NAMESPACES, "b")
        third = asyncio.create_task(c.get(NAMESPACES, "c"))
        await asyncio.sleep(0.05)
        assert not third.done()
        assert len(api.requests) == 2
        clock.step(1.0)
        await third
        assert len(api.requests) == 3
    waits = registry.get_sample_value(
        "rest_client_rate_limiter_duration_seconds_sum",
        {"verb": "GET", "host": api.url.removeprefix("http://")},
    )
    assert waits == pytest.approx(1.0)


async def test_a_component_client_has_its_own_budget_and_user_agent(
    api: FakeApiServer, registry: CollectorRegistry
) -> None:
    """for_component: what kube-controller-manager's client builder gives each controller -
    the shared connections, a token bucket of its own, ``<agent>/<component>``."""
    clock = FakeClock()
    async with ApiClient(
        ClientConfig(host=api.url),
        qps=1,
        burst=1,
        user_agent="kcontrol-manager/me",
        registry=registry,
        clock=clock,
    ) as root:
        deployments = root.for_component("deployment-controller", qps=1, burst=1)
        replicasets = root.for_component("replicaset-controller", qps=1, burst=1)
        unthrottled = root.for_component("informers", qps=0, burst=0)
        await root.get(NAMESPACES, "a")  # spends the root's only token
        # Each component still has its own token: neither waits on the root's bucket.
        await deployments.get(NAMESPACES, "b")
        await replicasets.get(NAMESPACES, "c")
        for name in "defg":
            await unthrottled.get(NAMESPACES, name)
        second = asyncio.create_task(deployments.get(NAMESPACES, "h"))
        await asyncio.sleep(0.05)
        assert not second.done()  # its own bucket is empty now
        clock.step(1.0)
        await second
        assert deployments._transport.pool() is root._transport.pool()
    agents = [r.headers["User-Agent"] for r in api.requests]
    assert agents == [
        "kcontrol-manager/me",
        "kcontrol-manager/me/deployment-controller",
        "kcontrol-manager/me/replicaset-controller",
        *["kcontrol-manager/me/informers"] * 4,
        "kcontrol-manager/me/deployment-controller",
    ]
    assert deployments.closed and replicasets.closed  # closing the root closed them


async def test_metrics(api: FakeApiServer, registry: CollectorRegistry) -> None:
    host = api.url.removeprefix("http://")
    api.respond("GET", f"{POD_PATH}/missing", status_body(404, "NotFound"), status=404)
    async with ApiClient(ClientConfig(host=api.url), qps=0, registry=registry) as c:
        await c.get(PODS, "a", namespace="ns")
        await c.get(PODS, "b", namespace="ns")
        with pytest.raises(NotFound):
            await c.get(PODS, "missing", namespace="ns")
        await c.patch(PODS, "a", {}, namespace="ns")

    def count(code: str, method: str) -> float | None:
        return registry.get_sample_value(
            "rest_client_requests_total", {"code": code, "method": method, "host": host}
        )

    assert count("200", "GET") == 2
    assert count("404", "GET") == 1
    assert count("200", "PATCH") == 1
    assert (
        registry.get_sample_value(
            "rest_client_request_duration_seconds_count", {"verb": "GET", "host": host}
        )
        == 3
    )
    assert (
        registry.get_sample_value(
            "rest_client_request_duration_seconds_bucket",
            {"verb": "GET", "host": host, "le": "60.0"},
        )
        == 3
    )


async def test_metrics_count_connection_errors(registry: CollectorRegistry) -> None:
    async with ApiClient(ClientConfig(host="http://127.0.0.1:1"), qps=0, registry=registry) as c:
        with pytest.raises(ApiConnectionError):
            await c.get(NAMESPACES, "a")
    assert (
        registry.get_sample_value(
            "rest_client_requests_total",
            {"code": "<error>", "method": "GET", "host": "127.0.0.1:1"},
        )
        == 1
    )


async def test_many_clients_share_a_registry(
    api: FakeApiServer, registry: CollectorRegistry
) -> None:
    for _ in range(3):
        async with ApiClient(ClientConfig(host=api.url), qps=0, registry=registry) as c:
            await c.get(NAMESPACES, "a")
    host = api.url.removeprefix("http://")
    assert (
        registry.get_sample_value(
            "rest_client_requests_total", {"code": "200", "method": "GET", "host": host}
        )
        == 3
    )


async def test_token_is_asked_for_on_every_request(
    api: FakeApiServer, registry: CollectorRegistry
) -> None:
    class Rotating:
        def __init__(self) -> None:
            self.n = 0

        async def authorization(self) -> str | None:
            self.n += 1
            return f"Bearer t{self.n}"

    async with ApiClient(
        ClientConfig(host=api.url, auth=Rotating()), qps=0, registry=registry
    ) as c:
        await c.get(NAMESPACES, "a")
        await c.get(NAMESPACES, "a")
    assert [r.headers["Authorization"] for r in api.requests] == ["Bearer t1", "Bearer t2"]


async def test_a_401_tells_the_credentials_source_which_header_was_refused(
    api: FakeApiServer, registry: CollectorRegistry
) -> None:
    """As client-go's exec authenticator: the source of a refused token learns it (and an
    exec plugin runs again for the next request); the request itself is not repeated."""

    class Renewing:
        def __init__(self) -> None:
            self.token = "old"
            self.refused: list[str | None] = []

        async def authorization(self) -> str | None:
            return f"Bearer {self.token}"

        def unauthorized(self, authorization: str | None) -> None:
            self.refused.append(authorization)
            self.token = "new"

    auth = Renewing()
    api.respond("GET", "/api/v1/namespaces/a", status_body(401, "Unauthorized"), 401)
    async with ApiClient(ClientConfig(host=api.url, auth=auth), qps=0, registry=registry) as c:
        with pytest.raises(Unauthorized):
            await c.get(NAMESPACES, "a")
        assert auth.refused == ["Bearer old"]
        api.respond("GET", "/api/v1/namespaces/a", {"metadata": {"name": "a"}})
        await c.get(NAMESPACES, "a")
    assert [r.headers["Authorization"] for r in api.requests] == ["Bearer old", "Bearer new"]
    assert auth.refused == ["Bearer old"], "a 200 refuses nothing"


def test_static_token_repr_hides_the_token() -> None:
    assert "s3cret" not in repr(StaticTokenAuth("s3cret"))
    assert "s3cret" not in repr(ClientConfig(host="https://h", auth=StaticTokenAuth("s3cret")))


# ---------------------------------------------------------------------- Retry-After retries


def answers(*replies: tuple[int, dict[str, str] | None]) -> Any:
    """A handler giving ``replies`` in turn (status, headers), then 200 with the method."""
    left = list(replies)

    async def handler(request: web.Request) -> web.StreamResponse:
        if left:
            code, headers = left.pop(0)
            return json_response(status_body(code, "Throttled"), code, headers)
        return json_response({"method": request.method, "body": await request.text()}, 200)

    return handler


async def retrying_client(api: FakeApiServer, registry: CollectorRegistry, **kw: Any) -> ApiClient:
    return ApiClient(ClientConfig(host=api.url), qps=0, registry=registry, **kw)


async def test_429_and_5xx_with_retry_after_are_retried(
    api: FakeApiServer, registry: CollectorRegistry
) -> None:
    wait0 = {"Retry-After": "0"}
    api.route("POST", "/api/v1/namespaces", answers((429, wait0), (503, wait0), (500, wait0)))
    async with await retrying_client(api, registry) as c:
        answer = await c.create(NAMESPACES, {"metadata": {"name": "x"}})
    assert answer["method"] == "POST"
    assert '"name":"x"' in answer["body"], "the body is sent again on each retry"
    assert len(api.requests) == 4


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param((429, None), id="429-without-retry-after"),
        pytest.param((500, None), id="500-without-retry-after"),
        pytest.param((429, {"Retry-After": "soon"}), id="unreadable-retry-after"),
        pytest.param((409, {"Retry-After": "0"}), id="409-is-never-retried"),
    ],
)
async def test_answers_without_a_usable_retry_after_are_not_retried(
    api: FakeApiServer, registry: CollectorRegistry, reply: tuple[int, dict[str, str] | None]
) -> None:
    api.route("GET", "/api/v1/namespaces/a", answers(reply))
    async with await retrying_client(api, registry) as c:
        with pytest.raises(ApiError) as info:
            await c.get(NAMESPACES, "a")
    assert info.value.code == reply[0]
    assert len(api.requests) == 1


async def test_retries_stop_after_max_retries(
    api: FakeApiServer, registry: CollectorRegistry
) -> None:
    api.route("GET", "/api/v1/namespaces/a", answers(*[(429, {"Retry-After": "0"})] * 20))
    async with await retrying_client(api, registry, max_retries=3) as c:
        with pytest.raises(TooManyRequests):
            await c.get(NAMESPACES, "a")
    assert len(api.requests) == 4, "the first attempt and 3 retries"


async def test_retry_waits_the_retry_after_on_the_clock(
    api: FakeApiServer, registry: CollectorRegistry
) -> None:
    clock = FakeClock()
    api.route("GET", "/api/v1/namespaces/a", answers((429, {"Retry-After": "7"})))
    async with await retrying_client(api, registry, clock=clock) as c:
        task = asyncio.create_task(c.get(NAMESPACES, "a"))
        for _ in range(200):
            await asyncio.sleep(0.001)
            if len(api.requests) == 1 and clock.has_waiters():
                break
        assert len(api.requests) == 1
        clock.step(6.9)
        await asyncio.sleep(0.05)
        assert not task.done(), "retried before Retry-After elapsed"
        clock.step(0.2)
        assert (await asyncio.wait_for(task, 5))["method"] == "GET"
    assert len(api.requests) == 2


async def test_watch_opening_is_retried_too(
    api: FakeApiServer, registry: CollectorRegistry
) -> None:
    api.route(
        "GET",
        "/api/v1/namespaces",
        answers((429, {"Retry-After": "0"}), (429, {"Retry-After": "0"})),
    )
    async with await retrying_client(api, registry) as c:
        with pytest.raises(ApiConnectionError):  # the echo is not a watch stream
            async with c.watch(NAMESPACES) as events:
                async for _ in events:
                    pass
    assert len(api.requests) == 3
