"""A DaemonSet's ControllerRevisions: which one is current, creating it, and pruning the old
ones (upstream ``update.go``: ``constructHistory``, ``snapshot``, ``dedupCurHistories``,
``controlledHistories``, ``cleanupHistory``, ``Match``, ``getPatch``; Kubernetes 1.36).

Each distinct pod template of a DaemonSet is recorded as a ControllerRevision whose ``data``
is a strategic merge patch replacing ``spec.template`` (``{"spec": {"template": {...,
"$patch": "replace"}}}``): ``kubectl rollout undo`` applies it to roll back. Contracts:

- the revisions of a DaemonSet are those of its namespace it controls, or orphans its selector
  matches (adopted; owned ones that stopped matching are released);
- a revision is current when its data equals the DaemonSet's patch (compared as parsed JSON,
  with the ``"creationTimestamp": null`` older kube-controller-managers wrote into the
  template's metadata ignored); the others are old;
- with no current revision one is created, named ``<name>-<hash>`` with the
  ``controller-revision-hash`` label ``<hash>``, the hash being the pod template's (as the
  Deployment controller's ``pod-template-hash``, with ``status.collisionCount``), numbered one
  past the highest old revision, its data sent as the bytes Go writes
  (:func:`~kcontrol_controllers.history.body_to_create`): kube-controller-manager finds the
  current revision by comparing bytes, so after a hand-back it finds this one. A name
  taken by other data bumps ``status.collisionCount`` and fails the sync, which the retry
  then resolves under a new name;
- several current revisions (two controllers racing) are reduced to the one with the highest
  number, after the pods labelled with the others' hashes are relabelled; a current revision
  numbered below an old one is renumbered past it (a rollback to an earlier template);
- a revision missing the ``controller-revision-hash`` label gets its own name as the label;
- cleanup deletes the oldest old revisions past ``spec.revisionHistoryLimit``, skipping any
  whose hash a pod still carries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple

import orjson

from kcontrol.client import (
    CONTROLLERREVISIONS,
    DAEMONSETS,
    PODS,
    Client,
    Object,
    PatchType,
    deep_copy,
)
from kcontrol.controller import ControllerRefManager, recheck_owner
from kcontrol.errors import AlreadyExists, KcontrolError, NotFound
from kcontrol.informers import Indexer
from kcontrol.labels import Selector
from kcontrol.logging import get_logger

from ..hashing import canonical_json, fnv32a, safe_encode_string
from ..history import (
    CONTROLLER_REVISION_CONTROLLER_INDEX,
    body_to_create,
    controller_revision_index_key,
    equal_revision,
    next_revision,
    sort_controller_revisions,
)
from ..podutil import new_controller_ref
from ._names import UNIQUE_LABEL_KEY

__all__ = [
    "DAEMON_SET_API_VERSION",
    "DAEMON_SET_KIND",
    "DaemonSetHistory",
    "Revisions",
    "StaleCollisionCount",
    "get_patch",
    "match",
    "revisions_to_delete",
    "template_hash",
]

_log = get_logger(__name__)

DAEMON_SET_API_VERSION: Final = "apps/v1"
DAEMON_SET_KIND: Final = "DaemonSet"
_MASK32: Final = 0xFFFFFFFF


class StaleCollisionCount(KcontrolError):
    """The cached DaemonSet's ``status.collisionCount`` is older than the server's: the sync
    is retried once the cache caught up, without bumping it again."""


class Revisions(NamedTuple):
    """The outcome of :meth:`DaemonSetHistory.construct_history`."""

    current: Object
    old: list[Object]

    @property
    def hash(self) -> str:
        """The current revision's ``controller-revision-hash`` (the label new pods get)."""
        labels = (self.current.get("metadata") or {}).get("labels") or {}
        return str(labels.get(UNIQUE_LABEL_KEY) or "")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return _meta(obj).get("labels") or {}


# -- pure --------------------------------------------------------------------------------------


def template_hash(template: Mapping[str, Any], collision_count: int | None) -> str:
    """The hash naming a revision of ``template``: FNV-32a of the template's canonical JSON,
    then (when ``collision_count`` is not ``None``) of the count as 4 little-endian bytes and
    4 zero bytes, safe-encoded - the Deployment controller's ``pod-template-hash``, with the
    same stability promise (upstream ``controller.ComputeHash``, whose Go-specific input this
    port does not reproduce: revisions are recognised by data, never by name)."""
    h = fnv32a(canonical_json(template))
    if collision_count is not None:
        h = fnv32a((collision_count & _MASK32).to_bytes(4, "little") + bytes(4), seed=h)
    return safe_encode_string(str(h))


