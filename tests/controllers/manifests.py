"""The manifests of a ``deploy/`` bundle, for the tests of the controllers that ship one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def documents(bundle: str) -> list[dict[str, Any]]:
    """Every document of ``deploy/<bundle>/*.yaml`` (``""``: ``deploy/*.yaml``) but the
    kustomization, in file order."""
    docs: list[dict[str, Any]] = []
    for path in sorted((DEPLOY / bundle).glob("*.yaml")):
        if path.name != "kustomization.yaml":
            docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def find(bundle: str, kind: str, name: str) -> dict[str, Any]:
    """The ``kind`` named ``name`` in ``deploy/<bundle>/``; AssertionError if it is not there."""
    for doc in documents(bundle):
        if doc["kind"] == kind and doc["metadata"]["name"] == name:
            return doc
    raise AssertionError(f"{kind} {name} not in deploy/{bundle}/")


def unlisted_manifests(bundle: str) -> set[str]:
    """The files of ``deploy/<bundle>/`` its kustomization does not list, and the reverse."""
    directory = DEPLOY / bundle
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    on_disk = {p.name for p in directory.glob("*.yaml")} - {"kustomization.yaml"}
    return set(kustomization["resources"]) ^ on_disk
