"""A StatefulSet's revisions as the sync uses them: listing and adopting them, finding the
current and update revisions (creating or renumbering one), and truncating the history.

Ports of ``ListRevisions``, ``AdoptOrphanRevisions``, ``getStatefulSetRevisions`` and
``truncateHistory`` of ``stateful_set_control.go``, on
:class:`kcontrol_controllers.history.History`:

- the update revision is the revision made from the set now (:func:`~._revisions.new_revision`,
  numbered one past the history): the newest revision if it is equal; an older equal one
  renumbered to the top (a rollback); the newest one still, if it matches the set only
  semantically (:mod:`._semantic`, StatefulSetSemanticRevisionComparison); or else a new
  revision, created under the set's ``status.collisionCount`` - bumped for every name
  already taken by other data. A pass over the same set generation (the same template) and
  the very same cached revisions as a pass that found the newest revision equal takes that
  answer without building the revision again (it was a fifth of a sync that changes
  nothing);
- the current revision is the one ``status.currentRevision`` names, or else the update
  revision (a new set);
- the history keeps at most ``spec.revisionHistoryLimit`` revisions that are neither current,
  update nor the revision of a pod, deleting the oldest first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kcontrol.client import Object
from kcontrol.controller import get_controller_of, key_func
from kcontrol.labels import selector_from_label_selector

from .. import history
from ._fields import meta, name, spec, status
from ._names import API_VERSION, KIND
from ._pods import get_pod_revision
from ._revisions import new_revision
from ._semantic import RevisionEqualityCache, set_matches_latest_revision

__all__ = ["SetRevisions", "StatefulSetHistory", "orphans"]

DEFAULT_REVISION_HISTORY_LIMIT = 10
"""``spec.revisionHistoryLimit`` when absent (the API default)."""


@dataclass(frozen=True)
class SetRevisions:
    """The revisions one sync works with: ``current`` (what ``status.currentRevision``
    names), ``update`` (what the set's template is now) and the collision count the update
    revision was created under."""

    current: Object
    update: Object
    collision_count: int


class StatefulSetHistory:
    """A set's revisions through ``history`` (reads from the ControllerRevision cache, writes
    through the API). ``semantic`` turns on the semantic comparison; ``cache`` keeps its
    positive answers."""

    __slots__ = ("_cache", "_history", "_newest_is_update", "_semantic")

    def __init__(
        self,
        history_: history.History,
        *,
        semantic: bool = True,
        cache: RevisionEqualityCache | None = None,
    ) -> None:
        self._history = history_
        self._semantic = semantic
        self._cache = cache if cache is not None else RevisionEqualityCache()
        self._newest_is_update: dict[str, tuple[str, int, int, tuple[Object, ...]]] = {}
        """Per set key, the ``(uid, generation, collision count, revisions)`` of the last
        pass that found the newest revision equal to the set's template: the same set
        generation (so the same template: the API server bumps it for every spec change)
        over the very same cached revisions gives the same answer, without building the
        revision again."""

    def forget(self, key: str) -> None:
        """Drop what is remembered of the set ``key`` (``namespace/name``): it is gone."""
        self._newest_is_update.pop(key, None)

    def _newest_still_update(
        self, key: str, uid: str, generation: int, collision_count: int, revisions: Sequence[Object]
    ) -> bool:
        seen = self._newest_is_update.get(key)
        return (
            seen is not None
            and seen[:3] == (uid, generation, collision_count)
            and len(seen[3]) == len(revisions)
            and all(a is b for a, b in zip(seen[3], revisions, strict=True))
        )

    async def list_revisions(self, set_: Mapping[str, Any]) -> list[Object]:
        """The set's revisions and the orphans its selector matches, oldest first (shared
        with the cache)."""
        selector = selector_from_label_selector(spec(set_).get("selector"))
        revisions = await self._history.list_controller_revisions(set_, selector)
        return history.sort_controller_revisions(revisions)

    async def adopt_orphan_revisions(
        self, set_: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]]
    ) -> list[Object]:
        """Make ``set_`` the controller of each of ``revisions`` (orphans); returns them as
        patched. Stops at the first failure, raising it."""
        return [
            await self._history.adopt_controller_revision(set_, (API_VERSION, KIND), revision)
            for revision in revisions
        ]

    async def get_revisions(
        self, set_: Mapping[str, Any], revisions: Sequence[Object]
    ) -> SetRevisions:
        """The current and update revisions of ``set_`` given its ``revisions`` (sorted
        oldest first); may create a revision or renumber one (module docstring)."""
        collision_count = int(status(set_).get("collisionCount") or 0)
        update, collision_count = await self._update_revision(set_, revisions, collision_count)
        current_name = status(set_).get("currentRevision") or ""
        current = next((r for r in revisions if name(r) == current_name), update)
        return SetRevisions(current, update, collision_count)

    async def _update_revision(
        self, set_: Mapping[str, Any], revisions: Sequence[Object], collision_count: int
    ) -> tuple[Object, int]:
        """The update revision and the collision count it is under (module docstring)."""
        latest = revisions[-1] if revisions else None
        key = key_func(set_)
        uid = str(meta(set_).get("uid") or "")
        found = meta(set_).get("generation")
        generation = found if type(found) is int else -1
        if latest is not None and self._newest_still_update(
            key, uid, generation, collision_count, revisions
        ):
            return latest, collision_count
        proposed = new_revision(set_, history.next_revision(revisions), collision_count)
        equal = history.find_equal_revisions(revisions, proposed)
        if equal and history.equal_revision(latest, equal[-1]):
            assert latest is not None
            if generation >= 0:
                self._newest_is_update[key] = (uid, generation, collision_count, tuple(revisions))
            return latest, collision_count  # the template has not changed
        if equal:
            # An older template again: roll back by moving that revision to the top.
            renumbered = await self._history.update_controller_revision(
                equal[-1], int(proposed["revision"])
            )
            return renumbered, collision_count
        if (
            self._semantic
            and latest is not None
            and set_matches_latest_revision(set_, proposed, latest, self._cache)
        ):
            return latest, collision_count  # written differently, by an older KCM
        return await self._history.create_controller_revision(set_, proposed, collision_count)

    async def truncate_history(
        self,
        set_: Mapping[str, Any],
        pods: Sequence[Mapping[str, Any]],
        revisions: Sequence[Object],
        current: Mapping[str, Any] | None,
        update: Mapping[str, Any] | None,
    ) -> None:
        """Delete the oldest revisions that are not live (current, update, or some pod's)
        until at most ``spec.revisionHistoryLimit`` of those remain. ``revisions`` must be
        sorted oldest first. Raises the first failed delete."""
        live = {get_pod_revision(pod) for pod in pods}
        live.update(name(r) for r in (current, update) if r is not None)
        historic = [r for r in revisions if name(r) not in live]
        limit = spec(set_).get("revisionHistoryLimit")
        limit = DEFAULT_REVISION_HISTORY_LIMIT if limit is None else int(limit)
        if limit < 0 or len(historic) <= limit:
            return
        for revision in historic[: len(historic) - limit]:
            await self._history.delete_controller_revision(revision)


def orphans(revisions: Sequence[Object]) -> list[Object]:
    """The revisions no object controls."""
    return [r for r in revisions if get_controller_of(r) is None]
