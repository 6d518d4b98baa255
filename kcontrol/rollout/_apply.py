"""Server-side apply of the example manifests (``kubectl apply --server-side``, in short)."""

from __future__ import annotations

from pathlib import Path

import yaml

from kcontrol.client import DEPLOYMENTS, NAMESPACES, Object, PatchType, Resource, Writer

__all__ = ["FIELD_MANAGER", "apply_file", "load_manifests"]

FIELD_MANAGER = "kcontrol-rollout"

_KINDS: dict[tuple[str, str], Resource] = {
    (NAMESPACES.api_version, NAMESPACES.kind): NAMESPACES,
    (DEPLOYMENTS.api_version, DEPLOYMENTS.kind): DEPLOYMENTS,
}


def load_manifests(path: Path) -> list[Object]:
    """The objects of a YAML file (documents separated by ``---``; empty ones skipped)."""
    with path.open() as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc]


async def apply_file(client: Writer, path: Path) -> list[Object]:
    """Apply every object of ``path`` (Namespaces and Deployments) as :data:`FIELD_MANAGER`,
    taking over conflicting fields; the objects as the server returned them."""
    applied = []
    for obj in load_manifests(path):
        key = (obj.get("apiVersion", ""), obj.get("kind", ""))
        resource = _KINDS.get(key)
        if resource is None:
            raise ValueError(f"{path}: cannot apply {key[1]} {key[0]} (only {sorted(_KINDS)})")
        metadata = obj["metadata"]
        applied.append(
            await client.patch(
                resource,
                metadata["name"],
                obj,
                namespace=metadata.get("namespace") if resource.namespaced else None,
                patch_type=PatchType.APPLY,
                field_manager=FIELD_MANAGER,
                force=True,
            )
        )
    return applied
