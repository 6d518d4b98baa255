"""Async Kubernetes REST client: any resource, plain-dict objects, typed errors, client-side QPS."""

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

__all__ = [
    "CONFIGMAPS",
    "DEPLOYMENTS",
    "EVENTS",
    "LEASES",
    "NAMESPACES",
    "PODS",
    "REPLICASETS",
    "SECRETS",
    "Client",
    "Object",
    "PatchType",
    "Reader",
    "Resource",
    "WatchEvent",
    "Writer",
]
