"""The event broadcaster: queues recorded events and writes them to the API server.

A port of client-go's ``tools/record`` broadcaster with its sink writer. Recorders put events
on one bounded queue without ever waiting; :meth:`EventBroadcaster.run` takes them off in order,
correlates them (:mod:`kcontrol.events._correlator`) and writes each one: a POST for a new
Event, a strategic-merge PATCH raising ``count`` and ``lastTimestamp`` for a repeat (and a POST
after all if that Event has expired meanwhile).

Failures: transient ones (the server unreachable, 429, 5xx, a request timeout) are retried with
capped exponential backoff, the first delay randomised so that many clients do not retry in
step; after ``max_tries`` attempts the event is dropped. Anything else (403, 422, the namespace
terminating, ...) will not get better by retrying and drops the event at once, and so does a
write its client's write gate refuses (the lease lost: the flush then ends at once). Every dropped
event is counted in ``kcontrol_events_dropped_total`` and logged; none ever reaches the
caller. While one event is being retried the queue keeps filling, up to ``queue_size``.
"""

from __future__ import annotations

import asyncio
import random

from prometheus_client import CollectorRegistry

from kcontrol.client import EVENTS, Object, PatchType, Writer, deep_copy
from kcontrol.clock import Clock, RealClock
from kcontrol.errors import AlreadyExists, ApiConnectionError, ApiError, NotFound, WriteRefused
from kcontrol.events._correlator import CorrelatorOptions, EventCorrelation, EventCorrelator
from kcontrol.events._event import EventNamer
from kcontrol.events._metrics import EventMetrics
from kcontrol.events._recorder import BroadcastRecorder, EventRecorder
from kcontrol.logging import get_logger

__all__ = ["DEFAULT_QUEUE_SIZE", "EventBroadcaster"]

_log = get_logger(__name__)

DEFAULT_QUEUE_SIZE = 2000
"""Events a broadcaster holds while its sender catches up: what client-go buffers between a
recorder and its sink (the broadcaster's incoming channel of 1,000 and the sink watcher's
channel of 1,000), so a burst that client-go's recorder keeps is kept here too (what a
smaller queue dropped in a rollout: docs/benchmarks.md)."""


def _is_transient(error: BaseException) -> bool:
    if isinstance(error, ApiConnectionError | TimeoutError):
        return True
    return isinstance(error, ApiError) and (error.code == 429 or error.code >= 500)


