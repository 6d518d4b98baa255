"""CustomResourceDefinitions (controller-runtime envtest's ``CRDInstallOptions``): read them
from files, directories or dicts, install them into a control plane and wait until they are
served, remove them again, and tell a fake client what they serve.

A *source* is one of:

- a path to a file: YAML (several documents separated by ``---`` are fine) or JSON
  (``.json``); a ``List`` document's ``items`` count as documents;
- a path to a directory: every ``*.yaml``, ``*.yml`` and ``*.json`` file directly in it, in
  name order (subdirectories are not read);
- a dict: one CustomResourceDefinition.

Documents of other kinds in files are skipped (a directory of manifests may hold more than
CRDs); a dict that is not a CRD, a path that does not exist, or a CRD that is not
``apiextensions.k8s.io/v1`` is an error. A CRD named twice counts once, the last one wins.

Installing creates each CRD, or updates the one already there, then waits until each has the
condition ``Established=True`` *and* every served version answers a LIST - the resource is
in discovery and its storage is up, so a controller started next finds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
import yaml

from kcontrol.client import CUSTOMRESOURCEDEFINITIONS, Client, ListOptions, Object, Resource
from kcontrol.errors import AlreadyExists, Conflict, NotFound
from kcontrol.logging import get_logger

__all__ = [
    "CRDSource",
    "ServedVersion",
    "install_crds",
    "load_crds",
    "served_versions",
    "uninstall_crds",
]

CRDSource = str | os.PathLike[str] | Mapping[str, Any]
"""A file, a directory, or one CRD as a dict (see the module docstring)."""

CRD_API_VERSION: Final = CUSTOMRESOURCEDEFINITIONS.api_version
_SUFFIXES: Final = (".yaml", ".yml", ".json")
_POLL_INTERVAL: Final = 0.1

_log = get_logger(__name__)


# -- reading ---------------------------------------------------------------------------------


def load_crds(sources: CRDSource | Iterable[CRDSource]) -> list[Object]:
    """The CRDs of ``sources`` (one source or several: files, directories or dicts, as
    :class:`~kcontrol.envtest.ControlPlane` takes them), in order, each named once."""
    if isinstance(sources, str | os.PathLike | Mapping):
        sources = [sources]
    found: dict[str, Object] = {}
    for source in sources:
        if isinstance(source, Mapping):
            crds = [_checked(dict(source), "a dict source")]
        else:
            crds = _read_path(Path(source))
        for crd in crds:
            name = crd["metadata"]["name"]
            found.pop(name, None)
            found[name] = crd
    return list(found.values())


def _read_path(path: Path) -> list[Object]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in _SUFFIXES)
        return [crd for file in files for crd in _read_file(file)]
    if not path.exists():
        raise FileNotFoundError(f"CRD path {path} does not exist")
    return _read_file(path)


def _read_file(path: Path) -> list[Object]:
    text = path.read_bytes()
    try:
        if path.suffix == ".json":
            documents: list[Any] = [orjson.loads(text)]
        else:
            documents = list(yaml.safe_load_all(text))
    except (orjson.JSONDecodeError, yaml.YAMLError) as err:
        language = "JSON" if path.suffix == ".json" else "YAML"
        raise ValueError(f"{path}: not valid {language}: {err}") from None
    crds = []
    for document in _flatten(documents):
        if isinstance(document, dict) and document.get("kind") == "CustomResourceDefinition":
            crds.append(_checked(document, str(path)))
    return crds


def _flatten(documents: Iterable[Any]) -> Iterable[Any]:
    for document in documents:
        items = document.get("items") if isinstance(document, dict) else None
        if isinstance(items, list) and str(document.get("kind", "")).endswith("List"):
            yield from _flatten(items)
        elif document is not None:
            yield document


def _checked(crd: Object, where: str) -> Object:
    if crd.get("kind") != "CustomResourceDefinition":
        raise ValueError(f"{where}: not a CustomResourceDefinition (kind {crd.get('kind')!r})")
    if crd.get("apiVersion") != CRD_API_VERSION:
        raise ValueError(
            f"{where}: CustomResourceDefinition apiVersion must be {CRD_API_VERSION}, "
            f"not {crd.get('apiVersion')!r}"
        )
    metadata = crd.get("metadata")
    if not isinstance(metadata, dict) or not metadata.get("name"):
        raise ValueError(f"{where}: a CustomResourceDefinition needs metadata.name")
    return crd


@dataclass(frozen=True, slots=True)
class ServedVersion:
    """One version a CRD serves: its resource, whether it has a status subresource, and
    its ``openAPIV3Schema`` (None if it declares none)."""

    resource: Resource
    status_subresource: bool
    schema: Mapping[str, Any] | None


def served_versions(crd: Mapping[str, Any]) -> list[ServedVersion]:
    """The versions ``crd`` serves (``served: true``), in its order."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    served = []
    for version in spec.get("versions") or ():
        if not version.get("served", True):
            continue
        resource = Resource(
            group=spec["group"],
            version=version["name"],
            plural=names["plural"],
            kind=names["kind"],
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        )
        subresources = version.get("subresources") or {}
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        served.append(ServedVersion(resource, "status" in subresources, schema))
    return served