def get_patch(ds: Mapping[str, Any]) -> dict[str, Any]:
    """The revision data of ``ds``: a patch replacing its pod template (upstream
    ``getPatch``). A new dict, its keys sorted at every level as Go's ``json.Marshal`` of a
    map sorts them: ``kubectl rollout undo`` and kube-controller-manager compare a revision's
    bytes with their own encoding of the template, and the client sends keys in dict order."""
    template = dict((ds.get("spec") or {}).get("template") or {})
    patch: dict[str, Any] = orjson.loads(
        canonical_json({"spec": {"template": {**template, "$patch": "replace"}}})
    )
    return patch


def _normalized_data(data: Any) -> Any:
    """``data`` without ``spec.template.metadata.creationTimestamp: null``, which Go's
    encoding of a typed template used to add."""
    try:
        metadata = data["spec"]["template"]["metadata"]
    except (KeyError, TypeError):
        return data
    if not isinstance(metadata, Mapping) or metadata.get("creationTimestamp", 0) is not None:
        return data
    copied = deep_copy(data)
    del copied["spec"]["template"]["metadata"]["creationTimestamp"]
    return copied


def match(ds: Mapping[str, Any], revision: Mapping[str, Any]) -> bool:
    """Whether ``revision`` records the current pod template of ``ds`` (upstream ``Match``,
    comparing parsed JSON instead of bytes; see the module docstring)."""
    return equal_revision({"data": _normalized_data(revision.get("data"))}, {"data": get_patch(ds)})


def revisions_to_delete(
    ds: Mapping[str, Any], old: Sequence[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]
) -> list[str]:
    """The names of the old revisions to delete so that at most ``revisionHistoryLimit``
    (default 10) remain: the lowest numbered first, skipping those whose hash a pod still
    carries (upstream ``cleanupHistory``'s choice)."""
    limit = (ds.get("spec") or {}).get("revisionHistoryLimit")
    to_kill = len(old) - (10 if limit is None else int(limit))
    if to_kill <= 0:
        return []
    live_hashes = {h for pod in pods if (h := _labels(pod).get(UNIQUE_LABEL_KEY))}
    names: list[str] = []
    for revision in sort_controller_revisions(old):
        if len(names) >= to_kill:
            break
        if _labels(revision).get(UNIQUE_LABEL_KEY) in live_hashes:
            continue
        names.append(str(_meta(revision).get("name")))
    return names


# -- with the API ------------------------------------------------------------------------------


