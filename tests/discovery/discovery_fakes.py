"""A fake API server's discovery: documents built from a model of what it serves, in the
aggregated or the legacy format, and a record of every raw GET."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kcontrol.client import Resource
from kcontrol.errors import ApiError, NotFound

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


@dataclass
class FakeDiscovery:
    """Serves ``resources`` (in the order given: a group's first version is its preferred
    one) through ``get_raw``. ``aggregated``: whether it honours the aggregated Accept.
    ``errors`` maps a path to the error its GET raises. ``requests`` records ``(path,
    accept)`` of every GET. ``gate``, when set, holds every GET until it is set."""

    resources: list[Resource] = field(default_factory=list)
    aggregated: bool = True
    errors: dict[str, Exception] = field(default_factory=dict)
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    stale: set[str] = field(default_factory=set)
    gate: asyncio.Event | None = None
    verbs: dict[Resource, list[str]] = field(default_factory=dict)

    def serve(self, *resources: Resource) -> None:
        self.resources.extend(resources)

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    async def get_raw(self, path: str, *, accept: str | None = None) -> bytes:
        self.requests.append((path, accept))
        await asyncio.sleep(0)
        if self.gate is not None:
            await self.gate.wait()
        if path in self.errors:
            raise self.errors[path]
        wants_aggregated = accept is not None and AGGREGATED in accept.split(",")
        if path in ("/api", "/apis"):
            core = path == "/api"
            if self.aggregated and wants_aggregated:
                return _json(self._aggregated(core))
            return _json(self._legacy_root(core))
        api_version = path.removeprefix("/api/").removeprefix("/apis/")
        listed = [r for r in self.resources if r.api_version == api_version]
        if not listed or (path.startswith("/api/") != (listed[0].group == "")):
            raise NotFound("the server could not find the requested resource")
        return _json(_resource_list(api_version, listed, self._verbs))

    def _verbs(self, r: Resource) -> list[str]:
        return self.verbs.get(r, ["get", "list", "watch"])

    def _groups(self, core: bool) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for r in self.resources:
            if (r.group == "") == core:
                versions = groups.setdefault(r.group, [])
                if r.version not in versions:
                    versions.append(r.version)
        return groups

    def _aggregated(self, core: bool) -> dict[str, Any]:
        items = []
        for group, versions in self._groups(core).items():
            entries = []
            for version in versions:
                api_version = f"{group}/{version}" if group else version
                listed = [r for r in self.resources if r.api_version == api_version]
                entries.append(
                    {
                        "version": version,
                        "resources": [_aggregated_resource(r, self._verbs(r)) for r in listed],
                        "freshness": "Stale" if api_version in self.stale else "Current",
                    }
                )
            metadata = {"name": group} if group else {"creationTimestamp": None}
            items.append({"metadata": metadata, "versions": entries})
        return {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {},
            "items": items,
        }

    def _legacy_root(self, core: bool) -> dict[str, Any]:
        groups = self._groups(core)
        if core:
            return {"kind": "APIVersions", "versions": groups.get("", [])}
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": name,
                    # Not in order of preference: preferredVersion says which one it is.
                    "versions": [
                        {"groupVersion": f"{name}/{v}", "version": v} for v in reversed(versions)
                    ],
                    "preferredVersion": {
                        "groupVersion": f"{name}/{versions[0]}",
                        "version": versions[0],
                    },
                }
                for name, versions in groups.items()
            ],
        }


def _aggregated_resource(r: Resource, verbs: list[str]) -> dict[str, Any]:
    return {
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.kind.lower(),
        "verbs": verbs,
        "subresources": [
            {
                "subresource": "status",
                "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                "verbs": ["get", "patch", "update"],
            }
        ],
    }


def _resource_list(
    api_version: str, listed: list[Resource], verbs: Callable[[Resource], list[str]]
) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for r in listed:
        entry = {
            "name": r.plural,
            "singularName": r.kind.lower(),
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": verbs(r),
        }
        resources.extend([entry, {**entry, "name": f"{r.plural}/status"}])
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": api_version,
        "resources": resources,
    }


def _json(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode()


def failing(message: str = "boom") -> ApiError:
    return ApiError(message, code=503, reason="ServiceUnavailable")
