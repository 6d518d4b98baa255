"""Shared pieces of the informer fault tests: clients, a fault proxy, a recording handler,
cache/LIST snapshots and a deadline-bounded poll.

Every test waits for conditions with :func:`poll` (a deadline, never a fixed sleep as the
assertion) and runs informers with :func:`running`, which owns them in a task group and
cancels them at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import (
    CONFIGMAPS,
    NAMESPACES,
    ApiClient,
    ClientConfig,
    ListOptions,
    Object,
    StaticTokenAuth,
)
from kcontrol.envtest import ControlPlane
from kcontrol.errors import KcontrolError
from kcontrol.informers import DeletedFinalStateUnknown, SharedIndexInformer
from kcontrol.testing.faults import FaultProxy, ProxiedRequest

SYNC_TIMEOUT = 30.0
"""Seconds an informer gets for its first sync (it may have to back off first)."""


def new_client(
    plane: ControlPlane, host: str | None = None, *, timeout: float = 15, max_retries: int = 10
) -> ApiClient:
    """An unthrottled admin client of ``plane``, or of a proxy in front of it (``host``)."""
    config = ClientConfig(
        host=host or plane.host,
        auth=StaticTokenAuth(plane.token()),
        ca_file=str(plane.ca_file),
    )
    return ApiClient(
        config, qps=0, registry=CollectorRegistry(), timeout=timeout, max_retries=max_retries
    )


def new_proxy(plane: ControlPlane) -> FaultProxy:
    """A fault proxy in front of ``plane``'s apiserver, trusted with the same CA."""
    return FaultProxy(plane.host, plane.ssl_context(), plane.serving_cert_pair)


@contextlib.asynccontextmanager
async def namespaces(client: ApiClient, count: int) -> AsyncIterator[list[str]]:
    """``count`` fresh namespaces, deleted afterwards (they stay Terminating: no namespace
    controller runs, and nothing looks at them)."""
    names = [f"t-{uuid.uuid4().hex[:10]}" for _ in range(count)]
    for name in names:
        await client.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
    try:
        yield names
    finally:
        for name in names:
            with contextlib.suppress(KcontrolError):  # never hide the test's own failure
                await client.delete(NAMESPACES, name)


def configmap(
    name: str, namespace: str, labels: dict[str, str] | None = None, **data: str
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "data": data,
    }


def key_of(obj: Any) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    metadata = obj["metadata"]
    return f"{metadata['namespace']}/{metadata['name']}"


def rv_of(obj: Object) -> str:
    return str(obj["metadata"]["resourceVersion"])


# -- proxy request predicates ----------------------------------------------------------------


def is_watch(request: ProxiedRequest) -> bool:
    return request.method == "GET" and request.is_watch


def is_list(request: ProxiedRequest) -> bool:
    """A LIST of configmaps (collection GET that is not a watch)."""
    return request.method == "GET" and not request.is_watch and request.path.endswith("/configmaps")


def served(request: ProxiedRequest) -> bool:
    """Reached the apiserver or got an injected answer (not a blackhole sighting)."""
    return request.answered_by != "blackhole"


# -- handler ---------------------------------------------------------------------------------


@dataclass
class Recorder:
    """A ResourceEventHandler that records every notification and folds them into ``state``
    (key -> last object), the view a controller built on the handler would have."""

    events: list[tuple[str, Any]] = field(default_factory=list)
    # keys of the adds flagged is_in_initial_list, in delivery order
    initial_adds: list[str] = field(default_factory=list)
    state: dict[str, Object] = field(default_factory=dict)
    # key -> resourceVersions delivered for it, in delivery order
    history: dict[str, list[int]] = field(default_factory=dict)

    def on_add(self, obj: Object, is_in_initial_list: bool) -> None:
        self.events.append(("add", obj))
        if is_in_initial_list:
            self.initial_adds.append(key_of(obj))
        self._remember(obj)
        self.state[key_of(obj)] = obj

    def on_update(self, old: Object, new: Object) -> None:
        self.events.append(("update", new))
        self._remember(new)
        self.state[key_of(new)] = new

    def on_delete(self, obj: Any) -> None:
        self.events.append(("delete", obj))
        if not isinstance(obj, DeletedFinalStateUnknown):
            self._remember(obj)
        self.state.pop(key_of(obj), None)

    def _remember(self, obj: Object) -> None:
        self.history.setdefault(key_of(obj), []).append(int(rv_of(obj)))

    def snapshot(self) -> dict[str, str]:
        return {key: rv_of(obj) for key, obj in self.state.items()}

    def of_kind(self, kind: str) -> list[Any]:
        """The objects of every ``add``, ``update`` or ``delete`` notification."""
        return [obj for event_kind, obj in self.events if event_kind == kind]


