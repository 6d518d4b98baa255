"""Which controller a pod belongs to, and how many pods it wants: upstream's
``podControllerFinder`` functions.

A PDB given as a percentage (or as ``maxUnavailable``) counts its expected pods as the sum of
the scales of the controllers of its pods. A pod's controller (its ``ownerReference`` with
``controller: true``) is looked up by each finder in turn, upstream's order, and the first
answer wins:

1. a ReplicationController (core group) - ``spec.replicas``, from the cache;
2. a ReplicaSet (``apps`` or ``extensions``) owned by a Deployment - the Deployment's
   ``spec.replicas``, from the cache;
3. a ReplicaSet with no Deployment above it - its own ``spec.replicas``;
4. a StatefulSet (``apps``) - ``spec.replicas``;
5. any other kind: its resource (through the REST mapper) read at ``<resource>/scale``; the
   Scale's ``spec.replicas``. A 404 is "no such object" when discovery says the resource
   has a ``scale`` subresource, and an error saying it has none otherwise.

A finder answers ``None`` when the reference is not of its kind, when the object is not in
the cache, or when the object found has another UID than the reference (a new object of the
same name); it raises for a malformed ``apiVersion`` (``ValueError``) and, for the scale
finder, for what the mapper or the API server raise.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from kcontrol.client import Reader, Resource
from kcontrol.controller import get_controller_of
from kcontrol.discovery import RawReader, RESTMapper
from kcontrol.errors import NotFound
from kcontrol.informers import Lister

__all__ = [
    "SCALE_VERSIONS",
    "ControllerFinders",
    "ControllerScale",
    "DiscoveryScaleSupport",
    "Finder",
    "ScaleFinder",
    "ScaleSupport",
    "group_of",
]

SCALE_VERSIONS: Final = frozenset(
    {("autoscaling", "v1"), ("extensions", "v1beta1"), ("apps", "v1beta1"), ("apps", "v1beta2")}
)
"""The group versions of ``Scale`` that client-go's scale client reads
(``ScaleConverter.ScaleVersions``): a ``<resource>/scale`` entry of another kind or version
does not count as a scale subresource."""


@dataclass(frozen=True, slots=True)
class ControllerScale:
    """A controller found for a pod: its UID and how many pods it wants."""

    uid: str
    replicas: int


Finder = Callable[[Mapping[str, Any], str], Awaitable[ControllerScale | None]]
"""``await finder(controller_ref, namespace)``: the controller and its scale, or ``None``."""


def group_of(api_version: str) -> str:
    """The group of an ``apiVersion`` as apimachinery's ``ParseGroupVersion`` reads it:
    ``""`` for ``v1``, ``/v1`` and ``""``; ``apps`` for ``apps/v1``. Raises ``ValueError``
    for more than one ``/``."""
    if api_version.count("/") > 1:
        raise ValueError(f"unexpected GroupVersion string: {api_version}")
    group, _, _ = api_version.rpartition("/")
    return group


def _is_kind(ref: Mapping[str, Any], kind: str, groups: Iterable[str]) -> bool:
    """upstream's ``verifyGroupKind``: ``ref`` is of ``kind`` in one of ``groups``."""
    group = group_of(str(ref.get("apiVersion") or ""))
    return ref.get("kind") == kind and group in groups


