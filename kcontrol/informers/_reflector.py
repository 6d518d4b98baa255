"""The reflector: keeps a store in step with the server by LIST then WATCH, forever.

A port of client-go's ``tools/cache.Reflector``. One :meth:`Reflector.run` call lists the
resource, replaces the store's content with the result, then watches from the list's
resourceVersion and applies each event to the store, re-watching from the last seen
resourceVersion whenever a watch ends. It returns only when cancelled.

Every request is derived (:func:`dataclasses.replace`) from the reflector's ``list_options``,
which select the collection: the reflector adds the resourceVersion, ``limit`` and continue
token of each LIST page, and the resourceVersion, timeout, bookmarks and streaming-list options
of each watch.

Which resourceVersion a LIST uses (as upstream):

- the first list asks for ``"0"``: any recent state, served from the apiserver's watch cache
  (``""``, a consistent read, with ``ReflectorOptions.consistent_first_list``);
- later lists ask for the last synced resourceVersion ("no older than what we have seen"),
  so a relist never travels back in time;
- when a list answers 410 Gone / Expired or "too large resource version", the version is
  marked unavailable and the list is retried at once with ``""`` (a quorum read).

A watch that ends with 410 Gone leads to a relist from the last synced version (upstream
does not drop the version here: a LIST at it returns data at least that fresh, from the
watch cache; only if that LIST is refused too does the reflector fall back to ``""``).

Paging follows client-go's pager: pages of ``page_size`` (500) for lists at ``"0"`` and
``""``; lists pinned to an exact resourceVersion are not paged, so the watch cache can serve
them, unless the first ``"0"`` list came back paged (then the server has no watch cache for
this resource and paging is kept). An explicit ``ReflectorOptions.page_size`` always applies;
the server reads a paged LIST at a resourceVersion exactly at that version, so such a relist
shows the state the reflector already had and the watch resumed from it brings the rest.
If a continue token expires mid-list, the list is redone in one piece at the same version.

Failures never end :meth:`Reflector.run`; every one is logged and retried:

- 429 Too Many Requests (including "storage is (re)initializing") and connection errors on
  a watch: back off, honouring ``Retry-After``, and re-watch from the last version, no relist;
- a watch with no event at all (bookmarks included) for ``watch_inactivity_timeout``
  (default 70 s, just over the apiserver's ~60 s bookmark interval) is presumed dead - a
  half-open TCP connection - and is abandoned and re-opened from the last version;
- an internal error (500) in an open watch's stream, with
  ``ReflectorOptions.max_internal_error_retry_duration`` set: re-watch at once from the last
  version, for as long as such errors keep coming within that many seconds of the first
  (client-go's ``MaxInternalErrorRetryDuration``; a minute without one starts a new window).
  It is 0 by default, as in client-go, where only the apiserver's own watch cache sets it;
- a LIST answered 404 Not Found: the server does not serve the resource (yet) - a CRD not
  installed, or not established. The reflector says so once at INFO, lists again every
  ``ReflectorOptions.not_served_retry_period`` (2 s) without backing off, so it syncs within
  that period of the resource being served, and says so once at INFO when it has synced.
  A streaming list answered 404 falls back to that LIST without a warning;
- anything else (a failed LIST, 410 on a watch, 403, 500, a bug), and a watch that the
  server closes after less than a second without a single event (client-go's
  ``VeryShortWatchError``): back off, then list again.

Transform: a ``transform`` given to the reflector is applied to every object the moment it
is decoded - each LIST item (the reader decodes items one by one for it), each initial event
of a streaming list and each watch event - so the untransformed objects of a large list are
never all alive at once. It is applied exactly once per object received; an object it raises
on is logged and dropped, like an event the store refuses (in a LIST, the whole list fails
and is retried). After it, string values are interned
(``ReflectorOptions.intern_strings``, on by default), so equal values share memory across
the cache.

The cyclic GC is paused (:class:`kcontrol._gc.GcPause`) while a list is decoded and stored,
never while the reflector waits for the server, and the sync is then settled in one pass
(:mod:`kcontrol._gc`, which also caps every pause at ``MAX_PAUSE`` seconds): collecting in
the middle only walks fresh objects that hold no cycles, again and again. Only the first
sync may settle with ``gc.freeze()``. Each way of listing owns its pause: the LIST's
:class:`~kcontrol.informers._pager.ListPager` and the streaming list's
:class:`~kcontrol.informers._watch_list.InitialEvents` (their modules give the details).

The watch phase - from the store update of a list (or streaming list) to the end of the
watching that follows - is exposed as :attr:`Reflector.watching_since`; informers run
their handlers' resyncs only in it, as client-go runs its resync timer only while watching.

Backoff is :class:`~kcontrol.informers.ExponentialBackoff` with client-go's reflector
settings: 0.8 s doubling to a 30 s base, +[0, 100 %) jitter, reset after 2 min without a
failure.

Streaming list (``ReflectorOptions.use_watch_list``, off by default): instead of a LIST the
reflector opens a watch that first delivers the current state, collected by
:class:`~kcontrol.informers._watch_list.InitialEvents` (its module describes the protocol and
its GC pause), replaces the store with it and keeps using the same stream as its watch. If
the stream fails before the initial state is complete, the reflector falls back to a plain
LIST for that cycle. It is off by default because it needs server and client support
(Kubernetes >= 1.32 and a client that passes ``send_initial_events``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kcontrol.client import ListOptions, Object, Reader, Resource, ShardSelector, WatchEvent
from kcontrol.client._decode import list_items_decoded_by
from kcontrol.client._fields import field_sets_dropped
from kcontrol.clock import Clock, RealClock, timeout
from kcontrol.errors import (
    ApiConnectionError,
    ApiError,
    InactivityTimeoutError,
    InternalError,
    NotFound,
    TooManyRequests,
    api_error_from_status,
    is_resource_expired,
)
from kcontrol.informers._backoff import BackoffManager, ExponentialBackoff
from kcontrol.informers._fieldsets import drops_managed_fields, list_item_decoder
from kcontrol.informers._intern import intern_strings
from kcontrol.informers._pager import ListPager
from kcontrol.informers._shard_filter import ShardFilter
from kcontrol.informers._watch_list import REQUEST_OPTIONS, InitialEvents
from kcontrol.logging import get_logger

__all__ = [
    "Reflector",
    "ReflectorOptions",
    "ReflectorStore",
    "TransformFunc",
    "WatchErrorHandler",
    "selection_options",
]

_log = get_logger(__name__)

DEFAULT_PAGE_SIZE = 500
SHORT_WATCH = 1.0
"""A watch closed by the server sooner than this (seconds) with no events is a failure."""
INTERNAL_ERROR_QUIET_RESET = 60.0
"""Seconds without an internal error after which the internal-error retry window restarts."""
_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})
MAX_RETRY_AFTER = 120.0
"""Longest ``Retry-After`` (seconds) honoured; protects against a bogus proxy header."""

TransformFunc = Callable[[Object], Object]
"""Applied to every object before it is stored (and before handlers see it). It may return
the object it got, changed in place (objects arrive freshly decoded and not yet shared), or a
new one. Typical use: drop ``metadata.managedFields`` or a Secret's data to save memory
(:func:`~kcontrol.informers.strip_managed_fields`). Called once per object received."""

WatchErrorHandler = Callable[[Exception], object]
"""Called with every error that ends a LIST or a watch, before the reflector backs off and
retries. For visibility only; must return quickly."""


class ReflectorStore(Protocol):
    """Where a reflector writes: the informer's delta processor, or anything else.

    ``add``/``update``/``delete`` receive watch events in server order. ``replace`` receives a
    complete LIST (or streamed initial state) and the resourceVersion it was taken at.
    """

    def add(self, obj: Object) -> None: ...

    def update(self, obj: Object) -> None: ...

    def delete(self, obj: Object) -> None: ...

    async def replace(self, items: list[Object], resource_version: str) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ReflectorOptions:
    """Tuning knobs of a :class:`Reflector`; the defaults are client-go's (but for
    ``not_served_retry_period`` and ``intern_strings``, which client-go does not have)."""

    page_size: int | None = None
    """LIST ``limit``. ``None``: 500 with client-go's pager rules (see the module docstring);
    an int: always that size; ``0``: never page."""
    min_watch_timeout: float = 300.0
    """Each watch asks the server to end it after a random ``[min, 2*min)`` seconds."""
    watch_inactivity_timeout: float = 70.0
    """Abandon a watch that delivered nothing (not even a bookmark) for this long."""
    use_watch_list: bool = False
    """Fetch the initial state with a streaming list instead of LIST (falls back on error)."""
    backoff_initial: float = 0.8
    """First wait after a failure (seconds); doubles with each failure in a row."""
    backoff_cap: float = 30.0
    """Longest wait between retries before jitter (seconds); ``Retry-After`` may exceed it."""
    max_internal_error_retry_duration: float = 0.0
    """How long (seconds from the first of a series) internal errors in an open watch's
    stream are answered by re-watching at once rather than by a relist after a backoff;
    client-go's ``MaxInternalErrorRetryDuration``. 0: never (client-go's default)."""
    not_served_retry_period: float = 2.0
    """While the server does not serve the resource (a LIST answered 404: a CRD not installed
    yet), list again every this many seconds - a fixed period, not the backoff, so the
    reflector syncs within it of the resource being served. Must be > 0."""
    consistent_first_list: bool = False
    """List first at ``""`` (a consistent read: everything written before the request) rather
    than at ``"0"`` (whatever the apiserver's watch cache holds, possibly a little behind).
    For informers started while a controller is already at work, e.g. a sharded replica's
    when its shards change hands: a controller must not act on a cache that misses a write
    completed before it started (its own previous set's, or another replica's before it gave
    the shard back). The apiserver serves it from the watch cache once that has caught up
    (``ConsistentListFromCache``), else from etcd. Not in client-go, whose informers all
    start with the process."""
    intern_strings: bool = True
    """Intern the string values of every object received, after the transform
    (:func:`~kcontrol.informers.intern_strings`): less memory per cached object for a little
    CPU per object received (measured: docs/benchmarks.md). Not in client-go (Go's structs
    are compact enough without)."""
    name: str = ""
    """Shown in logs; defaults to the resource and namespace."""

    def __post_init__(self) -> None:
        if self.not_served_retry_period <= 0:
            raise ValueError("not_served_retry_period must be > 0")


@dataclass(slots=True)
class _Stream:
    """Book-keeping for one watch request."""

    initial_events: bool
    """True while this stream is delivering a streaming list's initial state."""
    events: int = 0
    opened: bool = False
    """The server accepted the request (errors after this came in the stream)."""


class _InitialEventsIncompleteError(Exception):
    """A streaming list ended before its initial-events-end bookmark."""


class _ResourceNotServedError(Exception):
    """A LIST answered 404: the server does not serve the resource. The cause is the
    :class:`~kcontrol.errors.NotFound`."""


class _VeryShortWatchError(Exception):
    """The server closed a watch within a second without sending a single event."""


class _InternalErrorRetry:
    """client-go's ``RetryWithDeadline`` for internal errors: retry while they come within
    ``max_duration`` of the first of a series; a series ends after a quiet minute."""

    def __init__(self, clock: Clock, max_duration: float) -> None:
        self._clock = clock
        self._max_duration = max_duration
        self._first: float | None = None
        self._last: float | None = None

    def should_retry(self, error: Exception) -> bool:
        if not isinstance(error, InternalError):
            return False
        now = self._clock.now()
        if self._last is None or now - self._last >= INTERNAL_ERROR_QUIET_RESET:
            self._first = now
        self._last = now
        if self._max_duration <= 0:
            return False
        assert self._first is not None
        if now - self._first <= self._max_duration:
            return True
        self._first = self._last = None
        return False


class Reflector:
    """Lists and watches ``resource`` into ``store``; see the module docstring.

    ``list_options`` selects the collection (``label_selector``, ``field_selector``,
    ``shard_selector``); every
    LIST and watch request is derived from it. The other fields - resourceVersion, limit,
    continue token, timeout, bookmarks, streaming list - are the reflector's to choose per
    request: setting one raises :class:`ValueError`.
    """

    def __init__(
        self,
        reader: Reader,
        resource: Resource,
        store: ReflectorStore,
        *,
        namespace: str | None = None,
        list_options: ListOptions | None = None,
        options: ReflectorOptions | None = None,
        clock: Clock | None = None,
        backoff: BackoffManager | None = None,
        watch_error_handler: WatchErrorHandler | None = None,
        transform: TransformFunc | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._reader = reader
        self._resource = resource
        self._namespace = namespace if resource.namespaced else None
        self._list_options = selection_options(list_options)
        self._options = options or ReflectorOptions()
        self._clock: Clock = clock or RealClock()
        self._backoff = backoff or ExponentialBackoff(
            self._clock, initial=self._options.backoff_initial, cap=self._options.backoff_cap
        )
        self._watch_error_handler = watch_error_handler
        self._transform = _with_interning(transform) if self._options.intern_strings else transform
        self._decoding = (
            field_sets_dropped if drops_managed_fields(transform) else contextlib.nullcontext
        )
        self._item_decoder = list_item_decoder(transform)
        self._rng = rng or random.Random()
        self._log = _log.bind(
            reflector=self._options.name
            or (f"{resource.plural}/{self._namespace}" if self._namespace else resource.plural)
        )
        self._shard_filter: ShardFilter | None = None
        self._store = store
        if self._list_options.shard_selector:
            shard = ShardSelector.parse(self._list_options.shard_selector)
            self._shard_filter = ShardFilter(store, shard, self._log)
            self._store = self._shard_filter
        # The version of the newest state applied to the store ("" before the first list).
        self._last_sync_rv = ""
        # True after the server refused _last_sync_rv as expired or too large: the next list
        # or streaming list must use "" (a quorum read) to make progress.
        self._rv_unavailable = False
        # True once a list at "0" came back paged: the server does not serve this resource
        # from its watch cache, so later pinned lists are paged too.
        self._paginated_result = False
        # True once a list or streaming list has been stored (only the first may freeze).
        self._synced_once = False
        # True from a LIST answered 404 to the next LIST that succeeds: while it holds, the
        # reflector lists every not_served_retry_period and logs nothing more about it.
        self._not_served = False
        # Invariant: _watching_since is not None exactly while _watching is set, i.e. from
        # the store update of a list to the end of the watching that follows it.
        self._watching_since: float | None = None
        self._watching = asyncio.Event()
        self.watch_events = 0
        """Watch events received so far (bookmarks and initial events included): what this
        reflector's watches carried, e.g. a sharded replica's share."""

    @property
    def filters_shard_locally(self) -> bool:
        """Whether the server sent objects outside the shard selector, which this reflector
        then drops itself (:mod:`kcontrol.informers._shard_filter`)."""
        return self._shard_filter is not None and self._shard_filter.local

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion of the newest list, event or bookmark applied to the store."""
        return self._last_sync_rv

    @property
    def watching_since(self) -> float | None:
        """When (clock time) the current watch phase began: the store was filled by a list
        or streaming list and the reflector went on watching. None while it lists, backs
        off before listing, or has not synced yet."""
        return self._watching_since

    async def wait_until_watching(self) -> None:
        """Return once :attr:`watching_since` is set (at once if it is)."""
        await self._watching.wait()

    async def run(self) -> None:
        """List and watch until cancelled. Never returns otherwise, never raises otherwise."""
        self._log.debug("reflector starting")
        with self._decoding():  # a transform that drops managedFields: no need to keep them
            await self._run()

    async def _run(self) -> None:
        while True:
            error: Exception | None = None
            try:
                await self._list_and_watch()
            except asyncio.CancelledError:
                raise
            except _ResourceNotServedError as err:
                self._report_not_served(err)
                await self._clock.sleep(self._options.not_served_retry_period)
                continue
            except Exception as err:
                error = err
                self._report(err, "list and watch failed")
            await self._back_off(error)

    # -- list --------------------------------------------------------------------------------

    async def _list_and_watch(self) -> None:
        """One cycle: get the full state, then watch until a relist is needed."""
        try:
            if self._options.use_watch_list:
                await self._watch_loop(_Stream(initial_events=True))
            else:
                await self._list()
                await self._watch_loop(_Stream(initial_events=False))
        finally:
            self._watching_since = None
            self._watching.clear()

    def _start_watching(self) -> None:
        """The store holds a list (or streaming list): the watch phase begins."""
        self._watching_since = self._clock.now()
        self._watching.set()
        if self._not_served:
            self._not_served = False
            self._log.info("resource served now, synced", **self._resource_fields())

    def _relist_resource_version(self) -> str:
        if self._rv_unavailable:
            return ""
        if self._last_sync_rv:
            return self._last_sync_rv
        return "" if self._options.consistent_first_list else "0"

    async def _list(self) -> None:
        """List into the store; the watch phase begins when it returns."""
        pager = ListPager(
            self._reader,
            self._resource,
            namespace=self._namespace,
            options=self._list_options,
            transform=self._transform,
            clock=self._clock,
            log=self._log,
        )
        decoding = (
            contextlib.nullcontext()
            if self._item_decoder is None
            else list_items_decoded_by(self._item_decoder)
        )
        try:
            with pager, decoding:
                await self._list_into_store(pager)
        except NotFound as err:
            raise _ResourceNotServedError(str(err)) from err
        self._start_watching()

    async def _list_into_store(self, pager: ListPager) -> None:
        resource_version = self._relist_resource_version()
        try:
            listed = await pager.list(resource_version, self._page_limit(resource_version))
        except Exception as err:
            if not is_resource_expired(err):
                raise
            self._log.info("list at resourceVersion refused, relisting", rv=resource_version)
            self._rv_unavailable = True
            resource_version = self._relist_resource_version()
            listed = await pager.list(resource_version, self._page_limit(resource_version))
        if resource_version == "0" and listed.paginated:
            self._paginated_result = True
        self._rv_unavailable = False
        # Items arrive with kind/apiVersion filled in: the Reader contract for a transform.
        await pager.replace(self._store.replace, listed, freeze=not self._synced_once)
        self._synced_once = True
        self._last_sync_rv = listed.resource_version
        self._log.debug("list synced", items=len(listed.items), rv=listed.resource_version)

    def _page_limit(self, resource_version: str) -> int | None:
        size = self._options.page_size
        if size is not None:
            return size or None
        if resource_version in ("", "0") or self._paginated_result:
            return DEFAULT_PAGE_SIZE
        return None

    # -- watch -------------------------------------------------------------------------------

    async def _watch_loop(self, stream: _Stream) -> None:
        """Watch, re-watching as needed. Returns when a relist is needed, or raises the error
        that makes one needed; either way :meth:`run` backs off before listing again."""
        internal_errors = _InternalErrorRetry(
            self._clock, self._options.max_internal_error_retry_duration
        )
        while True:
            start = self._clock.now()
            try:
                await self._watch(stream)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                if stream.initial_events:
                    if isinstance(err, NotFound):  # the LIST says whether it is served
                        self._log.debug("streaming list: resource not found, trying LIST")
                    else:
                        self._report(err, "streaming list failed, falling back to LIST")
                    if is_resource_expired(err):
                        self._rv_unavailable = True
                    await self._list()
                elif is_resource_expired(err):
                    self._log.info("watch expired, relisting", error=str(err))
                    self._notify_error(err)
                    return
                elif isinstance(err, InactivityTimeoutError):
                    self._report(err, "watch silent for too long, restarting it")
                elif isinstance(err, TooManyRequests | ApiConnectionError | OSError):
                    # OSError: a connection failure the client did not translate.
                    self._report(err, "watch failed, backing off")
                    await self._back_off(err)
                elif stream.opened and internal_errors.should_retry(err):
                    self._report(err, "internal error in the watch, re-watching")
                else:
                    raise
            else:
                if stream.events == 0 and self._clock.now() - start < SHORT_WATCH:
                    error = _VeryShortWatchError(
                        "very short watch: closed within a second without any event"
                    )
                    self._log.warning("very short watch, relisting", error=str(error))
                    self._notify_error(error)
                    return
            stream = _Stream(initial_events=False)

    async def _watch(self, stream: _Stream) -> None:
        """One watch request, applied event by event to the store until it ends."""
        timeout_seconds = int(self._options.min_watch_timeout * (self._rng.random() + 1.0))
        extra: dict[str, Any] = {}
        if stream.initial_events:
            extra = REQUEST_OPTIONS
            resource_version = "" if self._rv_unavailable else self._last_sync_rv
        else:
            resource_version = self._last_sync_rv
        options = dataclasses.replace(
            self._list_options,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            allow_watch_bookmarks=True,
            **extra,
        )
        request = self._reader.watch(self._resource, namespace=self._namespace, options=options)
        if not stream.initial_events:
            await self._stream_events(stream, request, None)
            return
        with InitialEvents(self._transformed, clock=self._clock) as initial:
            await self._stream_events(stream, request, initial)
        if stream.initial_events:
            raise _InitialEventsIncompleteError(
                "the stream ended before the initial-events-end bookmark"
            )

    async def _stream_events(
        self,
        stream: _Stream,
        request: contextlib.AbstractAsyncContextManager[AsyncIterator[WatchEvent]],
        initial: InitialEvents | None,
    ) -> None:
        """Apply one stream's events; ``initial`` collects a streaming list's first part.

        A stream silent for ``watch_inactivity_timeout`` (opening it included: a half-open
        connection can hang there) raises :class:`InactivityTimeoutError`.
        """
        now, inactivity = self._clock.now, self._options.watch_inactivity_timeout
        watchdog = timeout(self._clock, inactivity)
        try:
            async with watchdog, request as events:
                stream.opened = True
                async for event in events:
                    watchdog.reschedule(now() + inactivity)
                    stream.events += 1
                    self.watch_events += 1
                    if event[0] == "ERROR":  # clients raise these themselves; be safe anyway
                        status = event[1]
                        raise api_error_from_status(int(status.get("code") or 500), status)
                    if initial is None:
                        self._apply(event)
                    elif initial.add(event):  # the end of the initial state
                        await self._store_initial_events(initial)
                        initial = None
                        stream.initial_events = False
                        watchdog.reschedule(now() + inactivity)
        except TimeoutError as error:
            if watchdog.expired():
                raise InactivityTimeoutError(f"no activity for {inactivity:g} s") from error
            raise

    def _transformed(self, kind: str, obj: Object) -> Object | None:
        """``obj`` after the transform; None (logged) if the transform failed on it."""
        if self._transform is None or kind == "BOOKMARK":
            return obj
        try:
            return self._transform(obj)
        except Exception:
            self._log.exception("transform failed, dropping the object", type=kind)
            return None

    def _apply(self, event: WatchEvent) -> None:
        kind, received = event
        if kind not in _EVENT_TYPES:
            self._log.warning("ignoring watch event of unknown type", type=kind)
            return
        obj = self._transformed(kind, received)
        if obj is None:
            obj = received  # dropped; still advance the resourceVersion below
        else:
            self._apply_transformed(kind, obj)
        resource_version = (obj.get("metadata") or {}).get("resourceVersion")
        if resource_version:
            self._last_sync_rv = resource_version

    def _apply_transformed(self, kind: str, obj: Object) -> None:
        try:
            if kind == "ADDED":
                self._store.add(obj)
            elif kind == "MODIFIED":
                self._store.update(obj)
            elif kind == "DELETED":
                self._store.delete(obj)
        except Exception:
            # Upstream drops an event the store refuses and keeps going.
            self._log.exception("store rejected a watch event", type=kind)

    async def _store_initial_events(self, initial: InitialEvents) -> None:
        self._rv_unavailable = False
        items, resource_version = await initial.replace(
            self._store.replace, freeze=not self._synced_once
        )
        self._synced_once = True
        self._last_sync_rv = resource_version
        self._start_watching()
        self._log.debug("streaming list synced", items=items, rv=resource_version)

    # -- failures ----------------------------------------------------------------------------

    async def _back_off(self, error: BaseException | None) -> None:
        delay = self._backoff.next_delay()
        if isinstance(error, ApiError) and error.retry_after:
            delay = max(delay, min(error.retry_after, MAX_RETRY_AFTER))
        await self._clock.sleep(delay)

    def _report(self, error: Exception, message: str) -> None:
        if isinstance(error, TooManyRequests | ApiConnectionError | OSError):
            self._log.warning(message, error=str(error))
        elif isinstance(error, ApiError):
            self._log.warning(message, error=str(error), code=error.code, reason=error.reason)
        else:
            self._log.error(message, exc_info=error)
        self._notify_error(error)

    def _report_not_served(self, error: _ResourceNotServedError) -> None:
        """Log the first LIST answered 404 in a row at INFO, the later ones at DEBUG."""
        fields = self._resource_fields()
        period = self._options.not_served_retry_period
        if not self._not_served:
            self._not_served = True
            self._log.info(
                "resource not served yet, checking again", every_seconds=period, **fields
            )
        else:
            self._log.debug("resource still not served", **fields)
        not_found = error.__cause__
        self._notify_error(not_found if isinstance(not_found, NotFound) else error)

    def _resource_fields(self) -> dict[str, str]:
        return {
            "group": self._resource.group,
            "version": self._resource.version,
            "resource": self._resource.plural,
        }

    def _notify_error(self, error: Exception) -> None:
        if self._watch_error_handler is None:
            return
        try:
            self._watch_error_handler(error)
        except Exception:
            self._log.exception("watch error handler failed")


def selection_options(options: ListOptions | None) -> ListOptions:
    """The options that select a reflector's collection: ``options`` (None: everything),
    checked to hold nothing but the selectors."""
    if options is None:
        return ListOptions()
    selectors = ListOptions(
        label_selector=options.label_selector,
        field_selector=options.field_selector,
        shard_selector=options.shard_selector,
    )
    if options != selectors:
        raise ValueError(
            "a reflector's list_options select the collection (label_selector, "
            "field_selector, shard_selector); it chooses the rest of each request itself: "
            f"{options!r}"
        )
    return options


def _with_interning(transform: TransformFunc | None) -> TransformFunc:
    if transform is None:
        return intern_strings

    def transformed_and_interned(obj: Object) -> Object:
        return intern_strings(transform(obj))

    return transformed_and_interned
