"""The real client: :class:`ApiClient`, the :class:`~kcontrol.client.Client` contract over HTTP.

This layer turns each contract method into a request - path, query parameters, body and
content type - and hands it to the :class:`~kcontrol.client._transport.Transport` below,
which sends it and maps its failures.
"""

from __future__ import annotations

import builtins
import copy
import dataclasses
import functools
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Self

from prometheus_client import CollectorRegistry

from kcontrol.client._config import ClientConfig
from kcontrol.client._decode import ItemHook, ListDecoder, encode_json
from kcontrol.client._gate import WriteGate, check_write
from kcontrol.client._interface import Object, PatchType, Resource, WatchEvent
from kcontrol.client._metadata import MetadataClient
from kcontrol.client._observe import notify_write
from kcontrol.client._options import ListOptions
from kcontrol.client._resources import object_path
from kcontrol.client._transport import DEFAULT_MAX_RETRIES, BeforeSend, Params, Transport
from kcontrol.client._watch import WatchStream
from kcontrol.clock import Clock, RealClock
from kcontrol.errors import Gone
from kcontrol.flowcontrol import TokenBucketRateLimiter
from kcontrol.logging import get_logger

__all__ = ["DEFAULT_PAGE_SIZE", "ApiClient"]

_log = get_logger(__name__)

DEFAULT_PAGE_SIZE = 500
"""Items per LIST page in :meth:`ApiClient.list_all` (client-go's pager default)."""
_NO_OPTIONS = ListOptions()


