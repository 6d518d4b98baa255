"""The objects: the start-up population of K kinds and the cascade; no cluster needed.

Pure helpers: the 20 kinds (17 built-in resources that nothing in the benchmark's cluster
acts on, and three custom resources of :data:`CRDS`), the manifest of each, the plan of the
start-up population (which object lives in which namespace and which owns which), the
cascade's owners and dependents, and the checks the benchmark makes of what the collector
left behind.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kcontrol.client import (
    CONFIGMAPS,
    CONTROLLERREVISIONS,
    DEPLOYMENTS,
    ENDPOINTSLICES,
    HORIZONTALPODAUTOSCALERS,
    INGRESSES,
    LEASES,
    LIMITRANGES,
    NETWORKPOLICIES,
    PODDISRUPTIONBUDGETS,
    REPLICATIONCONTROLLERS,
    ROLEBINDINGS,
    ROLES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    Resource,
)

__all__ = [
    "BACKGROUND_LABEL",
    "CASCADE_OWNER",
    "CRDS",
    "DEPENDENT",
    "KINDS",
    "OWNED_SHARE",
    "PODTEMPLATES",
    "ROLE_LABEL",
    "SURVIVOR",
    "SURVIVOR_DEPENDENT",
    "Cascade",
    "Item",
    "Kind",
    "background_namespaces",
    "cascade_objects",
    "manifest",
    "owner_reference",
    "plan",
]

GROUP = "bench.kcontrol.io"
BACKGROUND_LABEL = "bench.kcontrol.io/gc-background"
"""On every start-up object (value ``"true"``)."""
ROLE_LABEL = "bench.kcontrol.io/gc-role"
"""On every cascade object: :data:`CASCADE_OWNER`, :data:`DEPENDENT`, :data:`SURVIVOR` or
:data:`SURVIVOR_DEPENDENT`."""
CASCADE_OWNER = "owner"
DEPENDENT = "dependent"
SURVIVOR = "survivor"
SURVIVOR_DEPENDENT = "survivor-dependent"
OWNED_SHARE = 0.6
"""The share of start-up objects with an owner reference (to another start-up object of
the same namespace, of whatever kind)."""
IMAGE = "registry.example/app:1"

PODTEMPLATES = Resource("", "v1", "podtemplates", "PodTemplate")


def _crd(plural: str, kind: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


WIDGETS = Resource(GROUP, "v1", "widgets", "Widget")
GADGETS = Resource(GROUP, "v1", "gadgets", "Gadget")
GIZMOS = Resource(GROUP, "v1", "gizmos", "Gizmo")
CRDS = tuple(_crd(r.plural, r.kind) for r in (WIDGETS, GADGETS, GIZMOS))
"""The three CustomResourceDefinitions the cluster is started with (no schema: any spec)."""


def _labels(name: str) -> dict[str, str]:
    return {"app": name}


def _pod_template(name: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": _labels(name)},
        "spec": {"containers": [{"name": "app", "image": IMAGE}]},
    }


Body = Callable[[str], dict[str, Any]]
"""The kind's fields besides apiVersion, kind and metadata, for an object named so."""


@dataclass(frozen=True)
class Kind:
    resource: Resource
    body: Body


KINDS: tuple[Kind, ...] = (
    Kind(CONFIGMAPS, lambda n: {"data": {"key": n}}),
    Kind(SECRETS, lambda n: {"type": "Opaque", "data": {"key": _b64(n)}}),
    Kind(WIDGETS, lambda n: {"spec": {"size": 1}}),
    Kind(SERVICEACCOUNTS, lambda n: {}),
    Kind(
        SERVICES,
        lambda n: {"spec": {"clusterIP": "None", "selector": _labels(n), "ports": [{"port": 80}]}},
    ),
    Kind(GADGETS, lambda n: {"spec": {"size": 2}}),
    Kind(PODTEMPLATES, lambda n: {"template": _pod_template(n)}),
    Kind(LIMITRANGES, lambda n: {"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}}]}}),
    Kind(
        REPLICATIONCONTROLLERS,
        lambda n: {"spec": {"replicas": 0, "selector": _labels(n), "template": _pod_template(n)}},
    ),
    Kind(CONTROLLERREVISIONS, lambda n: {"data": {"name": n}, "revision": 1}),
    Kind(
        DEPLOYMENTS,
        lambda n: {
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": _labels(n)},
                "template": _pod_template(n),
            }
        },
    ),
    Kind(
        ROLES,
        lambda n: {"rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
    ),
    Kind(
        ROLEBINDINGS,
        lambda n: {
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": n},
            "subjects": [{"kind": "ServiceAccount", "name": "default"}],
        },
    ),
    Kind(GIZMOS, lambda n: {"spec": {"size": 3}}),
    Kind(LEASES, lambda n: {"spec": {"holderIdentity": n}}),
    Kind(
        PODDISRUPTIONBUDGETS,
        lambda n: {"spec": {"minAvailable": 1, "selector": {"matchLabels": _labels(n)}}},
    ),
    Kind(NETWORKPOLICIES, lambda n: {"spec": {"podSelector": {"matchLabels": _labels(n)}}}),
    Kind(ENDPOINTSLICES, lambda n: {"addressType": "IPv4", "endpoints": [], "ports": []}),
    Kind(
        INGRESSES,
        lambda n: {"spec": {"defaultBackend": {"service": {"name": n, "port": {"number": 80}}}}},
    ),
    Kind(
        HORIZONTALPODAUTOSCALERS,
        lambda n: {
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": n},
                "minReplicas": 1,
                "maxReplicas": 2,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 80},
                        },
                    }
                ],
            }
        },
    ),
)
"""Deletable, cheap to create, and inert in the benchmark's cluster (no controller of the
cluster's acts on them: headless Services allocate no IP, Deployments and
ReplicationControllers have 0 replicas and no controller, ``--kinds N`` takes the first N).
ResourceQuotas (quota admission), PersistentVolumeClaims (a finalizer only their controller
removes) and Events (the collectors ignore them) are left out."""


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@dataclass(frozen=True)
class Item:
    """One start-up object: its kind (an index of :data:`KINDS`), namespace and name, and
    the index of its owner in the plan (None: no owner)."""

    kind: int
    namespace: str
    name: str
    owner: int | None


