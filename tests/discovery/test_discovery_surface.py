"""kcontrol.discovery's public surface is deliberate (CONVENTIONS.md item 3)."""

from __future__ import annotations

import kcontrol.discovery


def test_public_surface_is_deliberate() -> None:
    assert sorted(kcontrol.discovery.__all__) == [
        "APIGroup",
        "DiscoveryClient",
        "DynamicRESTMapper",
        "NoKindMatch",
        "NoResourceMatch",
        "RESTMapper",
        "RawReader",
        "ServerResources",
        "StaticRESTMapper",
    ]
    for name in kcontrol.discovery.__all__:
        assert hasattr(kcontrol.discovery, name), name
