"""Test doubles for the informer tests: a scripted Reader, scripted watch streams, a recording
store, object builders and loop-driving helpers. (A module, not a conftest, so tests import
the classes explicitly.)"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import dataclasses
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from typing import Any

from kcontrol.client import ListOptions, Object, Resource, WatchEvent
from kcontrol.clock import FakeClock
from kcontrol.informers import DeletedFinalStateUnknown, IndexedStore, meta_namespace_key_func

_CLOSE = object()


def pod(
    name: str,
    rv: str | int = "1",
    *,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    **extra: Any,
) -> Object:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "resourceVersion": str(rv)}
    if labels is not None:
        metadata["labels"] = labels
    return {"metadata": metadata, **extra}


def node(name: str, rv: str | int = "1") -> Object:
    return {"metadata": {"name": name, "resourceVersion": str(rv)}}


def page(items: Iterable[Object], rv: str | int, continue_: str | None = None) -> Object:
    metadata: dict[str, Any] = {"resourceVersion": str(rv)}
    if continue_:
        metadata["continue"] = continue_
    return {"kind": "PodList", "apiVersion": "v1", "metadata": metadata, "items": list(items)}


def bookmark(rv: str | int, *, initial_events_end: bool = False) -> Object:
    metadata: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_events_end:
        metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"kind": "Pod", "apiVersion": "v1", "metadata": metadata}


class FakeWatch:
    """One scripted watch stream. Feed it from the test; it hangs when it runs dry."""

    def __init__(self, events: Iterable[tuple[str, Object]] = (), *, close: bool = False) -> None:
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        for kind, obj in events:
            self.send(kind, obj)
        if close:
            self.close()
        self.params: dict[str, Any] = {}
        self.opened = False
        self.exited = False

    def send(self, kind: str, obj: Object) -> None:
        self._queue.put_nowait(WatchEvent(kind, obj))

    def fail(self, error: BaseException) -> None:
        self._queue.put_nowait(error)

    def close(self) -> None:
        self._queue.put_nowait(_CLOSE)

    async def _events(self) -> AsyncIterator[WatchEvent]:
        while True:
            item = await self._queue.get()
            if item is _CLOSE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    @contextlib.asynccontextmanager
    async def open(self, params: dict[str, Any]) -> AsyncIterator[AsyncIterator[WatchEvent]]:
        self.params = params
        self.opened = True
        try:
            yield self._events()
        finally:
            self.exited = True


ListStep = Object | BaseException | Callable[[dict[str, Any]], Object]
WatchStep = FakeWatch | BaseException


def call_params(namespace: str | None, options: ListOptions | None, **rest: Any) -> dict[str, Any]:
    """One request as a flat dict: ``namespace``, every field of ``options``, and ``rest``."""
    return {"namespace": namespace, **dataclasses.asdict(options or ListOptions()), **rest}


class ScriptedReader:
    """A Reader that plays back scripted LIST answers and watch streams and records calls.

    Each call is recorded as its :func:`call_params` (``resource``, ``namespace``, the fields
    of its ListOptions, ``transform`` for a list, and ``at``, the clock time, if there is a
    clock). ``lists`` holds pages (dicts), exceptions to raise, or callables of those params.
    When it is empty, ``list_func`` answers (if set); otherwise the call fails loudly.
    ``watches`` holds FakeWatch streams or exceptions raised on opening; when empty, a new
    silent FakeWatch is opened. Every stream opened is appended to ``opened``.
    """

    def __init__(
        self,
        lists: Iterable[ListStep] = (),
        watches: Iterable[WatchStep] = (),
        *,
        clock: FakeClock | None = None,
        list_func: Callable[[dict[str, Any]], Object] | None = None,
    ) -> None:
        self.lists: deque[ListStep] = deque(lists)
        self.watches: deque[WatchStep] = deque(watches)
        self.list_func = list_func
        self.clock = clock
        self.list_calls: list[dict[str, Any]] = []
        self.watch_calls: list[dict[str, Any]] = []
        self.opened: list[FakeWatch] = []

    async def get(self, resource: Resource, name: str, **_: Any) -> Object:
        raise NotImplementedError

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
        transform: Callable[[Object], Object] | None = None,
    ) -> Object:
        params = call_params(namespace, options, transform=transform, resource=resource)
        if self.clock is not None:
            params["at"] = self.clock.now()
        self.list_calls.append(params)
        if self.lists:
            step = self.lists.popleft()
        elif self.list_func is not None:
            step = self.list_func
        else:
            raise AssertionError(f"unexpected list call {params}")
        if isinstance(step, BaseException):
            raise step
        result = step(params) if callable(step) else step
        if transform is not None:
            # As a real client: type meta filled in place, then the item as transformed.
            for item in result.get("items", []):
                item.setdefault("apiVersion", resource.api_version)
                item.setdefault("kind", resource.kind)
            result = {**result, "items": [transform(i) for i in result.get("items", [])]}
        return result

    def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[WatchEvent]]:
        params = call_params(namespace, options, resource=resource)
        if self.clock is not None:
            params["at"] = self.clock.now()
        self.watch_calls.append(params)
        step = self.watches.popleft() if self.watches else FakeWatch()
        if isinstance(step, BaseException):
            return _failing(step)
        self.opened.append(step)
        return step.open(params)

    @property
    def list_rvs(self) -> builtins.list[str | None]:
        return [call.get("resource_version") for call in self.list_calls]

    @property
    def watch_rvs(self) -> builtins.list[str | None]:
        return [call.get("resource_version") for call in self.watch_calls]


@contextlib.asynccontextmanager
async def _failing(error: BaseException) -> AsyncIterator[AsyncIterator[WatchEvent]]:
    raise error
    yield  # pragma: no cover


class RecordingStore:
    """A ReflectorStore that records what the reflector did and keeps an IndexedStore."""

    def __init__(self) -> None:
        self.store = IndexedStore()
        self.ops: list[tuple[Any, ...]] = []

    def add(self, obj: Object) -> None:
        self.ops.append(("add", meta_namespace_key_func(obj), obj["metadata"]["resourceVersion"]))
        self.store.add(obj)

    def update(self, obj: Object) -> None:
        self.ops.append(
            ("update", meta_namespace_key_func(obj), obj["metadata"]["resourceVersion"])
        )
        self.store.update(obj)

    def delete(self, obj: Object) -> None:
        self.ops.append(
            ("delete", meta_namespace_key_func(obj), obj["metadata"]["resourceVersion"])
        )
        self.store.delete(obj)

    async def replace(self, items: list[Object], resource_version: str) -> None:
        self.ops.append(
            ("replace", sorted(meta_namespace_key_func(o) for o in items), resource_version)
        )
        self.store.replace(items, resource_version)

    @property
    def replaces(self) -> list[tuple[Any, ...]]:
        return [op for op in self.ops if op[0] == "replace"]


class FixedBackoff:
    """A BackoffManager that always waits the same time and counts requests."""

    def __init__(self, delay: float = 1.0) -> None:
        self.delay = delay
        self.calls = 0

    def next_delay(self) -> float:
        self.calls += 1
        return self.delay


async def settle(rounds: int = 50) -> None:
    """Let every ready task run for a while (no real time passes)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def until(condition: Callable[[], bool], rounds: int = 2000) -> None:
    """Spin the loop (no real time) until ``condition()``; fail if it never holds."""
    for _ in range(rounds):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")


