"""The REST resources of the common built-in kinds, as :class:`Resource` constants.

Each constant is what the API server's discovery says - group, preferred version, plural,
kind and scope - and a test checks every one against a real apiserver, so a constant can be
used wherever discovery would be asked. Kinds of other groups, custom resources above all,
are found at run time by :mod:`kcontrol.discovery`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "BUILTIN_RESOURCES",
    "CLUSTERROLEBINDINGS",
    "CLUSTERROLES",
    "CONFIGMAPS",
    "CONTROLLERREVISIONS",
    "CRONJOBS",
    "CUSTOMRESOURCEDEFINITIONS",
    "DAEMONSETS",
    "DEPLOYMENTS",
    "ENDPOINTS",
    "ENDPOINTSLICES",
    "EVENTS",
    "HORIZONTALPODAUTOSCALERS",
    "INGRESSES",
    "JOBS",
    "LEASES",
    "LIMITRANGES",
    "NAMESPACES",
    "NETWORKPOLICIES",
    "NODES",
    "PERSISTENTVOLUMECLAIMS",
    "PERSISTENTVOLUMES",
    "PODDISRUPTIONBUDGETS",
    "PODS",
    "PRIORITYCLASSES",
    "REPLICASETS",
    "REPLICATIONCONTROLLERS",
    "RESOURCEQUOTAS",
    "ROLEBINDINGS",
    "ROLES",
    "SECRETS",
    "SERVICEACCOUNTS",
    "SERVICES",
    "STATEFULSETS",
    "STORAGECLASSES",
    "Resource",
]


@dataclass(frozen=True, slots=True)
class Resource:
    """A REST resource: group/version/plural, the kind it serves, and its scope.

    ``group`` is ``""`` for the core API. Instances are hashable and compare by value, so they
    can key caches (the informer factory shares one informer per resource).
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """``apiVersion`` of the objects: ``v1`` or ``apps/v1``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """The URL path; ``namespace`` is ignored for cluster-scoped resources.

        Without ``namespace`` a namespaced resource's path lists across all namespaces.
        """
        parts = ["/api/v1" if not self.group else f"/apis/{self.group}/{self.version}"]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name is not None:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


def object_path(
    resource: Resource, name: str, namespace: str | None, subresource: str | None
) -> str:
    """The path of the object ``name`` (or of its ``subresource``), for a client's request.

    Raises :class:`ValueError` when ``name`` is empty, or ``namespace`` is missing for a
    namespaced ``resource``: the request would address the collection, or every namespace.
    """
    if not name:
        raise ValueError(f"a {resource.kind} name is required")
    if resource.namespaced and not namespace:
        raise ValueError(f"{resource.kind} is namespaced: a namespace is required")
    return resource.path(namespace, name, subresource)


# -- core (v1) ----------------------------------------------------------------------------------
PODS: Final = Resource("", "v1", "pods", "Pod")
"""Pod objects (``v1``, namespaced)."""
SERVICES: Final = Resource("", "v1", "services", "Service")
"""Service objects (``v1``, namespaced)."""
ENDPOINTS: Final = Resource("", "v1", "endpoints", "Endpoints")
"""Endpoints objects (``v1``, namespaced)."""
CONFIGMAPS: Final = Resource("", "v1", "configmaps", "ConfigMap")
"""ConfigMap objects (``v1``, namespaced)."""
SECRETS: Final = Resource("", "v1", "secrets", "Secret")
"""Secret objects (``v1``, namespaced)."""
SERVICEACCOUNTS: Final = Resource("", "v1", "serviceaccounts", "ServiceAccount")
"""ServiceAccount objects (``v1``, namespaced)."""
PERSISTENTVOLUMECLAIMS: Final = Resource(
    "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"
)
"""PersistentVolumeClaim objects (``v1``, namespaced)."""
PERSISTENTVOLUMES: Final = Resource(
    "", "v1", "persistentvolumes", "PersistentVolume", namespaced=False
)
"""PersistentVolume objects (``v1``, cluster-scoped)."""
EVENTS: Final = Resource("", "v1", "events", "Event")
"""Event objects (``v1``, namespaced)."""
LIMITRANGES: Final = Resource("", "v1", "limitranges", "LimitRange")
"""LimitRange objects (``v1``, namespaced)."""
RESOURCEQUOTAS: Final = Resource("", "v1", "resourcequotas", "ResourceQuota")
"""ResourceQuota objects (``v1``, namespaced)."""
NAMESPACES: Final = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
"""Namespace objects (``v1``, cluster-scoped)."""
NODES: Final = Resource("", "v1", "nodes", "Node", namespaced=False)
"""Node objects (``v1``, cluster-scoped)."""
REPLICATIONCONTROLLERS: Final = Resource(
    "", "v1", "replicationcontrollers", "ReplicationController"
)
"""ReplicationController objects (``v1``, namespaced)."""

# -- workloads ------------------------------------------------------------------------------------
DEPLOYMENTS: Final = Resource("apps", "v1", "deployments", "Deployment")
"""Deployment objects (``apps/v1``, namespaced)."""
REPLICASETS: Final = Resource("apps", "v1", "replicasets", "ReplicaSet")
"""ReplicaSet objects (``apps/v1``, namespaced)."""
STATEFULSETS: Final = Resource("apps", "v1", "statefulsets", "StatefulSet")
"""StatefulSet objects (``apps/v1``, namespaced)."""
DAEMONSETS: Final = Resource("apps", "v1", "daemonsets", "DaemonSet")
"""DaemonSet objects (``apps/v1``, namespaced)."""
CONTROLLERREVISIONS: Final = Resource("apps", "v1", "controllerrevisions", "ControllerRevision")
"""ControllerRevision objects (``apps/v1``, namespaced)."""
JOBS: Final = Resource("batch", "v1", "jobs", "Job")
"""Job objects (``batch/v1``, namespaced)."""
CRONJOBS: Final = Resource("batch", "v1", "cronjobs", "CronJob")
"""CronJob objects (``batch/v1``, namespaced)."""
HORIZONTALPODAUTOSCALERS: Final = Resource(
    "autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler"
)
"""HorizontalPodAutoscaler objects (``autoscaling/v2``, namespaced)."""
PODDISRUPTIONBUDGETS: Final = Resource(
    "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget"
)
"""PodDisruptionBudget objects (``policy/v1``, namespaced)."""
PRIORITYCLASSES: Final = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)
"""PriorityClass objects (``scheduling.k8s.io/v1``, cluster-scoped)."""

# -- networking -----------------------------------------------------------------------------------
ENDPOINTSLICES: Final = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
"""EndpointSlice objects (``discovery.k8s.io/v1``, namespaced)."""
INGRESSES: Final = Resource("networking.k8s.io", "v1", "ingresses", "Ingress")
"""Ingress objects (``networking.k8s.io/v1``, namespaced)."""
NETWORKPOLICIES: Final = Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy")
"""NetworkPolicy objects (``networking.k8s.io/v1``, namespaced)."""

# -- storage --------------------------------------------------------------------------------------
STORAGECLASSES: Final = Resource(
    "storage.k8s.io", "v1", "storageclasses", "StorageClass", namespaced=False
)
"""StorageClass objects (``storage.k8s.io/v1``, cluster-scoped)."""

# -- access control -------------------------------------------------------------------------------
ROLES: Final = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
"""Role objects (``rbac.authorization.k8s.io/v1``, namespaced)."""
ROLEBINDINGS: Final = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
"""RoleBinding objects (``rbac.authorization.k8s.io/v1``, namespaced)."""
CLUSTERROLES: Final = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False
)
"""ClusterRole objects (``rbac.authorization.k8s.io/v1``, cluster-scoped)."""
CLUSTERROLEBINDINGS: Final = Resource(
    "rbac.authorization.k8s.io",
    "v1",
    "clusterrolebindings",
    "ClusterRoleBinding",
    namespaced=False,
)
"""ClusterRoleBinding objects (``rbac.authorization.k8s.io/v1``, cluster-scoped)."""

# -- cluster machinery ----------------------------------------------------------------------------
LEASES: Final = Resource("coordination.k8s.io", "v1", "leases", "Lease")
"""Lease objects (``coordination.k8s.io/v1``, namespaced)."""
CUSTOMRESOURCEDEFINITIONS: Final = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)
"""CustomResourceDefinition objects (``apiextensions.k8s.io/v1``, cluster-scoped)."""

BUILTIN_RESOURCES: Final[tuple[Resource, ...]] = (
    PODS,
    SERVICES,
    ENDPOINTS,
    CONFIGMAPS,
    SECRETS,
    SERVICEACCOUNTS,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    EVENTS,
    LIMITRANGES,
    RESOURCEQUOTAS,
    NAMESPACES,
    NODES,
    REPLICATIONCONTROLLERS,
    DEPLOYMENTS,
    REPLICASETS,
    STATEFULSETS,
    DAEMONSETS,
    CONTROLLERREVISIONS,
    JOBS,
    CRONJOBS,
    HORIZONTALPODAUTOSCALERS,
    PODDISRUPTIONBUDGETS,
    PRIORITYCLASSES,
    ENDPOINTSLICES,
    INGRESSES,
    NETWORKPOLICIES,
    STORAGECLASSES,
    ROLES,
    ROLEBINDINGS,
    CLUSTERROLES,
    CLUSTERROLEBINDINGS,
    LEASES,
    CUSTOMRESOURCEDEFINITIONS,
)
"""Every constant above, each once: what :class:`~kcontrol.discovery.StaticRESTMapper` knows
by default."""