class ApiClient:
    """An asyncio Kubernetes REST client for any resource; objects are plain dicts.

    Implements :class:`~kcontrol.client.Client` (see its docstrings for the contract of each
    method). Use it as an async context manager, or call :meth:`close` when done; the HTTP
    connections are opened on first use, and closing is idempotent.

    - ``qps``/``burst``: client-side token bucket shared by all requests of this client
      (watches take a token when opened); ``qps <= 0`` disables throttling.
    - ``timeout``: seconds allowed for one request, from sending it to the end of the
      response body (for a watch: to its response headers; the stream itself is bounded by
      the server's ``timeoutSeconds`` and the caller's own inactivity limit). ``<= 0``: none.
    - ``registry``: where the ``rest_client_*`` metrics live (default: the global registry).
    - ``clock``: drives the rate limiter, the retry waits and the latency metrics.
    - ``max_retries``: how many times a request answered 429 or 5xx with a ``Retry-After``
      header is retried after the wait it asks for (client-go's default, 10; 0: never).

    Failures: a non-2xx answer raises the :class:`~kcontrol.errors.ApiError` subclass for
    its ``Status``; no answer (refused, reset, TLS failure, timeout, a body cut short)
    raises :class:`~kcontrol.errors.ApiConnectionError`. Cancellation always propagates,
    and the connection of a cancelled request is closed. A client made by
    :meth:`with_write_gate` raises :class:`~kcontrol.errors.WriteRefused` for writes its
    gate holds back.
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        qps: float = 5.0,
        burst: int = 10,
        user_agent: str | None = None,
        timeout: float = 60.0,
        registry: CollectorRegistry | None = None,
        clock: Clock | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        self._config = config
        clock = clock or RealClock()
        self._clock = clock
        self._user_agent = user_agent or _default_user_agent()
        self._limiter = TokenBucketRateLimiter(qps, burst, clock=clock) if qps > 0 else None
        self._transport = Transport(
            config,
            rate_limiter=self._limiter,
            user_agent=self._user_agent,
            timeout=timeout if timeout > 0 else None,
            registry=registry,
            clock=clock,
            max_retries=max_retries,
        )
        # The write gate and its name (with_write_gate), asked before each write attempt.
        self._write_gate: tuple[WriteGate, str] | None = None

    def with_write_gate(self, gate: WriteGate, *, name: str) -> ApiClient:
        """This client, with writes that first pass ``gate`` (see :mod:`kcontrol.client._gate`).

        Before every attempt of a create, update, update_status, patch or delete - after
        the rate limiter's wait and any ``Retry-After`` wait, and again once the attempt's
        connection is ready, right before it is written - the returned client calls
        ``gate(namespace)`` with the namespace of the object written (``""`` for a
        cluster-scoped one); when it returns false the request is not sent and
        :class:`~kcontrol.errors.WriteRefused` (naming ``name``, e.g. the lease) is raised.
        Reads and watches are never gated. A gate set earlier on this client is replaced.

        The two clients share the connections, rate limiter and metrics: closing either one
        closes both. This client itself stays ungated.
        """
        gated = copy.copy(self)
        gated._write_gate = (gate, name)
        return gated

    def for_component(self, name: str, *, qps: float, burst: int) -> ApiClient:
        """A client for the component ``name`` with its own request budget.

        It shares this client's connections and credentials, metrics, timeout,
        retries and write gate, and has its own token bucket (``qps``/``burst``, ``qps <= 0``:
        unthrottled) and the user agent ``<this client's>/<name>``: what
        kube-controller-manager's client builder gives each of its controllers, so that one
        busy controller does not spend another's budget, and the API server's audit log
        tells them apart. Closing either client closes both.
        """
        derived = copy.copy(self)
        derived._limiter = (
            TokenBucketRateLimiter(qps, burst, clock=self._clock) if qps > 0 else None
        )
        derived._user_agent = f"{self._user_agent}/{name}"
        derived._transport = self._transport.derive(
            rate_limiter=derived._limiter, user_agent=derived._user_agent
        )
        return derived

    def metadata_only(self) -> MetadataClient:
        """A :class:`~kcontrol.client.Reader` over this client that gets, lists and watches
        objects' metadata only (client-go's ``metadata`` client).

        Each object arrives as the server's ``PartialObjectMetadata``: ``apiVersion``
        ``meta.k8s.io/v1``, ``kind`` ``PartialObjectMetadata``, and the whole ``metadata``
        (labels, annotations, ownerReferences, finalizers, resourceVersion, ...); a LIST is a
        ``PartialObjectMetadataList``. Requests go through this client (connections, rate limiter,
        user agent, metrics): only the Accept header differs (see
        :mod:`kcontrol.client._metadata`). What :class:`~kcontrol.informers.SharedInformerFactory`
        uses for ``metadata_only=True`` informers.
        """
        return MetadataClient(self._transport)

    @property
    def user_agent(self) -> str:
        return self._user_agent

    @property
    def config(self) -> ClientConfig:
        return self._config

    @property
    def rate_limiter(self) -> TokenBucketRateLimiter | None:
        return self._limiter

    @property
    def closed(self) -> bool:
        return self._transport.closed

    async def __aenter__(self) -> Self:
        self._transport.pool()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the client's connections (open watches break). Idempotent."""
        await self._transport.close()

    # ------------------------------------------------------------------ Reader

    async def get(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Object:
        path = object_path(resource, name, namespace, subresource)
        return await self._transport.request("GET", path)

    async def get_raw(self, path: str, *, accept: str | None = None) -> bytes:
        """GET an absolute path that is not a resource (``/healthz``, ``/version``, the
        discovery documents) and return the body as the server sent it (client-go's
        ``AbsPath(path).DoRaw()``). ``accept`` replaces the ``application/json`` Accept
        header (content negotiation, e.g. aggregated discovery). Failures are mapped as for
        every request: a non-2xx answer raises its :class:`~kcontrol.errors.ApiError`."""
        if not path.startswith("/"):
            raise ValueError(f"an absolute path is required, got {path!r}")
        return await self._transport.request_raw("GET", path, accept=accept)

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
        transform: ItemHook | None = None,
    ) -> Object:
        """One LIST page. Items get ``apiVersion``/``kind`` filled in (the server omits them
        in lists), as client-go's unstructured decoding does, so they match watch objects.
        Items are decoded one at a time as the body arrives, and each is passed to
        ``transform``, if given, at once (:class:`~kcontrol.client._decode.ListDecoder`)."""
        params = (options or _NO_OPTIONS).query()
        path = resource.path(namespace)
        api_version, kind = resource.api_version, resource.kind

        def item_hook(item: Object) -> Object:
            item = _typed(item, api_version, kind)
            return item if transform is None else transform(item)

        return await self._transport.request(
            "GET", path, params=params, decoder=lambda: ListDecoder(item_hook)
        )

    async def list_all(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> tuple[builtins.list[Object], str]:
        """LIST every page: ``(items, resourceVersion of the list)``.

        Follows ``continue`` tokens ``page_size`` items at a time (``<= 0``: one request);
        ``options`` (selectors, resourceVersion) apply to the first page, and its selectors
        to every page. Paging is this method's own: ``options`` with a ``limit`` or a
        ``continue_`` raise :class:`ValueError`. If a continue token expires midway (410),
        lists everything again in one unpaged request, as client-go's pager does; a 410 on
        the first page propagates.
        """
        first_page = options or _NO_OPTIONS
        if first_page.limit is not None or first_page.continue_ is not None:
            raise ValueError("list_all pages by itself: pass page_size, not limit or continue_")
        next_pages = dataclasses.replace(
            first_page, resource_version=None, resource_version_match=None
        )
        items: list[Object] = []
        token: str | None = None
        while True:
            first = token is None
            try:
                page = await self.list(
                    resource,
                    namespace=namespace,
                    options=dataclasses.replace(
                        first_page if first else next_pages, limit=page_size, continue_=token
                    ),
                )
            except Gone:
                if first:
                    raise
                _log.info(
                    "LIST continue token expired, listing without paging", resource=resource.plural
                )
                page = await self.list(resource, namespace=namespace, options=first_page)
                items = []
            items.extend(page.get("items") or ())
            metadata = page.get("metadata") or {}
            token = metadata.get("continue") or None
            if token is None:
                return items, str(metadata.get("resourceVersion") or "")

    @asynccontextmanager
    async def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
    ) -> AsyncIterator[AsyncIterator[WatchEvent]]:
        params = (options or _NO_OPTIONS).query(watch=True)
        response = await self._transport.open_stream(resource.path(namespace), params)
        try:
            yield WatchStream(response)
        finally:
            response.close()  # drop the connection: a half-read stream cannot be reused

    # ------------------------------------------------------------------ Writer

    async def create(
        self, resource: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Object:
        ns = _namespace_of(resource, obj, namespace)
        path = resource.path(ns)
        return await self._write("POST", path, ns, body=encode_json(obj), resource=resource)

    async def update(
        self, resource: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Object:
        return await self._put_object(resource, obj, namespace, None)

    async def update_status(
        self, resource: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Object:
        return await self._put_object(resource, obj, namespace, "status")

    async def _put_object(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        namespace: str | None,
        subresource: str | None,
    ) -> Object:
        name = (obj.get("metadata") or {}).get("name")
        if not name:
            raise ValueError(f"cannot update a {resource.kind} without metadata.name")
        ns = _namespace_of(resource, obj, namespace)
        path = object_path(resource, name, ns, subresource)
        return await self._write("PUT", path, ns, body=encode_json(obj), resource=resource)

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> Object:
        """PATCH ``name``. ``patch`` is the document (dict, or a list for JSON patch) or its
        encoded bytes/str. Server-side apply (``PatchType.APPLY``) requires
        ``field_manager``; ``force`` takes over conflicting fields."""
        if patch_type is PatchType.APPLY and not field_manager:
            raise ValueError("server-side apply requires field_manager")
        params: Params = {}
        if field_manager:
            params["fieldManager"] = field_manager
        if force is not None:
            params["force"] = "true" if force else "false"
        if isinstance(patch, (bytes, bytearray)):
            body = bytes(patch)
        elif isinstance(patch, str):
            body = patch.encode()
        else:
            body = encode_json(patch)
        path = object_path(resource, name, namespace, subresource)
        return await self._write(
            "PATCH",
            path,
            namespace,
            params=params,
            body=body,
            content_type=patch_type.value,
            resource=resource,
        )

    async def delete(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        preconditions: Mapping[str, str] | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> Object:
        options: dict[str, Any] = {}
        if preconditions:
            options["preconditions"] = dict(preconditions)
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        body = None
        if options:
            body = encode_json({"kind": "DeleteOptions", "apiVersion": "v1", **options})
        path = object_path(resource, name, namespace, None)
        return await self._write("DELETE", path, namespace, body=body)

    async def _write(
        self,
        method: str,
        path: str,
        namespace: str | None,
        *,
        body: bytes | None,
        params: Params | None = None,
        content_type: str | None = None,
        resource: Resource | None = None,
    ) -> Object:
        """Send a mutating request on an object in ``namespace`` (``None``: cluster-scoped)
        through the write gate, if this client has one; the answer of a write of
        ``resource`` (not given for a delete) goes to the context's write observer
        (:func:`~kcontrol.client.observe_writes`)."""
        before_send: BeforeSend | None = None
        if self._write_gate is not None:
            gate, name = self._write_gate
            before_send = functools.partial(check_write, gate, name, namespace or "")
        answer = await self._transport.request(
            method,
            path,
            params=params,
            body=body,
            content_type=content_type,
            before_send=before_send,
        )
        if resource is not None:
            notify_write(resource, answer)
        return answer


# ---------------------------------------------------------------------- helpers


def _default_user_agent() -> str:
    import kcontrol  # noqa: PLC0415 - the package imports this module while initialising

    return f"kcontrol/{kcontrol.__version__}"


def _namespace_of(resource: Resource, obj: Mapping[str, Any], namespace: str | None) -> str | None:
    """The namespace to write ``obj`` to: the argument, else its ``metadata.namespace``."""
    if not resource.namespaced:
        return None
    ns = namespace or (obj.get("metadata") or {}).get("namespace")
    if not ns:
        raise ValueError(
            f"{resource.kind} is namespaced: pass namespace= or set metadata.namespace"
        )
    return str(ns)


def _typed(item: Object, api_version: str, kind: str) -> Object:
    """``item`` with ``apiVersion``/``kind`` set where the server left them out."""
    if "apiVersion" not in item:
        item["apiVersion"] = api_version
    if "kind" not in item:
        item["kind"] = kind
    return item
