"""The controller runner: workers that take keys from a rate-limited queue and sync them.

This is the loop every upstream controller writes by hand (``Run`` / ``worker`` /
``processNextWorkItem`` / ``handleErr``) and that controller-runtime centralises in
``reconcileHandler``: here it is written once, with the retry decision in one place
(:meth:`Controller._handle_outcome`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.clock import Clock, RealClock, timeout
from kcontrol.controller._metrics import ControllerMetrics, SyncOutcome
from kcontrol.errors import Conflict, StaleCache
from kcontrol.informers._keys import meta_namespace_key_func
from kcontrol.logging import get_logger
from kcontrol.workqueue import RateLimitingQueue, ShutDown

__all__ = [
    "Controller",
    "ControllerOptions",
    "Result",
    "SupersededWrites",
    "SyncFunc",
    "guarded_by",
    "key_func",
    "superseded",
]

_log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Result:
    """What a sync asks for besides success or failure (controller-runtime's ``Result``).

    ``requeue_after`` (seconds, > 0) syncs the key again after that delay, with its failure
    backoff reset: use it for time-based work (a deadline to check, a delay to wait out).
    ``requeue=True`` puts the key back through the rate limiter, as an error would, without
    counting as an error. When both are set ``requeue_after`` wins. A sync that returns
    ``None`` or ``Result()`` succeeded and is done until the key is added again.
    """

    requeue: bool = False
    requeue_after: float = 0.0


SyncFunc = Callable[[str], Awaitable[Result | None]]
"""``async def sync(key) -> Result | None``: converge the object named by ``key``.

A sync is level-based: it reads the current state for ``key`` (from listers) and acts on it,
never trusting the event that queued the key. Raising any :class:`Exception` means "retry
later"; the runner logs it with the key and requeues it rate-limited.
"""


def key_func(obj: Any) -> str:
    """The queue key of an object: ``namespace/name`` (``name`` when cluster-scoped).

    Accepts the tombstones delete handlers receive. Raises :class:`ValueError` for anything
    without ``metadata.name``.
    """
    return meta_namespace_key_func(obj)


_superseded: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar(
    "kcontrol_controller_superseded", default=None
)


def superseded() -> bool:
    """Whether the key being synced in this task has been queued again since its sync
    began: a newer event arrived, and the runner syncs the key once more right after this
    sync ends. A sync may then leave out a write the next one supersedes (a status computed
    from state already outdated). False outside a sync."""
    check = _superseded.get()
    return check is not None and check()


class SupersededWrites:
    """Which keys' last write of a kind (a status a sync ends with) was left to the next
    sync because :func:`superseded` said it comes at once.

    :meth:`leave_out` answers "may this write be left out?": yes when the key was queued
    again during this sync - the sync that follows computes the same write from newer state -
    unless the key's previous such write was already left out. So a key under a steady
    stream of events still gets every other write, and one whose events stop always gets
    the last: what is left out is only a state already outdated when it would have been
    written. Outside a sync (unit tests calling a sync directly) nothing is left out.
    Only for a write nothing decides from: a status the next sync reads back as state (a
    StatefulSet's ``currentRevision``) must be written each time it changes. Belongs to one
    controller and one event loop; :meth:`forget` a key when its object is deleted.
    """

    __slots__ = ("_left_out",)

    def __init__(self) -> None:
        self._left_out: set[str] = set()

    def leave_out(self, key: str) -> bool:
        """True, and remembered, when ``key``'s write may be left out (class docstring);
        False - write it now - otherwise."""
        if key not in self._left_out and superseded():
            self._left_out.add(key)
            return True
        self._left_out.discard(key)
        return False

    def forget(self, key: str) -> None:
        """Drop what is remembered of ``key``."""
        self._left_out.discard(key)

    def __contains__(self, key: object) -> bool:
        """Whether ``key``'s last write was left out."""
        return key in self._left_out


@dataclass(frozen=True, slots=True)
class _Guard:
    check: Callable[[], bool]
    owns: Callable[[str], bool] | None


_guard: contextvars.ContextVar[_Guard | None] = contextvars.ContextVar(
    "kcontrol_controller_guard", default=None
)


@contextlib.contextmanager
def guarded_by(
    check: Callable[[], bool], *, owns: Callable[[str], bool] | None = None
) -> Iterator[None]:
    """Make controllers started in this context sync only while ``check()`` is true, and
    (with ``owns``) only the keys ``owns(key)`` says are this process's.

    The guard is read when :meth:`Controller.run` starts, from the context of the task
    running it (tasks copy their creator's context), so wrap the creation of that task::

        with guarded_by(elector.holds_lease):
            task_group.create_task(controller.run())

    The manager does this with its leader elector's local lease check, so a process that lost
    its lease (paused, partitioned) starts no sync even before it is told to stop. A worker
    whose guard fails puts its key back and waits. A false guard also decides how the
    controller stops: syncs in flight are cancelled rather than drained, because nothing
    started under a lease that is gone may go on; see :class:`Controller`.

    ``owns`` decides who syncs a key before its sync runs: a sharded replica owns the keys
    whose namespace falls in a shard it holds (cluster-scoped keys, namespace ``""``, in the
    one shard ``""`` hashes into). A key it does not own is forgotten and dropped unsynced
    (logged at debug level): its owner has it from its own informers, and syncing it here
    would act on a cache that does not hold that namespace - reading NotFound as "deleted" -
    and run a reconcile's side effects outside the API server on several replicas at once.
    """
    token = _guard.set(_Guard(check, owns))
    try:
        yield
    finally:
        _guard.reset(token)


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerOptions:
    """How a :class:`Controller` runs.

    - ``name``: names the controller in logs and metrics, and the default queue.
    - ``sync``: the :data:`SyncFunc` called for each key.
    - ``workers``: how many keys are synced concurrently (never the same key twice at once).
    - ``queue``: the queue to take keys from; default a :class:`RateLimitingQueue` named
      ``name`` with the default controller rate limiter. Event handlers add keys to it.
    - ``has_synced``: callables (typically ``informer.has_synced``) that must all return true
      before the first sync, so that syncs never act on a partial cache.
    - ``sync_timeout``: seconds each sync may take; past it the sync is cancelled and counts as
      an error. ``None`` (the default) means no limit.
    - ``max_retries``: after this many rate-limited retries of a failing key, it is dropped
      (forgotten and logged) until something adds it again. ``None`` retries forever.
    - ``clock``: times the cache-sync polling, sync durations and timeouts.
    - ``registry``: the Prometheus registry for the controller's and the default queue's
      metrics (default: the global registry).
    - ``cache_sync_period``: seconds between two checks of ``has_synced`` (and of a failing
      guard), as client-go's ``WaitForCacheSync`` polls every 100 ms.
    """

    name: str
    sync: SyncFunc
    workers: int = 1
    queue: RateLimitingQueue[str] | None = None
    has_synced: Sequence[Callable[[], bool]] = field(default_factory=tuple)
    sync_timeout: float | None = None
    max_retries: int | None = None
    clock: Clock | None = None
    registry: CollectorRegistry | None = None
    cache_sync_period: float = 0.1

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a controller needs a name")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.sync_timeout is not None and self.sync_timeout <= 0:
            raise ValueError(f"sync_timeout must be > 0, got {self.sync_timeout}")
        if self.max_retries is not None and self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")


class Controller:
    """Runs ``workers`` tasks that sync the keys of a rate-limited work queue.

    Contract:

    - :meth:`run` blocks until cancelled. It first waits until every ``has_synced`` is true,
      then starts the workers. A key is handed to one worker at a time; a key added while it
      is being synced is synced again afterwards (the queue's guarantee).
    - Each sync runs under ``sync_timeout``. An exception from one key is caught, logged with
      the key, and never stops the worker; ``CancelledError`` always propagates.
    - What happens to a key after its sync is decided in one place: success forgets its
      backoff; ``Result.requeue_after`` forgets it and adds it back after the delay;
      ``Result.requeue`` adds it back rate-limited, and so does
      :class:`~kcontrol.errors.StaleCache` (the cache is behind the controller's own write,
      see :class:`~kcontrol.controller.ConsistencyStore`; logged at debug level, not counted
      as an error) - but that retry is dropped if the key is synced again before it is due,
      typically because the watch event of the very write the cache lacked queued it: the
      sync that event starts is the retry; an error adds it back rate-limited unless
      it has already been retried ``max_retries`` times, in which case it is forgotten and
      logged as dropped. A 409 :class:`~kcontrol.errors.Conflict` is such an error; it is
      logged at info level without a traceback. The key is always marked done.
    - Cancelling :meth:`run` stops taking new keys and shuts the queue down with drain: syncs
      in flight finish (each bounded by ``sync_timeout``), then ``CancelledError`` propagates.
      Cancelling it again while it drains cancels the syncs in flight.
    - If :meth:`run` is started inside :func:`guarded_by`, a worker takes no key while the
      guard is false, and a key it got while the guard turned false is put back unsynced.
      When :meth:`run` is cancelled while the guard is false (leadership lost), syncs in
      flight are cancelled at once instead of drained; if the guard turns false during a
      drain (the lease lost while stopping on SIGTERM), the drain ends the same way at the
      next check of the guard (every ``cache_sync_period``). A guard's ``owns`` drops the
      keys of other processes (sharded replicas) before their sync.

    - While a sync runs, :func:`superseded` tells it whether its key was queued again since
      it began.

    Event handlers feed the queue with :meth:`enqueue` / :meth:`enqueue_object` (cheap and
    non-blocking, as handlers must be). Metrics: see :mod:`kcontrol.controller._metrics`.
    """

    def __init__(self, options: ControllerOptions) -> None:
        self._options = options
        self._name = options.name
        self._clock: Clock = options.clock if options.clock is not None else RealClock()
        self._queue: RateLimitingQueue[str] = (
            options.queue
            if options.queue is not None
            else RateLimitingQueue(name=options.name, clock=self._clock, registry=options.registry)
        )
        self._metrics = ControllerMetrics(options.name, options.workers, options.registry)
        self._log = _log.bind(controller=options.name)
        self._synced = False
        # Set by run() when it is cancelled: workers take no further key.
        self._stopping = False
        # Keys whose last sync met a stale cache and whose rate-limited retry is pending:
        # the next sync of such a key, whatever queued it, makes the retry redundant.
        self._stale_retries: set[str] = set()
        self._running = False

    @property
    def name(self) -> str:
        return self._name

    @property
    def queue(self) -> RateLimitingQueue[str]:
        """The queue the workers take keys from."""
        return self._queue

    def synced(self) -> bool:
        """True once every ``has_synced`` returned true and the workers were started."""
        return self._synced

    def enqueue(self, key: str) -> None:
        """Queue ``key`` for a sync (ignored once the controller is shutting down)."""
        self._queue.add(key)

    def enqueue_after(self, key: str, delay: float) -> None:
        """Queue ``key`` for a sync after ``delay`` seconds."""
        self._queue.add_after(key, delay)

    def enqueue_object(self, obj: Any) -> None:
        """Queue the key of ``obj`` (an object or a delete tombstone); see :func:`key_func`."""
        self._queue.add(key_func(obj))

    async def run(self) -> None:
        """Wait for the caches, then sync keys with ``workers`` tasks until cancelled."""
        if self._running:
            raise RuntimeError(f"controller {self._name!r} is already running")
        self._running = True
        guarded = _guard.get()
        guard = guarded.check if guarded is not None else None
        owns = guarded.owns if guarded is not None else None
        log = self._log
        try:
            log.info("starting controller", workers=self._options.workers)
            await self._wait_for_cache_sync()
        except asyncio.CancelledError:
            self._queue.shutdown()
            log.info("controller stopped before its caches synced")
            raise
        self._synced = True
        log.info("caches are synced; starting workers", workers=self._options.workers)
        async with asyncio.TaskGroup() as workers:
            for index in range(self._options.workers):
                workers.create_task(self._worker(guard, owns), name=f"{self._name}-worker-{index}")
            try:
                await asyncio.get_running_loop().create_future()  # until cancelled
            except asyncio.CancelledError:
                self._stopping = True
                if guard is not None and not guard():
                    log.warning("guard is false (leadership lost): cancelling syncs in flight")
                    self._queue.shutdown()
                    raise  # the task group cancels the workers, and their syncs
                log.info("shutting down; waiting for syncs in flight to finish")
                if await self._drain(guard):
                    log.info("all workers finished")
                else:
                    log.warning(
                        "guard turned false while draining (leadership lost): "
                        "cancelling syncs in flight"
                    )
                raise

    async def _drain(self, guard: Callable[[], bool] | None) -> bool:
        """Shut the queue down and wait for the syncs in flight to finish; True once they
        have. Returns False, with syncs still in flight, as soon as ``guard`` is seen false
        (checked every ``cache_sync_period``)."""
        if guard is None:
            await self._queue.shutdown_with_drain()
            return True
        async with asyncio.TaskGroup() as tasks:
            watching = tasks.create_task(self._end_drain_when_false(guard))
            await self._queue.shutdown_with_drain()  # ended early by _end_drain_when_false
            watching.cancel()  # a no-op if it ended the drain
        return watching.cancelled()

    async def _end_drain_when_false(self, guard: Callable[[], bool]) -> None:
        while guard():
            await self._clock.sleep(self._options.cache_sync_period)
        self._queue.shutdown()  # ends shutdown_with_drain's wait

    async def _wait_for_cache_sync(self) -> None:
        checks = self._options.has_synced
        if all(check() for check in checks):
            return
        self._log.info("waiting for caches to sync")
        while not all(check() for check in checks):
            await self._clock.sleep(self._options.cache_sync_period)

    async def _worker(
        self, guard: Callable[[], bool] | None, owns: Callable[[str], bool] | None
    ) -> None:
        queue = self._queue
        while not self._stopping:
            if guard is not None and not guard():
                await self._clock.sleep(self._options.cache_sync_period)
                continue
            try:
                key = await queue.get()
            except ShutDown:
                return
            try:
                if self._stopping:
                    continue  # got it as run() was cancelled: leave it unsynced (still done)
                if guard is not None and not guard():
                    self._log.info("guard is false; not syncing", key=key)
                    queue.add(key)  # back in line for when the guard passes again
                elif owns is not None and not owns(key):
                    self._log.debug("another process owns this key; not syncing", key=key)
                    queue.forget(key)
                else:
                    await self._process(key)
            finally:
                queue.done(key)

    async def _process(self, key: str) -> None:
        if key in self._stale_retries:
            self._stale_retries.discard(key)
            self._queue.cancel_add_after(key)  # this sync is the retry
        metrics = self._metrics
        clock = self._clock
        started = clock.now()
        metrics.sync_started()
        outcome = SyncOutcome.ERROR
        queue = self._queue
        token = _superseded.set(lambda: queue.is_dirty(key))
        try:
            try:
                async with timeout(clock, self._options.sync_timeout):
                    result = await self._options.sync(key)
            except StaleCache as stale:
                # The cache is behind this controller's own write: expected right after
                # every write, so not an error; synced again once the informer caught up.
                self._log.debug("cache behind own write; requeueing", key=key, reason=str(stale))
                outcome = self._handle_result(key, Result(requeue=True))
                self._stale_retries.add(key)
            except Exception as error:  # one key's failure never stops the worker
                self._handle_error(key, error)
            else:
                outcome = self._handle_result(key, result)
        finally:
            _superseded.reset(token)
            metrics.sync_finished(outcome, clock.now() - started)

    # The retry policy: everything that decides a key's future after its sync is below.

    def _handle_result(self, key: str, result: Result | None) -> str:
        queue = self._queue
        if result is not None and result.requeue_after > 0:
            queue.forget(key)
            queue.add_after(key, result.requeue_after)
            self._log.debug("synced; requeueing after delay", key=key, after=result.requeue_after)
            return SyncOutcome.REQUEUE_AFTER
        if result is not None and result.requeue:
            queue.add_rate_limited(key)
            self._log.debug("synced; requeueing", key=key)
            return SyncOutcome.REQUEUE
        queue.forget(key)
        return SyncOutcome.SUCCESS

    def _handle_error(self, key: str, error: Exception) -> None:
        queue = self._queue
        retries = queue.num_requeues(key)
        max_retries = self._options.max_retries
        if isinstance(error, TimeoutError):
            message = f"sync timed out after {self._options.sync_timeout}s"
        else:
            message = "sync failed"
        if max_retries is None or retries < max_retries:
            if isinstance(error, Conflict):
                # A write from a stale cache, refused as optimistic concurrency means it to
                # be: retried like any error, but routine enough to log without a traceback.
                self._log.info(message, key=key, retries=retries, error=str(error))
            else:
                self._log.error(message, key=key, retries=retries, exc_info=error)
            queue.add_rate_limited(key)
            return
        self._log.error(
            f"{message}; dropping the key after too many retries",
            key=key,
            retries=retries,
            exc_info=error,
        )
        queue.forget(key)