class DaemonSetHistory:
    """Reads a DaemonSet's revisions from the ControllerRevision informer's ``indexer`` (which
    must carry :data:`~kcontrol_controllers.history.CONTROLLER_REVISION_CONTROLLER_INDEX`) and
    writes them, the pods' hash labels and ``status.collisionCount`` through ``client``."""

    __slots__ = ("_client", "_indexer")

    def __init__(self, client: Client, indexer: Indexer) -> None:
        if CONTROLLER_REVISION_CONTROLLER_INDEX not in indexer.get_indexers():
            raise ValueError(f"the indexer lacks {CONTROLLER_REVISION_CONTROLLER_INDEX}")
        self._client = client
        self._indexer = indexer

    async def controlled_histories(self, ds: Mapping[str, Any], selector: Selector) -> list[Object]:
        """The revisions ``ds`` owns after adopting matching orphans and releasing its own
        that stopped matching (upstream ``controlledHistories``). Raises
        :class:`~kcontrol.errors.ClaimError`."""
        namespace = str(_meta(ds).get("namespace") or "")
        candidates = self._indexer.by_index(
            CONTROLLER_REVISION_CONTROLLER_INDEX,
            controller_revision_index_key(namespace, str(_meta(ds).get("uid"))),
        ) + self._indexer.by_index(
            CONTROLLER_REVISION_CONTROLLER_INDEX, controller_revision_index_key(namespace, None)
        )
        manager = ControllerRefManager(
            self._client,
            ds,
            selector,
            (DAEMON_SET_API_VERSION, DAEMON_SET_KIND),
            CONTROLLERREVISIONS,
            can_adopt=recheck_owner(self._client, DAEMONSETS, ds),
        )
        return await manager.claim(candidates)

    async def construct_history(
        self, ds: Mapping[str, Any], selector: Selector, pods: Sequence[Mapping[str, Any]]
    ) -> Revisions:
        """The current revision of ``ds`` (created or deduplicated and renumbered as needed)
        and its old ones (module docstring). ``pods`` are the DaemonSet's claimed pods, for
        relabelling when duplicates are removed. Raises the API errors, and
        :class:`StaleCollisionCount`."""
        current: list[Object] = []
        old: list[Object] = []
        for claimed in await self.controlled_histories(ds, selector):
            revision = claimed
            if UNIQUE_LABEL_KEY not in _labels(revision):
                # The name stands in for a hash, so a collision never matters here.
                to_update: Object = deep_copy(revision)
                to_update["metadata"].setdefault("labels", {})[UNIQUE_LABEL_KEY] = _meta(
                    revision
                ).get("name")
                revision = await self._client.update(
                    CONTROLLERREVISIONS, to_update, namespace=_meta(revision).get("namespace")
                )
            (current if match(ds, revision) else old).append(revision)

        revision_number = next_revision(old)
        if not current:
            return Revisions(await self._snapshot(ds, revision_number), old)
        cur = await self._dedup(ds, current, pods)
        if int(cur.get("revision") or 0) < revision_number:
            to_update = deep_copy(cur)
            to_update["revision"] = revision_number
            await self._client.update(
                CONTROLLERREVISIONS, to_update, namespace=_meta(cur).get("namespace")
            )
        return Revisions(cur, old)

    async def _snapshot(self, ds: Mapping[str, Any], revision_number: int) -> Object:
        """Create the revision of the DaemonSet's current template (upstream ``snapshot``)."""
        meta = _meta(ds)
        namespace = meta.get("namespace")
        spec = ds.get("spec") or {}
        template = spec.get("template") or {}
        collision_count = (ds.get("status") or {}).get("collisionCount")
        hash_ = template_hash(template, collision_count)
        name = f"{meta.get('name')}-{hash_}"
        labels = dict(_labels(template))
        labels[UNIQUE_LABEL_KEY] = hash_
        revision_meta: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": [new_controller_ref(ds, DAEMON_SET_API_VERSION, DAEMON_SET_KIND)],
        }
        if meta.get("annotations"):
            revision_meta["annotations"] = dict(meta["annotations"])
        revision: Object = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": revision_meta,
            "data": get_patch(ds),
            "revision": revision_number,
        }
        try:
            return await self._client.create(
                CONTROLLERREVISIONS, body_to_create(revision), namespace=namespace
            )
        except AlreadyExists as exists:
            _log.debug("ControllerRevision exists", revision=f"{namespace}/{name}")
            existing = await self._client.get(CONTROLLERREVISIONS, name, namespace=namespace)
            if match(ds, existing):
                return existing  # this controller's own earlier write
            live = await self._client.get(DAEMONSETS, str(meta.get("name")), namespace=namespace)
            live_count = (live.get("status") or {}).get("collisionCount")
            if live_count != collision_count:
                raise StaleCollisionCount(
                    f"found a stale collision count ({collision_count}, expected {live_count})"
                    f" of DaemonSet {meta.get('name')!r} while processing; will retry until it"
                    " is updated"
                ) from exists
            live.setdefault("status", {})["collisionCount"] = (live_count or 0) + 1
            await self._client.update_status(DAEMONSETS, live)
            _log.info(
                "hash collision for DaemonSet, bumping collisionCount",
                daemonset=f"{namespace}/{meta.get('name')}",
                collision_count=(live_count or 0) + 1,
            )
            raise

    async def _dedup(
        self,
        ds: Mapping[str, Any],
        current: Sequence[Object],
        pods: Sequence[Mapping[str, Any]],
    ) -> Object:
        """Keep the highest numbered of several current revisions: relabel the pods to its
        hash, delete the others (upstream ``dedupCurHistories``)."""
        if len(current) == 1:
            return current[0]
        keep = current[0]
        for revision in current:
            if int(revision.get("revision") or 0) >= int(keep.get("revision") or 0):
                keep = revision
        keep_hash = _labels(keep).get(UNIQUE_LABEL_KEY)
        namespace = _meta(ds).get("namespace")
        for revision in current:
            if _meta(revision).get("name") == _meta(keep).get("name"):
                continue
            for pod in pods:
                if _labels(pod).get(UNIQUE_LABEL_KEY) != keep_hash:
                    await self._client.patch(
                        PODS,
                        str(_meta(pod).get("name")),
                        {"metadata": {"labels": {UNIQUE_LABEL_KEY: keep_hash}}},
                        namespace=namespace,
                        patch_type=PatchType.MERGE,
                    )
            await self._client.delete(
                CONTROLLERREVISIONS, str(_meta(revision).get("name")), namespace=namespace
            )
        return keep

    async def cleanup_history(
        self,
        ds: Mapping[str, Any],
        old: Sequence[Mapping[str, Any]],
        pods: Iterable[Mapping[str, Any]],
    ) -> None:
        """Delete the old revisions :func:`revisions_to_delete` names (a revision already gone
        counts as deleted)."""
        namespace = _meta(ds).get("namespace")
        for name in revisions_to_delete(ds, old, pods):
            try:
                await self._client.delete(CONTROLLERREVISIONS, name, namespace=namespace)
            except NotFound:
                continue