def cache_snapshot(informer: SharedIndexInformer) -> dict[str, str]:
    """key -> resourceVersion of everything in the informer's cache."""
    return {key_of(obj): rv_of(obj) for obj in informer.indexer.list()}


async def list_snapshot(
    client: ApiClient, *, namespace: str | None = None, label_selector: str | None = None
) -> dict[str, str]:
    """key -> resourceVersion of a fresh (quorum) LIST of configmaps."""
    items, _ = await client.list_all(
        CONFIGMAPS, namespace=namespace, options=ListOptions(label_selector=label_selector)
    )
    return {key_of(obj): rv_of(obj) for obj in items}


# -- waiting and running ---------------------------------------------------------------------


async def poll(
    condition: Callable[[], bool | Awaitable[bool]],
    *,
    within: float,
    interval: float = 0.1,
    message: str | Callable[[], str] = "condition not met",
) -> float:
    """Wait until ``condition()`` is true; fail after ``within`` seconds.

    Returns the seconds it took. ``message`` (or its result) explains the failure.
    """
    start = time.monotonic()
    deadline = start + within
    while True:
        result = condition()
        if not isinstance(result, bool):
            result = await result
        if result:
            return time.monotonic() - start
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"after {within:g} s: {text}")
        await asyncio.sleep(interval)


async def wait_converged(
    informer: SharedIndexInformer,
    client: ApiClient,
    recorder: Recorder | None = None,
    *,
    within: float,
    namespace: str | None = None,
    label_selector: str | None = None,
) -> dict[str, str]:
    """Wait until the informer's cache (and the handler's view) equal a fresh LIST, taken
    once the caller has stopped writing. Returns that LIST's snapshot."""
    expected = await list_snapshot(client, namespace=namespace, label_selector=label_selector)

    def converged() -> bool:
        if cache_snapshot(informer) != expected:
            return False
        return recorder is None or recorder.snapshot() == expected

    def explain() -> str:
        cache = cache_snapshot(informer)
        lines = [f"cache differs from LIST: {_diff(cache, expected)}"]
        if recorder is not None:
            lines.append(f"handler view differs: {_diff(recorder.snapshot(), expected)}")
        return "; ".join(lines)

    await poll(converged, within=within, message=explain)
    return expected


def _diff(actual: dict[str, str], expected: dict[str, str]) -> str:
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    stale = sorted(k for k in set(actual) & set(expected) if actual[k] != expected[k])
    return f"missing={missing[:5]} ({len(missing)}), extra={extra[:5]} ({len(extra)}), " + (
        f"stale={[(k, actual[k], expected[k]) for k in stale[:5]]} ({len(stale)})"
    )


@contextlib.asynccontextmanager
async def running(
    *informers: SharedIndexInformer, sync: bool = True
) -> AsyncIterator[list[asyncio.Task[None]]]:
    """Run the informers in a task group (waiting for their first sync unless ``sync`` is
    False) and cancel them on exit. A single failure of the body is re-raised as itself, not
    wrapped in an exception group."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(informer.run()) for informer in informers]
            try:
                if sync:
                    async with asyncio.timeout(SYNC_TIMEOUT):
                        for informer in informers:
                            assert await informer.wait_for_cache_sync()
                yield tasks
            finally:
                for task in tasks:
                    task.cancel()
    except BaseExceptionGroup as group_error:
        if len(group_error.exceptions) == 1:
            raise group_error.exceptions[0] from None
        raise


def gaps(times: list[float]) -> list[float]:
    return [later - earlier for earlier, later in itertools.pairwise(times)]
