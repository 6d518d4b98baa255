"""The API calls of the garbage collector's workers: upstream's ``operations.go`` and
``patch.go``.

Every call names its object by the graph's coordinates, mapped to a resource through the
REST mapper (a kind the mapper does not know yet raises
:class:`~kcontrol.errors.NoKindMatch`: the worker retries after the next discovery). Writes
keep other writers' fields:

- a delete carries the object's uid as a precondition, and the resourceVersion the decision
  was made at; when that conflicts but the owner references are unchanged, it is sent again
  without the resourceVersion (upstream's ``deleteObject``);
- owner references are removed with a JSON merge patch of the remaining list, made from a
  fresh GET and sent with that GET's ``uid`` and ``resourceVersion`` (upstream's JSON merge
  patch, which it falls back to for custom resources): a concurrent change conflicts and
  the item is retried, so no reference written meanwhile is lost;
- a finalizer is removed the same way, from a fresh GET, retried on conflict
  (upstream's ``removeFinalizer``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from kcontrol.client import Client, PatchType, Resource
from kcontrol.discovery import RESTMapper
from kcontrol.errors import Conflict, NotFound
from kcontrol.retry import DEFAULT_RETRY, retry_on_conflict

from ._graph import ObjectReference, OwnerReference

__all__ = ["Operations"]


class Operations:
    """Reads and writes of objects named by graph coordinates; see the module docstring."""

    def __init__(self, client: Client, mapper: RESTMapper) -> None:
        self._client = client
        self._mapper = mapper

    async def resource(self, api_version: str, kind: str) -> Resource:
        return await self._mapper.resource_for(api_version, kind)

    async def get(self, identity: ObjectReference) -> Mapping[str, Any]:
        """A live GET (NotFound raised as such)."""
        resource = await self.resource(identity.api_version, identity.kind)
        return await self._client.get(resource, identity.name, namespace=identity.namespace or None)

    async def get_owner(
        self, ref: OwnerReference, namespace: str
    ) -> tuple[Resource, Mapping[str, Any]]:
        """A live GET of the owner ``ref`` names, in ``namespace`` if its kind is namespaced."""
        resource = await self.resource(str(ref.get("apiVersion")), str(ref.get("kind")))
        obj = await self._client.get(
            resource, str(ref.get("name")), namespace=namespace if resource.namespaced else None
        )
        return resource, obj

    async def delete(
        self,
        identity: ObjectReference,
        resource_version: str,
        owners_at_version: Sequence[OwnerReference],
        policy: str,
    ) -> None:
        resource = await self.resource(identity.api_version, identity.kind)
        namespace = identity.namespace or None
        preconditions = {"uid": identity.uid}
        if resource_version:
            preconditions["resourceVersion"] = resource_version
        try:
            await self._client.delete(
                resource,
                identity.name,
                namespace=namespace,
                preconditions=preconditions,
                propagation_policy=policy,
            )
            return
        except Conflict:
            if not resource_version:
                raise
        try:
            live = await self._client.get(resource, identity.name, namespace=namespace)
        except NotFound:
            return
        metadata = live.get("metadata") or {}
        if metadata.get("uid") != identity.uid:
            return  # deleted and made again: not ours to delete
        if list(metadata.get("ownerReferences") or ()) != list(owners_at_version):
            raise Conflict(f"owner references of {identity} changed since the decision")
        await self._client.delete(
            resource,
            identity.name,
            namespace=namespace,
            preconditions={"uid": identity.uid},
            propagation_policy=policy,
        )

    async def remove_owner_references(
        self, identity: ObjectReference, owner_uids: Collection[str]
    ) -> None:
        """Remove the references to ``owner_uids`` from the object, keeping the others; a
        missing object or one of another uid is left alone."""

        def keep(refs: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
            return [r for r in refs if r.get("uid") not in owner_uids]

        await self._patch_metadata(identity, "ownerReferences", keep)

    async def unblock_owner_references(self, identity: ObjectReference) -> None:
        """Set ``blockOwnerDeletion: false`` on every owner reference of the object (upstream's
        ``unblockOwnerReferences``: a dependent in a cycle stops blocking its owners)."""

        def unblock(refs: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
            return [
                {**r, "blockOwnerDeletion": False} if r.get("blockOwnerDeletion") else r
                for r in refs
            ]

        await self._patch_metadata(identity, "ownerReferences", unblock)

    async def remove_finalizer(self, identity: ObjectReference, finalizer: str) -> None:
        def without(values: list[Any]) -> list[Any]:
            return [v for v in values if v != finalizer]

        await self._patch_metadata(identity, "finalizers", without)

    async def _patch_metadata(
        self,
        identity: ObjectReference,
        field: str,
        change: Callable[[list[Any]], list[Any]],
    ) -> None:
        """Read the object, apply ``change`` to ``metadata.<field>``, and merge-patch the result
        with the read's uid and resourceVersion, again on conflict; nothing is sent when the
        list is unchanged, the object is gone, or its uid is another."""
        resource = await self.resource(identity.api_version, identity.kind)
        namespace = identity.namespace or None

        async def attempt() -> None:
            try:
                live = await self._client.get(resource, identity.name, namespace=namespace)
            except NotFound:
                return
            metadata = live.get("metadata") or {}
            if metadata.get("uid") != identity.uid:
                return
            before = list(metadata.get(field) or ())
            after = change(before)
            if after == before:
                return
            patch = {
                "metadata": {
                    field: after or None,
                    "uid": identity.uid,
                    "resourceVersion": metadata.get("resourceVersion"),
                }
            }
            try:
                await self._client.patch(
                    resource, identity.name, patch, namespace=namespace, patch_type=PatchType.MERGE
                )
            except NotFound:
                return

        await retry_on_conflict(DEFAULT_RETRY, attempt)
