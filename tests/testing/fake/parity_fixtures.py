"""The test table that runs on both servers: a :class:`Server` fixture yielding the fake
client or a real client on the suite's control plane, the CRDs both serve, and helpers that
reduce answers to what both must agree on."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from kcontrol.client import NAMESPACES, Client, Object, Resource
from kcontrol.envtest import ControlPlane
from kcontrol.testing import FakeClient

GROUP = "parity.kcontrol.io"

WIDGETS = Resource(GROUP, "v1", "widgets", "Widget")
"""A custom resource with a status subresource and a schema with keyed and atomic lists."""

GADGETS = Resource(GROUP, "v1", "gadgets", "Gadget")
"""A custom resource without a status subresource, its spec and status free-form."""

_CONDITION = {
    "type": "object",
    "required": ["type", "status"],
    "properties": {
        "type": {"type": "string"},
        "status": {"type": "string"},
        "reason": {"type": "string"},
    },
}

WIDGET_CRD: Object = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "image": {"type": "string"},
                                    "replicas": {"type": "integer"},
                                    "tags": {"type": "array", "items": {"type": "string"}},
                                    "ports": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "items": {
                                            "type": "object",
                                            "required": ["name"],
                                            "properties": {
                                                "name": {"type": "string"},
                                                "port": {"type": "integer"},
                                            },
                                        },
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "phase": {"type": "string"},
                                    "readyReplicas": {"type": "integer"},
                                    "conditions": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["type"],
                                        "items": _CONDITION,
                                    },
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}

GADGET_CRD: Object = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gadgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}

CRDS = [WIDGET_CRD, GADGET_CRD]


@dataclass
class Server:
    """One of the two servers, as a test of the table sees it."""

    client: Client
    namespace: str
    real: bool


@pytest.fixture(
    params=[
        pytest.param("fake"),
        pytest.param("real", marks=pytest.mark.integration),
    ]
)
def backend(request: pytest.FixtureRequest) -> ControlPlane | None:
    """None for the fake, else the suite's control plane (started, outside any event loop,
    only for the ``real`` runs)."""
    if request.param == "fake":
        return None
    plane: ControlPlane = request.getfixturevalue("control_plane")
    return plane


@pytest.fixture
async def server(backend: ControlPlane | None) -> AsyncIterator[Server]:
    """The fake client (with the CRDs), or an admin client of the suite's control plane (the
    CRDs installed) and a fresh namespace."""
    if backend is None:
        yield Server(FakeClient(crds=CRDS), "default", real=False)
        return
    await backend.install_crds(CRDS)
    async with backend.admin_client() as client:
        namespace = f"t-{uuid.uuid4().hex[:10]}"
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        try:
            yield Server(client, namespace, real=True)
        finally:
            await client.delete(NAMESPACES, namespace)


def ownership(obj: Object) -> list[tuple[str, str, str, str, bytes]]:
    """``obj``'s managedFields without their times, as (manager, operation, apiVersion,
    subresource, fieldsV1 bytes), in a stable order."""
    entries = obj["metadata"].get("managedFields") or []
    return sorted(
        (
            e["manager"],
            e["operation"],
            e["apiVersion"],
            e.get("subresource", ""),
            bytes(e["fieldsV1"]),
        )
        for e in entries
    )


def fields_of(obj: Object, manager: str, operation: str = "Apply") -> Any:
    """The decoded field set ``manager`` owns through ``operation`` (None: no entry)."""
    for entry in obj["metadata"].get("managedFields") or []:
        if entry["manager"] == manager and entry["operation"] == operation:
            return entry["fieldsV1"].to_dict()
    return None


def rv(obj: Object) -> int:
    return int(obj["metadata"]["resourceVersion"])


def generation(obj: Object) -> int | None:
    value = obj["metadata"].get("generation")
    return int(value) if value is not None else None