def _replicas(obj: Mapping[str, Any]) -> int:
    # The API server defaults spec.replicas to 1 for every workload kind.
    replicas = (obj.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _cached(lister: Lister, namespace: str, ref: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The cached object ``ref`` names, or ``None`` if absent or of another UID."""
    try:
        obj = lister.get(namespace, str(ref.get("name") or ""))
    except NotFound:
        return None
    return obj if _uid(obj) == ref.get("uid") else None


class ScaleSupport(Protocol):
    """Whether a resource serves a ``scale`` subresource (upstream's ``implementsScale``)."""

    async def implements_scale(self, resource: Resource) -> bool: ...


class DiscoveryScaleSupport:
    """:class:`ScaleSupport` from the group version's own discovery document
    (``APIResourceList``, which lists subresources): one request per question, as upstream's
    ``ServerResourcesForGroupVersion``. ``raw`` is an :class:`~kcontrol.client.ApiClient`."""

    def __init__(self, raw: RawReader) -> None:
        self._raw = raw

    async def implements_scale(self, resource: Resource) -> bool:
        group, version = resource.group, resource.version
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        document = json.loads(await self._raw.get_raw(path))
        return has_scale_subresource(document, resource.plural)


def has_scale_subresource(document: Mapping[str, Any], plural: str) -> bool:
    """Whether an ``APIResourceList`` lists ``<plural>/scale`` as a ``Scale`` of one of
    :data:`SCALE_VERSIONS`."""
    for entry in document.get("resources") or ():
        if entry.get("name") != f"{plural}/scale" or entry.get("kind") != "Scale":
            continue
        if (entry.get("group"), entry.get("version")) in SCALE_VERSIONS:
            return True
    return False


class ScaleFinder:
    """The last finder: any controller kind whose resource serves ``/scale``.

    ``reader`` GETs ``<resource>/<name>/scale``; ``mapper`` maps the reference's
    ``apiVersion`` and ``kind`` to its resource; ``support`` tells a missing object from a
    resource without the subresource after a 404.
    """

    def __init__(self, reader: Reader, mapper: RESTMapper, support: ScaleSupport) -> None:
        self._reader = reader
        self._mapper = mapper
        self._support = support

    async def __call__(self, ref: Mapping[str, Any], namespace: str) -> ControllerScale | None:
        api_version = str(ref.get("apiVersion") or "")
        group_of(api_version)  # a malformed apiVersion is an error, as upstream's parse
        resource = await self._mapper.resource_for(api_version, str(ref.get("kind") or ""))
        try:
            scale = await self._reader.get(
                resource, str(ref.get("name") or ""), namespace=namespace, subresource="scale"
            )
        except NotFound:
            if not await self._support.implements_scale(resource):
                qualified = (
                    f"{resource.plural}.{resource.group}" if resource.group else resource.plural
                )
                raise LookupError(f"{qualified} does not implement the scale subresource") from None
            return None
        if _uid(scale) != ref.get("uid"):
            return None
        return ControllerScale(_uid(scale), int((scale.get("spec") or {}).get("replicas") or 0))


class ControllerFinders:
    """Upstream's finders over the caches of ReplicationControllers, ReplicaSets,
    Deployments and StatefulSets, then ``scale`` (``None``: no scale finder, so any other
    kind is "no controller found"). See the module docstring for the order and answers."""

    def __init__(
        self,
        *,
        replication_controllers: Lister,
        replica_sets: Lister,
        deployments: Lister,
        stateful_sets: Lister,
        scale: Finder | None = None,
    ) -> None:
        self._rcs = replication_controllers
        self._rss = replica_sets
        self._deployments = deployments
        self._sets = stateful_sets
        self._scale = scale

    def finders(self) -> Sequence[Finder]:
        """The finders in the order they are asked."""
        found: list[Finder] = [
            self.replication_controller,
            self.deployment,
            self.replica_set,
            self.stateful_set,
        ]
        if self._scale is not None:
            found.append(self._scale)
        return found

    async def find(self, ref: Mapping[str, Any], namespace: str) -> ControllerScale | None:
        """The first finder's answer for ``ref``; ``None`` if none knows it."""
        for finder in self.finders():
            found = await finder(ref, namespace)
            if found is not None:
                return found
        return None

    async def replication_controller(
        self, ref: Mapping[str, Any], namespace: str
    ) -> ControllerScale | None:
        if not _is_kind(ref, "ReplicationController", ("",)):
            return None
        rc = _cached(self._rcs, namespace, ref)
        return None if rc is None else ControllerScale(_uid(rc), _replicas(rc))

    async def replica_set(self, ref: Mapping[str, Any], namespace: str) -> ControllerScale | None:
        """A ReplicaSet that no Deployment controls."""
        if not _is_kind(ref, "ReplicaSet", ("apps", "extensions")):
            return None
        rs = _cached(self._rss, namespace, ref)
        if rs is None:
            return None
        owner = get_controller_of(rs)
        if owner is not None and owner.get("kind") == "Deployment":
            return None
        return ControllerScale(_uid(rs), _replicas(rs))

    async def deployment(self, ref: Mapping[str, Any], namespace: str) -> ControllerScale | None:
        """The Deployment controlling the pod's ReplicaSet."""
        if not _is_kind(ref, "ReplicaSet", ("apps", "extensions")):
            return None
        rs = _cached(self._rss, namespace, ref)
        owner = None if rs is None else get_controller_of(rs)
        if owner is None or not _is_kind(owner, "Deployment", ("apps", "extensions")):
            return None
        deployment = _cached(self._deployments, namespace, owner)
        return (
            None if deployment is None else ControllerScale(_uid(deployment), _replicas(deployment))
        )

    async def stateful_set(self, ref: Mapping[str, Any], namespace: str) -> ControllerScale | None:
        if not _is_kind(ref, "StatefulSet", ("apps",)):
            return None
        sts = _cached(self._sets, namespace, ref)
        return None if sts is None else ControllerScale(_uid(sts), _replicas(sts))