async def advance(clock: FakeClock, seconds: float, rounds: int = 50) -> None:
    """Move fake time forward and let woken tasks run."""
    clock.step(seconds)
    await settle(rounds)


@contextlib.asynccontextmanager
async def running(coro: Coroutine[Any, Any, Any]) -> AsyncIterator[asyncio.Task[Any]]:
    """Run ``coro`` as a task for the block; cancel it and wait for it afterwards (an error
    other than the cancellation fails the test)."""
    task = asyncio.create_task(coro)
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class RecordingHandler:
    """A ResourceEventHandler that records (kind, ...) tuples, optionally async or failing."""

    def __init__(self, name: str = "h") -> None:
        self.name = name
        self.events: list[tuple[Any, ...]] = []

    def on_add(self, obj: Object, is_in_initial_list: bool) -> object:
        self.events.append(("add", meta_namespace_key_func(obj), _rv(obj), is_in_initial_list))
        return None

    def on_update(self, old: Object, new: Object) -> object:
        self.events.append(("update", meta_namespace_key_func(new), _rv(old), _rv(new)))
        return None

    def on_delete(self, obj: Any) -> object:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.events.append(("tombstone", obj.key, _rv(obj.obj)))
        else:
            self.events.append(("delete", meta_namespace_key_func(obj), _rv(obj)))
        return None


def _rv(obj: Object) -> str:
    return str(obj["metadata"]["resourceVersion"])
