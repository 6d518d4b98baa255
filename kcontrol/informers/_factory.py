"""SharedInformerFactory: one informer per watched collection, shared by every controller.

A port of client-go's ``informers.SharedInformerFactory``. Controllers ask the factory for
the informers they need while they are being built; the factory hands every caller the same
:class:`SharedIndexInformer` for the same (resource, namespace, label selector, field
selector, metadata only or whole objects), so each collection is listed and watched once
and cached once.

The selectors are keywords of :meth:`SharedInformerFactory.for_resource` (client-go's
factory takes a function that tweaks the ``ListOptions`` instead): an informer's requests
take nothing else from the caller, so the keywords say all there is to choose. The factory
builds the :class:`~kcontrol.client.ListOptions` the informer carries from them, once.

A factory can be narrowed per resource (``scopes``, :class:`~kcontrol.informers.CacheScope`:
controller-runtime's ``cache.Options.ByObject``) and for all namespaced resources
(``namespace``): the informer :meth:`~SharedInformerFactory.for_resource` makes when asked
without a namespace or selectors is then the narrowed one, and asking for a namespace outside
the scope raises :class:`~kcontrol.errors.OutsideCacheScope` rather than starting a watch
the operator's RBAC may refuse (:mod:`kcontrol.informers._scope`).

``metadata_only=True`` (controller-runtime's ``builder.OnlyMetadata``, client-go's
``metadatainformer``) makes an informer that lists and watches ``PartialObjectMetadata``
through the client's ``metadata_only()`` view and caches ``apiVersion``, ``kind`` (the
resource's own) and ``metadata`` only - for the objects a controller owns or otherwise does
not read the bodies of. It is a separate informer from the full one of the same collection;
:mod:`kcontrol.informers._metadata` says what its objects hold, and why they must never be
written back whole.

Typical wiring::

    factory = SharedInformerFactory(client, resync_period=0)
    pods = factory.for_resource(PODS)
    pods.add_event_handler(handler)
    async with asyncio.TaskGroup() as tg:
        tg.create_task(factory.run())          # client-go's factory.Start
        await factory.wait_for_cache_sync()
        ...
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from kcontrol.client import SHARD_BY_NAMESPACE, ListOptions, Reader, Resource, ShardSelector
from kcontrol.clock import Clock
from kcontrol.errors import OutsideCacheScope
from kcontrol.informers._lister import Lister
from kcontrol.informers._metadata import metadata_reader
from kcontrol.informers._reflector import ReflectorOptions, TransformFunc
from kcontrol.informers._scope import CacheScope, join_selectors
from kcontrol.informers._shared_informer import SharedIndexInformer

__all__ = ["SharedInformerFactory"]


class _InformerKey(NamedTuple):
    resource: Resource
    namespaces: tuple[str, ...]  # () for every namespace
    list_options: ListOptions
    metadata_only: bool


class SharedInformerFactory:
    """Creates and runs shared informers; see the module docstring.

    ``namespace`` (or several: ``namespaces``) restricts every informer of a namespaced
    resource (None: all namespaces); ``scopes`` narrows the informers of some resources
    further (module docstring);
    ``resync_period`` is the informers' default handler resync period (seconds, 0: never);
    ``transform`` is applied to every object of every informer before it is cached (it can
    dispatch on ``obj["kind"]``, which is always set). ``shard``: every informer lists and
    watches only that shard's objects (the API server's shard selector, see
    :class:`~kcontrol.client.ShardSelector`); sharded by namespace, cluster-scoped resources
    are not sharded.
    """

    def __init__(
        self,
        client: Reader,
        *,
        namespace: str | None = None,
        namespaces: Sequence[str] = (),
        resync_period: float = 0.0,
        transform: TransformFunc | None = None,
        clock: Clock | None = None,
        reflector_options: ReflectorOptions | None = None,
        shard: ShardSelector | None = None,
        scopes: Mapping[Resource, CacheScope] | None = None,
    ) -> None:
        self._client = client
        if namespace is not None and namespaces:
            raise ValueError("a factory takes a namespace or namespaces, not both")
        self._bound: tuple[str, ...] = (namespace,) if namespace else tuple(namespaces)
        self._scopes = dict(scopes or {})
        for resource, scope in self._scopes.items():
            outside = set(scope.namespaces) - set(self._bound) if self._bound else set()
            if outside:
                raise ValueError(
                    f"the scope of {resource.plural} (namespaces {sorted(outside)}) is outside "
                    f"the factory's namespaces {list(self._bound)}"
                )
        self._shard = shard
        self._resync_period = resync_period
        self._transform = transform
        self._clock = clock
        self._reflector_options = reflector_options
        self._metadata_reader: Reader | None = None  # made on the first metadata-only informer
        self._informers: dict[_InformerKey, SharedIndexInformer] = {}
        self._task_group: asyncio.TaskGroup | None = None
        self._started = False

    def for_resource(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> SharedIndexInformer:
        """The shared informer for this collection, created on first request.

        ``namespace`` defaults to the resource's scope's, then to the factory's; a namespace
        outside those raises :class:`~kcontrol.errors.OutsideCacheScope`. The scope's
        selectors apply beside the ones given; an empty selector selects everything, as
        ``None`` does. ``metadata_only`` caches each object's ``apiVersion``/``kind``/
        ``metadata`` only (module docstring); the client must have a ``metadata_only()``
        view (:class:`TypeError` otherwise). If the factory is running, a new informer
        starts at once.
        """
        scope = self._scopes.get(resource)
        if scope is not None:
            label_selector = join_selectors(scope.label_selector, label_selector)
            field_selector = join_selectors(scope.field_selector, field_selector)
        namespaces = self._namespaces_for(resource, namespace, scope)
        shard = self._shard
        if shard is not None and shard.key == SHARD_BY_NAMESPACE and not resource.namespaced:
            shard = None  # a cluster-scoped object has no namespace to hash
        list_options = ListOptions(
            label_selector=label_selector or None,
            field_selector=field_selector or None,
            shard_selector=str(shard) if shard is not None else None,
        )
        key = _InformerKey(resource, namespaces, list_options, metadata_only)
        informer = self._informers.get(key)
        if informer is None:
            informer = SharedIndexInformer(
                self._reader(metadata_only),
                resource,
                namespaces=namespaces,
                list_options=list_options,
                resync_period=self._resync_period,
                transform=self._transform,
                clock=self._clock,
                reflector_options=self._options_for(key),
            )
            self._informers[key] = informer
            if self._task_group is not None:
                self._start(informer)
        return informer

    def _namespaces_for(
        self, resource: Resource, namespace: str | None, scope: CacheScope | None
    ) -> tuple[str, ...]:
        """The namespaces of ``resource``'s informer when ``namespace`` is asked for
        (``()``: all)."""
        if not resource.namespaced:
            return ()
        bound = (scope.namespaces if scope is not None else ()) or self._bound
        if namespace is None:
            return bound
        if bound and namespace not in bound:
            held = ", ".join(repr(n) for n in bound)
            raise OutsideCacheScope(
                f"{resource.plural} of namespace {namespace!r} are outside this cache, which "
                f"holds namespace {held} only: read them from the API, or widen the cache's "
                "scope"
            )
        return (namespace,)

    def lister(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> Lister:
        """A :class:`Lister` over :meth:`for_resource`'s informer."""
        return self.for_resource(
            resource,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            metadata_only=metadata_only,
        ).lister()

    def informers(self) -> list[SharedIndexInformer]:
        """Every informer created so far."""
        return list(self._informers.values())

    async def run(self) -> None:
        """Run every informer created so far, and each one created later, until cancelled.

        Informers that were already started elsewhere are left alone. Runs at most once.
        """
        if self._started:
            raise RuntimeError("informer factory already started")
        self._started = True
        try:
            async with asyncio.TaskGroup() as task_group:
                self._task_group = task_group
                for informer in self._informers.values():
                    self._start(informer)
                await asyncio.Event().wait()  # until cancelled
        finally:
            self._task_group = None

    async def wait_for_cache_sync(self) -> dict[Resource, bool]:
        """Wait until every informer created so far has synced (the factory must be running).

        Returns, per resource, whether all its informers synced (False for an informer that
        stopped first).
        """
        synced: dict[Resource, bool] = {}
        for key, informer in list(self._informers.items()):
            ok = await informer.wait_for_cache_sync()
            synced[key.resource] = synced.get(key.resource, True) and ok
        return synced

    def _options_for(self, key: _InformerKey) -> ReflectorOptions | None:
        """The reflector options of ``key``'s informer: the factory's, with a name in the logs
        that tells a metadata-only informer from the full one of the same collection."""
        options = self._reflector_options
        if not key.metadata_only or (options is not None and options.name):
            return options
        names = ",".join(key.namespaces)
        scope = f"{key.resource.plural}/{names}" if names else key.resource.plural
        return dataclasses.replace(options or ReflectorOptions(), name=f"{scope} (metadata)")

    def _reader(self, metadata_only: bool) -> Reader:
        if not metadata_only:
            return self._client
        if self._metadata_reader is None:
            self._metadata_reader = metadata_reader(self._client)
        return self._metadata_reader

    def _start(self, informer: SharedIndexInformer) -> None:
        assert self._task_group is not None
        if informer.has_started():
            return
        scope = "".join(f"{n}/" for n in informer.namespaces)
        self._task_group.create_task(
            informer.run(), name=f"informer {scope}{informer.resource.plural}"
        )
