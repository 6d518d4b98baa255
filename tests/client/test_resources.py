"""The resource constants: one place, re-exported where they always were, all listed.

That each constant matches the server's discovery is checked against a real apiserver in
tests/discovery/test_discovery_integration.py."""

from __future__ import annotations

import kcontrol.client
import kcontrol.client._interface
from kcontrol.client import BUILTIN_RESOURCES, Resource


def constants() -> dict[str, Resource]:
    return {
        name: value
        for name, value in vars(kcontrol.client).items()
        if name.isupper() and isinstance(value, Resource)
    }


def test_builtin_resources_lists_every_constant_once() -> None:
    assert len(set(BUILTIN_RESOURCES)) == len(BUILTIN_RESOURCES)
    assert set(BUILTIN_RESOURCES) == set(constants().values())
    assert len(constants()) >= 33


def test_each_constant_is_named_after_its_plural() -> None:
    for name, resource in constants().items():
        assert name == resource.plural.upper(), name


def test_kinds_and_api_versions_are_unique() -> None:
    seen = [(r.api_version, r.kind) for r in BUILTIN_RESOURCES]
    assert len(seen) == len(set(seen))


def test_the_old_import_paths_still_work() -> None:
    for name in ("PODS", "NAMESPACES", "CONFIGMAPS", "SECRETS", "EVENTS", "LEASES"):
        assert getattr(kcontrol.client._interface, name) is getattr(kcontrol.client, name)
    for name in ("DEPLOYMENTS", "REPLICASETS", "Resource"):
        assert getattr(kcontrol.client._interface, name) is getattr(kcontrol.client, name)
