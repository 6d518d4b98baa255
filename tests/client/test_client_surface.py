"""kcontrol.client's public surface is deliberate (CONVENTIONS.md item 3)."""

from __future__ import annotations

import kcontrol.client


def test_public_surface_is_deliberate() -> None:
    assert sorted(kcontrol.client.__all__) == sorted(
        [
            "CONFIGMAPS",
            "DEPLOYMENTS",
            "EVENTS",
            "LEASES",
            "NAMESPACES",
            "PODS",
            "REPLICASETS",
            "SECRETS",
            "ApiClient",
            "AuthProvider",
            "Client",
            "ClientConfig",
            "ConfigError",
            "FieldsV1",
            "KubeConfigurationAuth",
            "ListOptions",
            "Object",
            "PatchType",
            "Reader",
            "Resource",
            "StaticTokenAuth",
            "TokenFileAuth",
            "WatchEvent",
            "WriteGate",
            "WriteRefused",
            "Writer",
            "encode_json",
            "load_config",
        ]
    )
    for name in kcontrol.client.__all__:
        assert hasattr(kcontrol.client, name), name
