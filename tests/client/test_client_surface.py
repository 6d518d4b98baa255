"""kcontrol.client's public surface is deliberate (CONVENTIONS.md item 3)."""

from __future__ import annotations

import kcontrol.client


def test_public_surface_is_deliberate() -> None:
    assert sorted(kcontrol.client.__all__) == sorted(
        [
            "CONFIGMAPS",
            "BUILTIN_RESOURCES",
            "CLUSTERROLEBINDINGS",
            "CLUSTERROLES",
            "CONTROLLERREVISIONS",
            "CRONJOBS",
            "CUSTOMRESOURCEDEFINITIONS",
            "DAEMONSETS",
            "ENDPOINTS",
            "ENDPOINTSLICES",
            "HORIZONTALPODAUTOSCALERS",
            "INGRESSES",
            "JOBS",
            "LIMITRANGES",
            "NETWORKPOLICIES",
            "NODES",
            "PERSISTENTVOLUMECLAIMS",
            "PERSISTENTVOLUMES",
            "PODDISRUPTIONBUDGETS",
            "PRIORITYCLASSES",
            "RESOURCEQUOTAS",
            "ROLEBINDINGS",
            "ROLES",
            "SERVICEACCOUNTS",
            "SERVICES",
            "STATEFULSETS",
            "STORAGECLASSES",
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
            "MetadataClient",
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
            "deep_copy",
            "encode_json",
            "load_config",
        ]
    )
    for name in kcontrol.client.__all__:
        assert hasattr(kcontrol.client, name), name
