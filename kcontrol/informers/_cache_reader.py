"""Reads answered from the shared informers' caches: controller-runtime's cache-backed reader.

:class:`CacheReader` has the read methods of :class:`~kcontrol.client.Reader` (``get`` and
``list``, same signatures and errors) but answers them from a
:class:`~kcontrol.informers.SharedInformerFactory`'s informers instead of the API server: no
request, no rate-limit token, and the state the controller's events come from. A resource
read for the first time gets its informer (every namespace, no selector - the one a builder's
``owns`` or ``for_`` without selectors uses, so they share it); the read then waits for that
informer's first sync.

Contract:

- Reads are eventually consistent, like the informers: an object just written may not be
  there yet, and a 404 means "not in the cache". Reconciles are level-based, so this only
  delays convergence to the next event.
- Returned objects are the cached ones, shared with every reader and handler: never mutate
  them (deep-copy first; :func:`kcontrol.controllerutil.create_or_patch` does).
- The factory must be running (as it is while a manager runs); a read of a new resource on a
  factory that is not running waits until it runs.
- There is no ``watch``: subscribe to the informer itself (``factory.for_resource``).
"""

from __future__ import annotations

from collections.abc import Callable

from kcontrol import labels
from kcontrol.client import ListOptions, Object, Resource
from kcontrol.errors import NotFound
from kcontrol.informers._factory import SharedInformerFactory
from kcontrol.informers._shared_informer import SharedIndexInformer

__all__ = ["CacheReader"]


class CacheReader:
    """``get`` and ``list`` from ``factory``'s caches; see the module docstring.

    ``factory`` may be a callable returning the factory, for owners that create theirs later
    (the manager creates its factory when it starts).
    """

    def __init__(self, factory: SharedInformerFactory | Callable[[], SharedInformerFactory]):
        self._factory = factory

    def _informer(self, resource: Resource) -> SharedIndexInformer:
        factory = self._factory
        if not isinstance(factory, SharedInformerFactory):
            factory = factory()
        return factory.for_resource(resource)

    async def _synced(self, resource: Resource) -> SharedIndexInformer:
        informer = self._informer(resource)
        if not informer.has_synced():
            await informer.wait_for_cache_sync()
        return informer

    async def get(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Object:
        """The cached object; :class:`~kcontrol.errors.NotFound` when the cache has none.

        ``subresource`` must be ``None`` (caches hold whole objects)."""
        if subresource is not None:
            raise ValueError("the cache holds whole objects: read subresources from the API")
        lister = (await self._synced(resource)).lister()
        if resource.namespaced:
            if not namespace:
                raise NotFound(f"{resource.plural} {name!r}: a namespaced read needs a namespace")
            return lister.get(namespace, name)
        return lister.get(name)

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
        transform: Callable[[Object], Object] | None = None,
    ) -> Object:
        """A list object (``items``, ``metadata.resourceVersion``) of the cached objects in
        ``namespace`` (all when ``None``) matching ``options.label_selector``.

        Field selectors, versions and paging are not served from a cache and raise
        :class:`ValueError`; ``transform`` is applied to each item returned."""
        options = options or ListOptions()
        if options.field_selector or options.resource_version or options.continue_:
            raise ValueError("the cache serves label selectors only; list the API for the rest")
        informer = await self._synced(resource)
        selector = labels.parse(options.label_selector) if options.label_selector else None
        items = informer.lister().list(namespace, selector)
        if transform is not None:
            items = [transform(item) for item in items]
        return {
            "apiVersion": resource.api_version,
            "kind": f"{resource.kind}List",
            "metadata": {"resourceVersion": informer.last_sync_resource_version},
            "items": items,
        }