# -- installing ------------------------------------------------------------------------------


async def install_crds(client: Client, crds: Iterable[Object], *, max_time: float) -> list[Object]:
    """Create or update each CRD, then wait until all are established and served; the CRDs
    as stored. TimeoutError naming the first CRD not ready within ``max_time`` seconds (and
    what it still lacks)."""
    crds = list(crds)
    for crd in crds:
        await _create_or_update(client, crd)
    progress = _Progress()
    try:
        async with asyncio.timeout(max_time):
            return [await _wait_until_served(client, crd, progress) for crd in crds]
    except TimeoutError:
        raise TimeoutError(
            f"CustomResourceDefinition {progress.name} not ready within {max_time:g}s: "
            f"still waiting for {progress.waiting_for}"
        ) from None


@dataclass
class _Progress:
    """Which CRD a wait is at, and for what: the timeout's message."""

    name: str = ""
    waiting_for: str = ""


async def _create_or_update(client: Client, crd: Object) -> None:
    name = crd["metadata"]["name"]
    try:
        await client.create(CUSTOMRESOURCEDEFINITIONS, crd)
        _log.debug("CRD created", crd=name)
        return
    except AlreadyExists:
        pass
    for _ in range(5):
        existing = await client.get(CUSTOMRESOURCEDEFINITIONS, name)
        replacement = {**crd, "metadata": {**crd["metadata"]}}
        replacement["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
        try:
            await client.update(CUSTOMRESOURCEDEFINITIONS, replacement)
            _log.debug("CRD updated", crd=name)
            return
        except Conflict:
            continue
    raise Conflict(f"CustomResourceDefinition {name} kept changing while it was updated")


async def _wait_until_served(client: Client, crd: Object, progress: _Progress) -> Object:
    progress.name = crd["metadata"]["name"]
    while True:
        try:
            stored = await client.get(CUSTOMRESOURCEDEFINITIONS, progress.name)
            progress.waiting_for = _not_established(stored) or await _not_served(client, stored)
            if not progress.waiting_for:
                return stored
        except NotFound:
            progress.waiting_for = "the CRD to exist"
        await asyncio.sleep(_POLL_INTERVAL)


def _not_established(crd: Object) -> str:
    """What keeps ``crd`` from being established ("" if it is)."""
    conditions = (crd.get("status") or {}).get("conditions") or []
    by_type = {c.get("type"): c for c in conditions if isinstance(c, dict)}
    established = by_type.get("Established") or {}
    if established.get("status") == "True":
        return ""
    parts = [
        f"{kind}={c.get('status')} ({c.get('reason', '')}: {c.get('message', '')})"
        for kind, c in by_type.items()
    ]
    return "condition Established=True" + (f"; conditions: {', '.join(parts)}" if parts else "")


async def _not_served(client: Client, crd: Object) -> str:
    """The first served version whose LIST fails ("" if all answer)."""
    for version in served_versions(crd):
        try:
            await client.list(version.resource, options=ListOptions(limit=1))
        except NotFound:
            return f"{version.resource.path()} to be served"
    return ""


async def uninstall_crds(client: Client, crds: Iterable[Object], *, max_time: float) -> None:
    """Delete each CRD (those already gone are fine) and wait until all are gone: the
    server deletes their custom resources first. TimeoutError naming the first CRD still
    there after ``max_time`` seconds."""
    names = [crd["metadata"]["name"] for crd in crds]
    for name in names:
        with contextlib.suppress(NotFound):
            await client.delete(CUSTOMRESOURCEDEFINITIONS, name)
    progress = _Progress(waiting_for="it to be deleted")
    try:
        async with asyncio.timeout(max_time):
            for name in names:
                progress.name = name
                while True:
                    try:
                        await client.get(CUSTOMRESOURCEDEFINITIONS, name)
                    except NotFound:
                        break
                    await asyncio.sleep(_POLL_INTERVAL)
    except TimeoutError:
        raise TimeoutError(
            f"CustomResourceDefinition {progress.name} not deleted within {max_time:g}s"
        ) from None
