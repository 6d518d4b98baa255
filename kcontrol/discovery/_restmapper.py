"""REST mapping: from an object's ``apiVersion`` and ``kind`` to the :class:`Resource` that
serves it (apimachinery's ``meta.RESTMapper``, controller-runtime's ``RESTMapping``).

An object names its type by ``apiVersion`` and ``kind`` (so do ownerReferences); requests
need the resource - plural, and whether it is namespaced. A :class:`RESTMapper` answers
that question; :class:`StaticRESTMapper` from a fixed list (unit tests, fakes),
:class:`~kcontrol.discovery.DynamicRESTMapper` from the server's discovery.

Lookups are by exact ``apiVersion`` (``apps/v1``, ``v1``): a kind served at several versions
of its group maps to a different resource at each.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from kcontrol.client import BUILTIN_RESOURCES, Resource
from kcontrol.errors import NoKindMatch, NoResourceMatch

__all__ = ["RESTMapper", "ResourceIndex", "StaticRESTMapper"]


class RESTMapper(Protocol):
    """Maps types to resources. Both methods may ask the server (they are coroutines) and
    raise its errors; an answer they cannot give raises the ``No...Match`` error."""

    async def resource_for(self, api_version: str, kind: str) -> Resource:
        """The resource serving ``kind`` at ``api_version`` (``apps/v1``, ``v1``);
        :class:`~kcontrol.errors.NoKindMatch` if there is none."""
        ...

    async def kind_for(self, api_version: str, plural: str) -> Resource:
        """The inverse: the resource named ``plural`` at ``api_version``, whose ``kind`` it
        serves; :class:`~kcontrol.errors.NoResourceMatch` if there is none."""
        ...


class ResourceIndex:
    """Resources by (apiVersion, kind) and (apiVersion, plural).

    Where two resources of one group version serve the same kind, the first added wins.
    """

    def __init__(self, resources: Iterable[Resource] = ()) -> None:
        self._by_kind: dict[tuple[str, str], Resource] = {}
        self._by_plural: dict[tuple[str, str], Resource] = {}
        for resource in resources:
            self.add(resource)

    def add(self, resource: Resource) -> None:
        self._by_kind.setdefault((resource.api_version, resource.kind), resource)
        self._by_plural.setdefault((resource.api_version, resource.plural), resource)

    def replace_group_version(self, api_version: str, resources: Iterable[Resource]) -> None:
        """Forget every resource of ``api_version``, then add ``resources`` (which must all
        be of that group version)."""
        for index in (self._by_kind, self._by_plural):
            for key in [k for k in index if k[0] == api_version]:
                del index[key]
        for resource in resources:
            if resource.api_version != api_version:
                raise ValueError(f"{resource} is not of apiVersion {api_version!r}")
            self.add(resource)

    def by_kind(self, api_version: str, kind: str) -> Resource | None:
        return self._by_kind.get((api_version, kind))

    def by_plural(self, api_version: str, plural: str) -> Resource | None:
        return self._by_plural.get((api_version, plural))


class StaticRESTMapper:
    """A :class:`RESTMapper` over a fixed list of resources, asking no server: for unit
    tests and fakes. By default it knows :data:`~kcontrol.client.BUILTIN_RESOURCES`; pass
    ``[*BUILTIN_RESOURCES, WEBSITES]`` to add a custom resource."""

    def __init__(self, resources: Iterable[Resource] = BUILTIN_RESOURCES) -> None:
        self._index = ResourceIndex(resources)

    async def resource_for(self, api_version: str, kind: str) -> Resource:
        found = self._index.by_kind(api_version, kind)
        if found is None:
            raise NoKindMatch(api_version, kind)
        return found

    async def kind_for(self, api_version: str, plural: str) -> Resource:
        found = self._index.by_plural(api_version, plural)
        if found is None:
            raise NoResourceMatch(api_version, plural)
        return found
