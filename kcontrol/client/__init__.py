"""Async Kubernetes REST client: any resource, plain-dict objects, typed errors, client-side QPS."""

from kcontrol.client._config import (
    AuthProvider,
    ClientConfig,
    ConfigError,
    KubeConfigurationAuth,
    StaticTokenAuth,
    TokenFileAuth,
    load_config,
)
from kcontrol.client._decode import encode_json
from kcontrol.client._fields import FieldsV1
from kcontrol.client._gate import WriteGate
from kcontrol.client._interface import (
    CONFIGMAPS,
    DEPLOYMENTS,
    EVENTS,
    LEASES,
    NAMESPACES,
    PODS,
    REPLICASETS,
    SECRETS,
    Client,
    Object,
    PatchType,
    Reader,
    Resource,
    WatchEvent,
    Writer,
)
from kcontrol.client._options import ListOptions
from kcontrol.client._rest import ApiClient
from kcontrol.errors import WriteRefused

__all__ = [
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