def background_namespaces(count: int) -> list[str]:
    return [f"gc-bg-{i:03d}" for i in range(count)]


def plan(objects: int, kinds: int, namespaces: int) -> list[Item]:
    """``objects`` start-up objects, the kinds in turn, spread evenly over ``namespaces``; of
    each namespace's objects, the first ``1 - OWNED_SHARE`` have no owner and each of the
    others is owned by one of those, in turn (owners of every kind own dependents of every
    kind). Create the unowned ones first: an owner reference needs its owner's uid."""
    if not 1 <= kinds <= len(KINDS):
        raise ValueError(f"kinds must be 1..{len(KINDS)}, got {kinds}")
    if objects < 1 or namespaces < 1:
        raise ValueError("objects and namespaces must be positive")
    names = background_namespaces(namespaces)
    by_namespace: dict[str, list[int]] = {n: [] for n in names}
    items: list[Item] = []
    for i in range(objects):
        namespace = names[i % namespaces]
        by_namespace[namespace].append(i)
        kind = (i // namespaces) % kinds
        plural = KINDS[kind].resource.plural
        items.append(Item(kind, namespace, f"{plural}-{i:06d}", None))
    for indices in by_namespace.values():
        roots = max(1, round(len(indices) * (1 - OWNED_SHARE)))
        for n, i in enumerate(indices[roots:]):
            item = items[i]
            items[i] = Item(item.kind, item.namespace, item.name, indices[n % roots])
    return items


def owner_reference(resource: Resource, name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": resource.api_version, "kind": resource.kind, "name": name, "uid": uid}


def manifest(
    resource: Resource,
    name: str,
    body: Mapping[str, Any],
    labels: Mapping[str, str],
    owners: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": dict(labels)}
    if owners:
        metadata["ownerReferences"] = [dict(o) for o in owners]
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": metadata,
        **body,
    }


def item_manifest(item: Item, owner: dict[str, Any] | None) -> dict[str, Any]:
    """A start-up object's manifest; ``owner`` its owner reference, if it has an owner."""
    kind = KINDS[item.kind]
    return manifest(
        kind.resource,
        item.name,
        kind.body(item.name),
        {BACKGROUND_LABEL: "true"},
        [owner] if owner else [],
    )


@dataclass(frozen=True)
class Cascade:
    """``owners`` ConfigMaps, each with ``dependents`` dependents (ConfigMaps and Secrets in
    turn), deleted in the background; and ``survivors`` ConfigMaps with as many dependents
    each that stay (a collector that deletes their dependents is wrong)."""

    owners: int
    dependents: int

    @property
    def survivors(self) -> int:
        return max(1, self.owners // 100)

    @property
    def doomed(self) -> int:
        """The dependents the collector must delete."""
        return self.owners * self.dependents

    @property
    def label(self) -> str:
        return f"{self.owners}x{self.dependents}"


def owner_names(cascade: Cascade) -> tuple[list[str], list[str]]:
    """The owners that are deleted, and the survivors."""
    return (
        [f"owner-{i:05d}" for i in range(cascade.owners)],
        [f"survivor-{i:05d}" for i in range(cascade.survivors)],
    )


def cascade_objects(
    cascade: Cascade, owner_uids: Mapping[str, str]
) -> list[tuple[Resource, dict[str, Any]]]:
    """The dependents of every owner and survivor named in ``owner_uids`` (name -> uid):
    ConfigMaps and Secrets in turn, each with one owner reference (no
    ``blockOwnerDeletion``: background deletion)."""
    out = []
    for owner, uid in owner_uids.items():
        role = SURVIVOR_DEPENDENT if owner.startswith("survivor-") else DEPENDENT
        ref = owner_reference(CONFIGMAPS, owner, uid)
        for j in range(cascade.dependents):
            kind = KINDS[j % 2]
            name = f"{owner}-dep-{j:03d}"
            out.append(
                (
                    kind.resource,
                    manifest(kind.resource, name, kind.body(name), {ROLE_LABEL: role}, [ref]),
                )
            )
    return out