class EventBroadcaster:
    """Writes the events of its recorders as core/v1 Events; see the module docstring.

    ``client`` needs ``create`` and ``patch`` on events (RBAC: events create/patch).
    ``component`` is the event source (``deployment-controller``) and ``host`` the reporting
    instance (the host or pod name). ``queue_size`` bounds the events waiting to be written,
    also before :meth:`run` starts. ``clock`` stamps events and times retries; ``registry``
    receives the metrics. ``max_tries``, ``retry_initial`` and ``retry_cap`` shape retries of
    transient failures; ``request_timeout`` bounds each API call; ``flush_timeout`` bounds the
    final flush when :meth:`run` is cancelled. ``rng`` makes the retry jitter reproducible.
    """

    def __init__(
        self,
        client: Writer,
        *,
        component: str,
        host: str | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        correlator_options: CorrelatorOptions | None = None,
        max_tries: int = 12,
        retry_initial: float = 1.0,
        retry_cap: float = 10.0,
        request_timeout: float = 30.0,
        flush_timeout: float = 5.0,
        rng: random.Random | None = None,
    ) -> None:
        if queue_size < 1 or max_tries < 1:
            raise ValueError("queue_size and max_tries must be at least 1")
        self._client = client
        self._component = component
        self._host = host
        self._clock: Clock = clock if clock is not None else RealClock()
        self._metrics = EventMetrics(component, registry)
        self._namer = EventNamer(self._clock)
        self._correlator = EventCorrelator(self._clock, correlator_options, namer=self._namer)
        # Events recorded and not yet taken by the sender; bounded, never awaited on put.
        self._queue: asyncio.Queue[Object] = asyncio.Queue(maxsize=queue_size)
        # The correlated event the sender is writing (or retrying) right now, for the flush.
        self._inflight: EventCorrelation | None = None
        self._max_tries = max_tries
        self._retry_initial = retry_initial
        self._retry_cap = retry_cap
        self._request_timeout = request_timeout
        self._flush_timeout = flush_timeout
        self._rng = rng or random.Random()
        self._running = False

    @property
    def component(self) -> str:
        return self._component

    def new_recorder(self, *, component: str | None = None) -> EventRecorder:
        """A recorder whose events go through this broadcaster.

        ``component`` overrides the event source for this recorder's events (the reporting
        instance stays the broadcaster's ``host``).
        """
        return BroadcastRecorder(
            component=component or self._component,
            host=self._host,
            clock=self._clock,
            namer=self._namer,
            submit=self._submit,
            drop=self._metrics.dropped,
        )

    def pending(self) -> int:
        """Events queued and not yet taken by the sender (informational)."""
        return self._queue.qsize()

    def _submit(self, event: Object) -> None:
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self._metrics.dropped("queue_full")
            _log.error(
                "event queue full, dropping event",
                type=event.get("type"),
                reason=event.get("reason"),
                object=event["involvedObject"].get("name"),
            )

    async def run(self) -> None:
        """Write queued events until cancelled, then flush what is left.

        On cancellation the event being written and those still queued are each tried once,
        for at most ``flush_timeout`` seconds in all; whatever is left is dropped (counted as
        ``shutdown``). Then the cancellation propagates. Run it once at a time.
        """
        if self._running:
            raise RuntimeError("EventBroadcaster.run() is already running")
        self._running = True
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._send(), name=f"event-sender:{self._component}")
        finally:
            try:
                await self._flush()
            finally:
                self._running = False

    async def _send(self) -> None:
        while True:
            event = await self._queue.get()
            correlation = self._correlator.correlate(event)
            if correlation.skip:
                self._metrics.dropped("spam")
                continue
            self._inflight = correlation
            await self._write_with_retries(correlation)
            self._inflight = None

    async def _write_with_retries(self, correlation: EventCorrelation) -> None:
        tries = 0
        while not await self._attempt(correlation):
            tries += 1
            if tries >= self._max_tries:
                self._metrics.dropped("retries_exhausted")
                _log.error("unable to write event, retry limit exceeded", **_fields(correlation))
                return
            await self._clock.sleep(self._retry_delay(tries))

    def _retry_delay(self, tries: int) -> float:
        delay: float = min(self._retry_cap, self._retry_initial * 2.0 ** (tries - 1))
        if tries == 1:
            delay *= self._rng.random()
        return delay

    async def _attempt(self, correlation: EventCorrelation) -> bool:
        """Try one write. True when done with the event (written or refused for good), False
        when a transient failure means it should be tried again."""
        try:
            async with asyncio.timeout(self._request_timeout):
                written, verb = await self._write(correlation)
        except AlreadyExists:
            # Written before by an attempt whose answer was lost; nothing is missing.
            _log.debug("event already exists", **_fields(correlation))
            return True
        except WriteRefused:
            # The client's write gate is closed (the leader election lease is lost): nothing
            # was sent, and nothing will be; the process is stepping down.
            self._metrics.dropped("rejected")
            _log.warning("event not written: the write gate is closed", **_fields(correlation))
            return True
        except Exception as error:
            if _is_transient(error):
                _log.warning(
                    "unable to write event, may retry", **_fields(correlation), error=str(error)
                )
                return False
            self._metrics.dropped("rejected")
            _log.error(
                "server rejected event, will not retry", **_fields(correlation), error=str(error)
            )
            return True
        self._metrics.written(verb)
        self._correlator.update_state(written)
        return True

    async def _write(self, correlation: EventCorrelation) -> tuple[Object, str]:
        event = correlation.event
        meta = event["metadata"]
        if correlation.patch is not None:
            try:
                patched = await self._client.patch(
                    EVENTS,
                    meta["name"],
                    correlation.patch,
                    namespace=meta["namespace"],
                    patch_type=PatchType.STRATEGIC,
                )
            except NotFound:
                pass  # the Event expired (or was deleted): write it anew
            else:
                return patched, "patch"
        body = deep_copy(event)
        body["metadata"].pop("resourceVersion", None)
        created = await self._client.create(EVENTS, body, namespace=meta["namespace"])
        return created, "create"

    async def _flush(self) -> None:
        inflight, self._inflight = self._inflight, None
        try:
            async with asyncio.timeout(self._flush_timeout):
                if inflight is not None:
                    await self._flush_one(inflight)
                while not self._queue.empty():
                    correlation = self._correlator.correlate(self._queue.get_nowait())
                    if correlation.skip:
                        self._metrics.dropped("spam")
                    else:
                        await self._flush_one(correlation)
        except (TimeoutError, asyncio.CancelledError):
            # On Python 3.11 a timeout inside an already cancelled task surfaces as
            # CancelledError; either way the flush is over and the original exception goes on.
            pass
        left = self._queue.qsize() + (self._inflight is not None)
        self._inflight = None
        while not self._queue.empty():
            self._queue.get_nowait()
        if left:
            self._metrics.dropped("shutdown", left)
            _log.error("event broadcaster stopped with unwritten events", unwritten=left)

    async def _flush_one(self, correlation: EventCorrelation) -> None:
        self._inflight = correlation
        if not await self._attempt(correlation):
            self._metrics.dropped("shutdown")
        self._inflight = None


def _fields(correlation: EventCorrelation) -> dict[str, object]:
    """What names an event in a log line."""
    event = correlation.event
    meta = event["metadata"]
    return {"name": f"{meta.get('namespace')}/{meta.get('name')}", "reason": event.get("reason")}
