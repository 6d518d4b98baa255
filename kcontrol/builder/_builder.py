"""The controller builder: one call wires one controller (controller-runtime's ``pkg/builder``).

::

    controller_managed_by(manager).for_(WEBSITES).owns(DEPLOYMENTS).owns(SERVICES).complete(
        reconcile
    )

says "reconcile Websites; wake a Website when it changes or when a Deployment or Service it
controls changes". The builder only wires what the library already has: each ``for_`` /
``owns`` / ``watches`` becomes a shared informer from the manager's
:class:`~kcontrol.informers.SharedInformerFactory` (two controllers watching Deployments share
one watch and one cache) with an :class:`~kcontrol.builder.EnqueueHandler`, and the reconcile
runs in a :class:`~kcontrol.controller.Controller` (rate-limited queue, workers, retries,
metrics) that waits for every one of those caches before its first reconcile.

The builder makes a :class:`~kcontrol.manager.ControllerSpec`: :meth:`ControllerBuilder.complete`
adds it to a :class:`~kcontrol.manager.Manager`; :meth:`ControllerBuilder.build` returns it, for
a package that registers its controllers with ``kcontrol-manager`` through entry points.

Defaults, and why:

- ``workers`` 5: kube-controller-manager's ``--concurrent-*-syncs`` default. One worker
  (controller-runtime's default) makes a reconcile that waits on the API server the
  bottleneck of a bulk change; a key is still never reconciled by two workers at once.
- the default controller rate limiter (per-key exponential 5 ms .. 1000 s, overall 10 qps
  burst 100), retries without limit, no reconcile timeout - client-go's and
  controller-runtime's defaults.
- ``owns`` maps through the controller reference only, and watches every object of the kind
  (no label selector): an owned object without the operator's labels is still seen.
- read your own writes: every write a reconcile makes of the ``for_`` kind or an owned kind -
  through any client - is recorded in the controller's
  :class:`~kcontrol.controller.ConsistencyStore`, and the next reconcile of the same key waits
  (retried with backoff) until those informers have seen it. So a reconcile never acts on a
  cache older than its own last write: no status patch sent again because the cache still
  shows the old one, no update refused with 409 for a version it replaced itself. Kinds
  added with ``watches`` are not tracked (their informer may never see a write outside its
  selector).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Self

from kcontrol.builder._handlers import (
    EnqueueHandler,
    MapFunc,
    enqueue_for_object,
    enqueue_for_owner,
)
from kcontrol.builder._predicates import Predicate
from kcontrol.builder._request import Finalize, Reconcile, Request
from kcontrol.client import Object, Resource, Writer, deep_copy
from kcontrol.controller import ConsistencyStore, Controller, ControllerOptions, Result
from kcontrol.controllerutil import (
    add_finalizer,
    contains_finalizer,
    patch_finalizers,
    remove_finalizer,
)
from kcontrol.errors import NotFound
from kcontrol.informers import Lister, SharedIndexInformer
from kcontrol.manager import ControllerContext, ControllerSpec, Manager
from kcontrol.workqueue import RateLimiter, RateLimitingQueue

__all__ = ["DEFAULT_WORKERS", "ControllerBuilder", "controller_managed_by"]

DEFAULT_WORKERS = 5
"""Reconciles run at once by a builder's controller unless ``with_options(workers=)`` says
otherwise (module docstring)."""

ReconcileFactory = Callable[[ControllerContext], Reconcile]
"""Builds the reconcile once the manager gives the controller its context (client, informers,
recorder): what :meth:`ControllerBuilder.build` takes."""


@dataclass(frozen=True, slots=True)
class _Watch:
    resource: Resource
    map_func: MapFunc
    predicates: tuple[Predicate, ...]
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    metadata_only: bool = False

    def informer(self, ctx: ControllerContext) -> SharedIndexInformer:
        return ctx.informers.for_resource(
            self.resource,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            metadata_only=self.metadata_only,
        )


@dataclass(frozen=True, slots=True)
class _Finalizer:
    name: str
    finalize: Finalize


def controller_managed_by(manager: Manager) -> ControllerBuilder:
    """A builder whose :meth:`~ControllerBuilder.complete` adds the controller to ``manager``
    (controller-runtime's ``ControllerManagedBy``)."""
    return ControllerBuilder(manager=manager)


class ControllerBuilder:
    """Collects one controller's watches and options; see the module docstring.

    Every method but :meth:`build` / :meth:`complete` returns the builder, to chain. Exactly
    one :meth:`for_` is required. The controller's name defaults to the lower-cased kind of
    the ``for_`` resource (``website``); it names the queue, the metrics, the log lines and
    the events' source, and must be unique in a manager.
    """

    def __init__(self, name: str | None = None, *, manager: Manager | None = None) -> None:
        self._name = name
        self._manager = manager
        self._for: _Watch | None = None
        self._watches: list[_Watch] = []
        self._global_predicates: tuple[Predicate, ...] = ()
        self._workers = DEFAULT_WORKERS
        self._rate_limiter: RateLimiter[str] | None = None
        self._max_retries: int | None = None
        self._sync_timeout: float | None = None
        self._finalizer: _Finalizer | None = None

    # -- what to watch ---------------------------------------------------------------------

    def named(self, name: str) -> Self:
        """Name the controller (default: the ``for_`` kind, lower-cased)."""
        self._name = name
        return self

    def for_(
        self,
        resource: Resource,
        *,
        predicates: Sequence[Predicate] = (),
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> Self:
        """Reconcile objects of ``resource``: each event enqueues the object's own request.

        ``namespace`` and the selectors narrow the informer (and so the objects reconciled
        on their own events); ``metadata_only`` caches only their metadata.
        """
        if self._for is not None:
            raise ValueError("for_() may be called only once; use watches() for more kinds")
        self._for = _Watch(
            resource,
            enqueue_for_object,
            tuple(predicates),
            namespace,
            label_selector,
            field_selector,
            metadata_only,
        )
        return self

    def owns(
        self,
        resource: Resource,
        *,
        predicates: Sequence[Predicate] = (),
        only_controller: bool = True,
        metadata_only: bool = False,
    ) -> Self:
        """Also reconcile the owner (of the ``for_`` kind) of every ``resource`` object that
        changes or is deleted: objects the reconcile creates with
        :func:`~kcontrol.controllerutil.set_controller_reference`. Any kind may own any
        kind, cluster-scoped owners included; ``only_controller=False`` follows every owner
        reference of the ``for_`` kind, not just the controller's."""
        self._watches.append(
            _Watch(
                resource,
                _LateOwner(self, only_controller),
                tuple(predicates),
                metadata_only=metadata_only,
            )
        )
        return self

    def watches(
        self,
        resource: Resource,
        map_func: MapFunc,
        *,
        predicates: Sequence[Predicate] = (),
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> Self:
        """Also reconcile the requests ``map_func(obj)`` returns for each ``resource`` event
        (old and new object on an update)."""
        self._watches.append(
            _Watch(
                resource,
                map_func,
                tuple(predicates),
                namespace,
                label_selector,
                field_selector,
                metadata_only,
            )
        )
        return self

    def with_event_filter(self, *predicates: Predicate) -> Self:
        """Predicates applied to the events of every watched kind, before their own."""
        self._global_predicates += predicates
        return self

    def with_options(
        self,
        *,
        workers: int | None = None,
        rate_limiter: RateLimiter[str] | None = None,
        max_retries: int | None = None,
        sync_timeout: float | None = None,
    ) -> Self:
        """The controller's options (see :class:`~kcontrol.controller.ControllerOptions`):
        ``workers`` reconciles at once (default :data:`DEFAULT_WORKERS`), the queue's
        ``rate_limiter``, ``max_retries`` before a failing request is dropped (default: never
        dropped) and ``sync_timeout`` seconds per reconcile (default: none)."""
        if workers is not None:
            if workers < 1:
                raise ValueError(f"workers must be >= 1, got {workers}")
            self._workers = workers
        if rate_limiter is not None:
            self._rate_limiter = rate_limiter
        if max_retries is not None:
            self._max_retries = max_retries
        if sync_timeout is not None:
            self._sync_timeout = sync_timeout
        return self

    def finalize(self, finalize: Finalize, *, finalizer: str) -> Self:
        """Keep ``finalizer`` on every ``for_`` object, and call ``finalize(request)`` once
        one is being deleted; the finalizer is removed when ``finalize`` succeeds.

        The controller adds the finalizer before the first reconcile of an object that lacks
        it. While an object is being deleted only ``finalize`` is called, never the
        reconcile. ``finalizer`` is a qualified name (``demo.example.com/cleanup``).
        """
        if "/" not in finalizer:
            raise ValueError(f"finalizer {finalizer!r} must be qualified: <domain>/<name>")
        self._finalizer = _Finalizer(finalizer, finalize)
        return self

    # -- the result ------------------------------------------------------------------------

    @property
    def name(self) -> str:
        if self._name:
            return self._name
        if self._for is None:
            raise ValueError("a controller needs for_() (or a name)")
        return self._for.resource.kind.lower()

    def build(self, new_reconcile: ReconcileFactory) -> ControllerSpec:
        """The :class:`~kcontrol.manager.ControllerSpec` of this controller: its factory makes
        ``new_reconcile(ctx)``'s reconcile and wires it when the manager builds controllers."""
        if self._for is None:
            raise ValueError(f"controller {self._name or '?'}: for_() is required")
        return ControllerSpec(self.name, _Wiring(self, new_reconcile))

    def complete(self, reconcile: Reconcile) -> Reconcile:
        """Add this controller, running ``reconcile``, to the builder's manager; returns
        ``reconcile`` unchanged, so ``complete`` also works as a decorator."""
        if self._manager is None:
            raise ValueError("complete() needs a manager: use controller_managed_by(manager)")
        self._manager.add(self.build(lambda ctx: reconcile))
        return reconcile

    # -- used by the wiring ----------------------------------------------------------------

    def _snapshot(self) -> _Snapshot:
        assert self._for is not None
        return _Snapshot(
            name=self.name,
            for_=self._for,
            watches=tuple(self._watches),
            global_predicates=self._global_predicates,
            workers=self._workers,
            rate_limiter=self._rate_limiter,
            max_retries=self._max_retries,
            sync_timeout=self._sync_timeout,
            finalizer=self._finalizer,
        )


class _LateOwner:
    """``enqueue_for_owner`` of the builder's ``for_`` kind, resolved when first called (so
    ``owns`` may come before ``for_`` in the chain)."""

    def __init__(self, builder: ControllerBuilder, only_controller: bool) -> None:
        self._builder = builder
        self._only_controller = only_controller
        self._map: MapFunc | None = None

    def __call__(self, obj: Object) -> Any:
        if self._map is None:
            owner = self._builder._for
            assert owner is not None
            self._map = enqueue_for_owner(owner.resource, only_controller=self._only_controller)
        return self._map(obj)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Snapshot:
    name: str
    for_: _Watch
    watches: tuple[_Watch, ...]
    global_predicates: tuple[Predicate, ...]
    workers: int
    rate_limiter: RateLimiter[str] | None
    max_retries: int | None
    sync_timeout: float | None
    finalizer: _Finalizer | None


class _Wiring:
    """The spec's factory: informers, handlers and the runner for one manager."""

    def __init__(self, builder: ControllerBuilder, new_reconcile: ReconcileFactory) -> None:
        self._config = builder._snapshot()
        self._new_reconcile = new_reconcile

    def __call__(self, ctx: ControllerContext) -> Controller:
        config = self._config
        watches = (config.for_, *config.watches)
        informers = [watch.informer(ctx) for watch in watches]  # shared: one per collection
        queue: RateLimitingQueue[str] | None = None
        if config.rate_limiter is not None:
            queue = RateLimitingQueue(
                rate_limiter=config.rate_limiter, name=config.name, registry=ctx.registry
            )
        reconcile = self._new_reconcile(ctx)
        # Read your own writes: the reconciled kind and the kinds it owns, whose informers
        # see every object a reconcile writes of them.
        consistency = ConsistencyStore(
            {
                watch.resource: informer  # asked per namespace when it has several
                for watch, informer in zip(watches, informers, strict=True)
                if watch is config.for_ or isinstance(watch.map_func, _LateOwner)
            }
        )
        sync = _sync_func(reconcile, config, informers[0].lister(), ctx.client)
        controller = Controller(
            ControllerOptions(
                name=config.name,
                sync=_consistent(sync, consistency),
                workers=config.workers,
                queue=queue,
                has_synced=[informer.has_synced for informer in dict.fromkeys(informers)],
                sync_timeout=config.sync_timeout,
                max_retries=config.max_retries,
                registry=ctx.registry,
            )
        )
        for watch, informer in zip(watches, informers, strict=True):
            informer.add_event_handler(
                EnqueueHandler(
                    watch.map_func,
                    controller.enqueue,
                    (*config.global_predicates, *watch.predicates),
                )
            )
        return controller


def _consistent(
    sync: Callable[[str], Awaitable[Result | None]], consistency: ConsistencyStore
) -> Callable[[str], Awaitable[Result | None]]:
    """``sync``, held back while the informers have not seen the writes the previous
    reconcile of the same key made (StaleCache: the runner retries it with backoff), and
    recording the writes it makes (module docstring)."""

    async def consistent_sync(key: str) -> Result | None:
        consistency.ensure_ready(key)
        with consistency.recording(key):
            return await sync(key)

    return consistent_sync


def _requeues(result: Result | None) -> bool:
    return result is not None and (result.requeue or result.requeue_after > 0)


def _sync_func(
    reconcile: Reconcile, config: _Snapshot, lister: Lister, writer: Writer
) -> Callable[[str], Any]:
    finalizer = config.finalizer
    resource = config.for_.resource

    if finalizer is None:

        async def sync(key: str) -> Result | None:
            return await reconcile(Request.from_key(key))

        return sync

    async def sync_with_finalizer(key: str) -> Result | None:
        request = Request.from_key(key)
        try:
            obj = (
                lister.get(request.namespace, request.name)
                if resource.namespaced
                else lister.get(request.name)
            )
        except NotFound:
            return await reconcile(request)  # gone: the reconcile sees it gone, as without
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            if not contains_finalizer(obj, finalizer.name):
                return None  # someone else's finalizer holds it; nothing of ours to do
            result = await finalizer.finalize(request)
            if _requeues(result):
                return result
            released = deep_copy(obj)
            remove_finalizer(released, finalizer.name)
            with contextlib.suppress(NotFound):  # already gone
                await patch_finalizers(writer, resource, released)
            return None
        if not contains_finalizer(obj, finalizer.name):
            held = deep_copy(obj)
            add_finalizer(held, finalizer.name)
            await patch_finalizers(writer, resource, held)
        return await reconcile(request)

    return sync_with_finalizer
