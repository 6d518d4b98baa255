"""The discovery documents of the API server, read into groups and resources.

The server describes what it serves in two formats (client-go's ``discovery`` package reads
both):

- **aggregated** (``apidiscovery.k8s.io/v2`` ``APIGroupDiscoveryList``, served at ``/api``
  and ``/apis`` when the client asks for it in its Accept header, Kubernetes >= 1.30): every
  group, its versions in order of preference, and every version's resources, in one
  document per root. A version marked ``Stale`` (an aggregated API server that did not
  answer) is left out of its group and reported as failed;
- **legacy**: ``/api`` holds ``APIVersions`` (the core group's versions), ``/apis`` an
  ``APIGroupList`` (groups and versions, with a preferred one), and each group version's
  resources are a document of their own (``APIResourceList`` at ``/api/v1``,
  ``/apis/<group>/<version>``).

Subresources (``pods/status``, ``deployments/scale``) are not kinds of their own: they are
left out. A resource without a kind is left out too (aggregated discovery may list a parent
only for its subresources). Every function here is pure: it takes decoded JSON and returns
frozen values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kcontrol.client import Resource

__all__ = [
    "AGGREGATED_DISCOVERY_ACCEPT",
    "APIGroup",
    "ServerResources",
    "is_aggregated",
    "parse_aggregated",
    "parse_api_group_list",
    "parse_api_versions",
    "parse_resource_list",
    "parse_verbs",
    "split_api_version",
]

AGGREGATED_DISCOVERY_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
)
"""The Accept header of a root discovery read: the aggregated document if the server has
it, the legacy one otherwise (client-go's ``acceptDiscoveryFormats``)."""

_AGGREGATED_KIND = "APIGroupDiscoveryList"
_AGGREGATED_API_VERSION = "apidiscovery.k8s.io/v2"


@dataclass(frozen=True, slots=True)
class APIGroup:
    """An API group the server serves, with its versions in order of preference.

    ``name`` is ``""`` for the core group. ``versions`` is never empty; its first entry is
    the preferred version (the one ``kubectl`` and the garbage collector use).
    """

    name: str
    versions: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.versions:
            raise ValueError(f"API group {self.name!r} has no versions")

    @property
    def preferred_version(self) -> str:
        return self.versions[0]

    @property
    def api_versions(self) -> tuple[str, ...]:
        """``apiVersion`` strings of the versions (``apps/v1``, or ``v1`` for the core
        group), in order of preference."""
        return tuple(join_api_version(self.name, v) for v in self.versions)


@dataclass(frozen=True, slots=True)
class ServerResources:
    """What a full discovery read found.

    ``groups``: every group served, the core group (if served) first. ``resources``: the
    resources of each group version read, by ``apiVersion``, subresources left out (a
    version that serves none maps to ``()``). ``failed``: the group versions whose
    resources could not be read, by ``apiVersion``, each with the reason (stale in the
    aggregated document, or the error of its own read); they are absent from
    ``resources``. ``verbs``: the verbs each resource serves (a resource missing here
    serves none that is known).
    """

    groups: tuple[APIGroup, ...]
    resources: Mapping[str, tuple[Resource, ...]]
    failed: Mapping[str, str] = field(default_factory=dict)
    verbs: Mapping[Resource, frozenset[str]] = field(default_factory=dict)

    def all_resources(self) -> list[Resource]:
        """Every resource of every group version read, groups in order, each group's
        versions in order of preference."""
        return [r for g in self.groups for v in g.api_versions for r in self.resources.get(v, ())]

    def preferred_resources(self) -> list[Resource]:
        """Each resource of each group once, in the first version of the group's order of
        preference that serves it (client-go's ``ServerPreferredResources``): HPAs as
        ``autoscaling/v2`` only, a resource that only an older version serves in that one."""
        found: list[Resource] = []
        for group in self.groups:
            seen: set[str] = set()
            for api_version in group.api_versions:
                for resource in self.resources.get(api_version, ()):
                    if resource.plural not in seen:
                        seen.add(resource.plural)
                        found.append(resource)
        return found

    def supporting(self, *verbs: str, preferred: bool = False) -> list[Resource]:
        """The resources of :meth:`all_resources` (with ``preferred``, of
        :meth:`preferred_resources`) that serve every one of ``verbs`` (client-go's
        ``FilteredBy(SupportsAllVerbs{...})``): ``supporting("delete", "list", "watch",
        preferred=True)`` are the garbage collector's deletable resources, one version each."""
        wanted = frozenset(verbs)
        resources = self.preferred_resources() if preferred else self.all_resources()
        return [r for r in resources if wanted <= self.verbs.get(r, frozenset())]


def split_api_version(api_version: str) -> tuple[str, str]:
    """``(group, version)`` of ``apps/v1`` or ``v1``; :class:`ValueError` if malformed."""
    group, slash, version = api_version.rpartition("/")
    if not version or (slash and not group) or "/" in group:
        raise ValueError(f"not an apiVersion: {api_version!r}")
    return group, version


def join_api_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def is_aggregated(document: Mapping[str, Any]) -> bool:
    """Whether a root document is the aggregated ``APIGroupDiscoveryList`` (the server
    ignores an Accept it cannot honour and sends the legacy format)."""
    return (
        document.get("kind") == _AGGREGATED_KIND
        and document.get("apiVersion") == _AGGREGATED_API_VERSION
    )


def parse_aggregated(
    document: Mapping[str, Any],
) -> tuple[list[APIGroup], dict[str, tuple[Resource, ...]], dict[str, str]]:
    """Groups, resources by apiVersion, and stale group versions of an aggregated document
    (client-go's ``SplitGroupsAndResources``)."""
    groups: list[APIGroup] = []
    resources: dict[str, tuple[Resource, ...]] = {}
    stale: dict[str, str] = {}
    for item in _list(document.get("items")):
        name = str(_dict(item.get("metadata")).get("name") or "")
        versions: list[str] = []
        for entry in _list(item.get("versions")):
            version = str(entry.get("version") or "")
            if not version:
                continue
            api_version = join_api_version(name, version)
            if entry.get("freshness") == "Stale":
                stale[api_version] = "stale in the aggregated discovery document"
                continue
            versions.append(version)
            resources[api_version] = tuple(
                Resource(
                    name,
                    version,
                    str(r["resource"]),
                    str(kind),
                    namespaced=r.get("scope") != "Cluster",
                )
                for r in _list(entry.get("resources"))
                if r.get("resource")
                and "/" not in str(r["resource"])
                and (kind := _dict(r.get("responseKind")).get("kind"))
            )
        if versions:
            groups.append(APIGroup(name, tuple(versions)))
    return groups, resources, stale


def parse_api_versions(document: Mapping[str, Any]) -> list[APIGroup]:
    """The core group of a legacy ``/api`` document (``APIVersions``): ``[]`` if it lists
    no version."""
    versions = tuple(str(v) for v in document.get("versions") or () if v)
    return [APIGroup("", versions)] if versions else []


def parse_api_group_list(document: Mapping[str, Any]) -> list[APIGroup]:
    """The groups of a legacy ``/apis`` document (``APIGroupList``), each group's preferred
    version first and the others in the server's order."""
    groups: list[APIGroup] = []
    for item in _list(document.get("groups")):
        name = str(item.get("name") or "")
        versions = [str(v["version"]) for v in _list(item.get("versions")) if v.get("version")]
        preferred = _dict(item.get("preferredVersion")).get("version")
        if preferred in versions:
            versions.remove(preferred)
            versions.insert(0, preferred)
        if name and versions:
            groups.append(APIGroup(name, tuple(versions)))
    return groups


def parse_resource_list(api_version: str, document: Mapping[str, Any]) -> tuple[Resource, ...]:
    """The resources of a legacy group version document (``APIResourceList``) served at
    ``api_version``; subresources are left out."""
    group, version = split_api_version(api_version)
    return tuple(
        Resource(
            group, version, str(r["name"]), str(r["kind"]), namespaced=bool(r.get("namespaced"))
        )
        for r in _list(document.get("resources"))
        if r.get("name") and "/" not in str(r["name"]) and r.get("kind")
    )


def parse_verbs(
    resources: tuple[Resource, ...], document: Mapping[str, Any], api_version: str | None = None
) -> dict[Resource, frozenset[str]]:
    """The verbs of ``resources``, read from the document they were parsed from: a legacy
    ``APIResourceList`` (``api_version`` None), or the entry of ``api_version`` in an
    aggregated root document."""
    if api_version is None:
        listed = {str(r.get("name")): r for r in _list(document.get("resources"))}
    else:
        listed = {}
        group, version = split_api_version(api_version)
        for item in _list(document.get("items")):
            if str(_dict(item.get("metadata")).get("name") or "") != group:
                continue
            for entry in _list(item.get("versions")):
                if entry.get("version") == version:
                    listed = {str(r.get("resource")): r for r in _list(entry.get("resources"))}
    return {
        r: frozenset(str(v) for v in listed[r.plural].get("verbs") or ())
        for r in resources
        if r.plural in listed
    }


def _list(value: Any) -> list[Mapping[str, Any]]:
    """The mappings of a JSON array (``[]`` for null or anything that is not an array)."""
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, Mapping)]


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
