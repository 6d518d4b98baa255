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
SERVICES: Final = Resource("", "v1", "services", "Service")
ENDPOINTS: Final = Resource("", "v1", "endpoints", "Endpoints")
CONFIGMAPS: Final = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS: Final = Resource("", "v1", "secrets", "Secret")
SERVICEACCOUNTS: Final = Resource("", "v1", "serviceaccounts", "ServiceAccount")
PERSISTENTVOLUMECLAIMS: Final = Resource(
    "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"
)
PERSISTENTVOLUMES: Final = Resource(
    "", "v1", "persistentvolumes", "PersistentVolume", namespaced=False
)
EVENTS: Final = Resource("", "v1", "events", "Event")
LIMITRANGES: Final = Resource("", "v1", "limitranges", "LimitRange")
RESOURCEQUOTAS: Final = Resource("", "v1", "resourcequotas", "ResourceQuota")
NAMESPACES: Final = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
NODES: Final = Resource("", "v1", "nodes", "Node", namespaced=False)
REPLICATIONCONTROLLERS: Final = Resource(
    "", "v1", "replicationcontrollers", "ReplicationController"
)

# -- workloads ------------------------------------------------------------------------------------
DEPLOYMENTS: Final = Resource("apps", "v1", "deployments", "Deployment")
REPLICASETS: Final = Resource("apps", "v1", "replicasets", "ReplicaSet")
STATEFULSETS: Final = Resource("apps", "v1", "statefulsets", "StatefulSet")
DAEMONSETS: Final = Resource("apps", "v1", "daemonsets", "DaemonSet")
CONTROLLERREVISIONS: Final = Resource("apps", "v1", "controllerrevisions", "ControllerRevision")
JOBS: Final = Resource("batch", "v1", "jobs", "Job")
CRONJOBS: Final = Resource("batch", "v1", "cronjobs", "CronJob")
HORIZONTALPODAUTOSCALERS: Final = Resource(
    "autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler"
)
PODDISRUPTIONBUDGETS: Final = Resource(
    "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget"
)
PRIORITYCLASSES: Final = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)

# -- networking -----------------------------------------------------------------------------------
ENDPOINTSLICES: Final = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
INGRESSES: Final = Resource("networking.k8s.io", "v1", "ingresses", "Ingress")
NETWORKPOLICIES: Final = Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy")

# -- storage --------------------------------------------------------------------------------------
STORAGECLASSES: Final = Resource(
    "storage.k8s.io", "v1", "storageclasses", "StorageClass", namespaced=False
)

# -- access control -------------------------------------------------------------------------------
ROLES: Final = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLEBINDINGS: Final = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
CLUSTERROLES: Final = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False
)
CLUSTERROLEBINDINGS: Final = Resource(
    "rbac.authorization.k8s.io",
    "v1",
    "clusterrolebindings",
    "ClusterRoleBinding",
    namespaced=False,
)

# -- cluster machinery ----------------------------------------------------------------------------
LEASES: Final = Resource("coordination.k8s.io", "v1", "leases", "Lease")
CUSTOMRESOURCEDEFINITIONS: Final = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)

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
