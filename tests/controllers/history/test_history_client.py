"""History against the fake API server (upstream TestRealHistory_*): listing from the cache,
creating with collisions, updating with conflicts, deleting, adopting and releasing."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from history_fixtures import (
    NS,
    PARENT_KIND,
    SS1,
    SS2,
    Fixture,
    names,
    revision_of,
    selector_of,
)

from kcontrol.client import CONTROLLERREVISIONS, Object, PatchType
from kcontrol.errors import AlreadyOwned, Conflict, InternalError, Invalid, NotFound
from kcontrol.informers import IndexedStore, Lister
from kcontrol.testing import Action, FakeClient
from kcontrol_controllers.history import (
    CONTROLLER_REVISION_HASH_LABEL,
    History,
    controller_revision_name,
    hash_controller_revision,
)
from kcontrol_controllers.podutil import is_controlled_by

SS1_REV1 = revision_of(SS1, 1)
SS1_REV2 = revision_of(SS1, 2, data={"v": 2})
SS2_REV1 = revision_of(SS2, 1)
SS2_REV2 = revision_of(SS2, 2, data={"v": 2})
SS1_ORPHAN = revision_of(SS1, 3, data={"v": 3}, orphan=True)

# -- list_controller_revisions -----------------------------------------------------------------


@dataclass
class ListCase:
    name: str
    cached: list[Object]
    want: set[str]


LIST_CASES = [
    ListCase("selects none", [], set()),
    ListCase("selects all", [SS1_REV1, SS1_REV2], names([SS1_REV1, SS1_REV2])),
    ListCase(
        "doesn't select another object's history",
        [SS1_REV1, SS1_REV2, SS2_REV1],
        names([SS1_REV1, SS1_REV2]),
    ),
    ListCase(
        "selects orphans",
        [SS1_REV1, SS1_REV2, SS1_ORPHAN],
        names([SS1_REV1, SS1_REV2, SS1_ORPHAN]),
    ),
    ListCase(
        "doesn't select orphans the selector does not match",
        [SS1_REV1, revision_of(SS2, 5, orphan=True)],
        names([SS1_REV1]),
    ),
]


@pytest.mark.parametrize("indexed", [False, True], ids=["lister", "controller index"])
@pytest.mark.parametrize("case", LIST_CASES, ids=lambda c: c.name)
async def test_list_controller_revisions(case: ListCase, indexed: bool) -> None:
    fx = Fixture(indexed=indexed)
    for revision in case.cached:
        fx.store.add(revision)
    revisions = await fx.history.list_controller_revisions(SS1, selector_of(SS1))
    assert names(revisions) == case.want
    assert len(revisions) == len(case.want)  # each once
    assert fx.client.actions == []  # read from the cache


@pytest.mark.parametrize("indexed", [False, True], ids=["lister", "controller index"])
async def test_list_stays_in_the_parents_namespace(indexed: bool) -> None:
    fx = Fixture(indexed=indexed)
    elsewhere = revision_of(SS1, 1, orphan=True)
    elsewhere["metadata"]["namespace"] = "other"
    fx.store.add(elsewhere)
    assert await fx.history.list_controller_revisions(SS1, selector_of(SS1)) == []


def test_indexer_without_the_index_is_refused() -> None:
    store = IndexedStore()
    with pytest.raises(ValueError, match="controllerRevisionController"):
        History(FakeClient(), Lister(store, CONTROLLERREVISIONS), indexer=store)


# -- create_controller_revision ----------------------------------------------------------------


async def test_create_new() -> None:
    fx = Fixture()
    created, count = await fx.history.create_controller_revision(SS1, SS1_REV1, 0)
    assert created["metadata"]["name"] == SS1_REV1["metadata"]["name"]
    assert count == 0
    assert fx.server_names() == {SS1_REV1["metadata"]["name"]}
    assert created["metadata"]["uid"] == fx.server(created["metadata"]["name"])["metadata"]["uid"]


async def test_create_does_not_conflict_when_parents_differ() -> None:
    fx = Fixture()
    fx.seed(SS1_REV1)
    created, count = await fx.history.create_controller_revision(SS2, SS2_REV1, 0)
    assert created["metadata"]["name"] == SS2_REV1["metadata"]["name"]
    assert count == 0


async def test_create_renames_on_conflict() -> None:
    # A revision with the same name and hash label but another template: what a hash
    # collision would look like.
    fx = Fixture()
    taken = revision_of(SS1, 2, data={"other": "template"})
    taken["metadata"]["name"] = SS1_REV1["metadata"]["name"]
    fx.seed(taken)

    created, count = await fx.history.create_controller_revision(SS1, SS1_REV1, 0)
    assert count == 1
    expected = controller_revision_name("ss1", hash_controller_revision(SS1_REV1, 1))
    assert created["metadata"]["name"] == expected
    assert created["data"] == SS1_REV1["data"]
    # Only the name changes: the hash label keeps the value the revision was built with.
    assert (
        created["metadata"]["labels"][CONTROLLER_REVISION_HASH_LABEL]
        == (SS1_REV1["metadata"]["labels"][CONTROLLER_REVISION_HASH_LABEL])
    )
    taken_name = SS1_REV1["metadata"]["name"]
    assert [str(a) for a in fx.client.actions] == [
        f"create controllerrevisions {NS}/{taken_name}",
        f"get controllerrevisions {NS}/{taken_name}",
        f"create controllerrevisions {NS}/{expected}",
    ]

    # Creating it again at the bumped count collides with the identical revision itself.
    again, count = await fx.history.create_controller_revision(SS1, SS1_REV1, 1)
    assert count == 1
    assert again["metadata"]["uid"] == created["metadata"]["uid"]
    assert len(fx.server_names()) == 2


async def test_create_returns_the_revision_a_stale_cache_missed() -> None:
    fx = Fixture()
    (stored,) = fx.seed(SS1_REV1)
    created, count = await fx.history.create_controller_revision(SS1, SS1_REV1, 0)
    assert count == 0
    assert created["metadata"]["uid"] == stored["metadata"]["uid"]
    assert len(fx.server_names()) == 1


async def test_create_reuses_an_equal_orphan() -> None:
    fx = Fixture()
    orphan = revision_of(SS1, 1, orphan=True)
    (stored,) = fx.seed(orphan)
    created, count = await fx.history.create_controller_revision(SS1, SS1_REV1, 0)
    assert (created["metadata"]["uid"], count) == (stored["metadata"]["uid"], 0)


async def test_create_does_not_reuse_a_revision_another_controller_owns() -> None:
    # Same name and data, controlled by an earlier ss1 (another UID) still being collected.
    fx = Fixture()
    old_parent = {"metadata": {"name": "ss1", "namespace": NS, "uid": "old-ss1-uid"}}
    fx.seed(revision_of(old_parent | {"spec": SS1["spec"]}, 1))
    created, count = await fx.history.create_controller_revision(SS1, SS1_REV1, 0)
    assert count == 1
    assert is_controlled_by(created, SS1)
    assert len(fx.server_names()) == 2


async def test_create_raises_when_the_taken_name_cannot_be_read() -> None:
    fx = Fixture()
    fx.seed(SS1_REV1)

    def fail(action: Action) -> None:
        raise InternalError("etcd is unhappy")

    fx.client.prepend_reactor("get", CONTROLLERREVISIONS, fail)
    with pytest.raises(InternalError):
        await fx.history.create_controller_revision(SS1, SS1_REV1, 0)


# -- update_controller_revision ----------------------------------------------------------------


async def test_update_succeeds() -> None:
    fx = Fixture()
    (stored,) = fx.seed(SS1_REV1)
    updated = await fx.history.update_controller_revision(stored, 2)
    assert updated["revision"] == 2
    assert fx.server(stored["metadata"]["name"])["revision"] == 2
    assert stored["revision"] == 1  # the argument is not changed


async def test_update_to_the_same_number_sends_nothing() -> None:
    fx = Fixture()
    (stored,) = fx.seed(SS1_REV1)
    updated = await fx.history.update_controller_revision(stored, 1)
    assert updated == stored
    assert updated is not stored
    assert fx.client.actions == []


async def test_update_fails_on_error() -> None:
    fx = Fixture()
    (stored,) = fx.seed(SS1_REV1)

    def fail(action: Action) -> None:
        raise InternalError("internal error")

    fx.client.prepend_reactor("update", CONTROLLERREVISIONS, fail)
    with pytest.raises(InternalError):
        await fx.history.update_controller_revision(stored, 11)
    assert len(fx.client.actions_for("update")) == 1  # only conflicts are retried


async def test_update_succeeds_on_conflict() -> None:
    fx = Fixture()
    (stored,) = fx.seed(SS1_REV1)
    conflicts = 2

    def conflict_twice(action: Action) -> None:
        nonlocal conflicts
        if conflicts:
            conflicts -= 1
            raise Conflict("the object has been modified")

    fx.client.prepend_reactor("update", CONTROLLERREVISIONS, conflict_twice)
    updated = await fx.history.update_controller_revision(stored, 2)
    assert updated["revision"] == 2
    assert len(fx.client.actions_for("update")) == 3


async def test_update_retries_from_the_cache_after_a_stale_write() -> None:
    fx = Fixture()
    (stale,) = fx.seed(SS1_REV1)
    (fresh,) = fx.seed(stale | {"metadata": stale["metadata"] | {"annotations": {"a": "b"}}})
    assert fresh["metadata"]["resourceVersion"] != stale["metadata"]["resourceVersion"]

    updated = await fx.history.update_controller_revision(stale, 5)
    assert updated["revision"] == 5
    assert updated["metadata"]["annotations"] == {"a": "b"}  # written over the fresh copy
    assert len(fx.client.actions_for("update")) == 2


async def test_update_gives_up_after_the_backoff_steps() -> None:
    fx = Fixture()
    (stored,) = fx.seed(SS1_REV1)

    def always_conflict(action: Action) -> None:
        raise Conflict("the object has been modified")

    fx.client.prepend_reactor("update", CONTROLLERREVISIONS, always_conflict)
    with pytest.raises(Conflict):
        await fx.history.update_controller_revision(stored, 2)
    assert len(fx.client.actions_for("update")) == 4  # client-go's DefaultBackoff.Steps


# -- delete_controller_revision ----------------------------------------------------------------


async def test_delete_existing_succeeds() -> None:
    fx = Fixture()
    fx.seed(SS1_REV1, SS1_REV2)
    await fx.history.delete_controller_revision(SS1_REV1)
    assert fx.server_names() == names([SS1_REV2])


@pytest.mark.parametrize(
    "existing", [pytest.param([], id="empty"), pytest.param([SS2_REV1, SS2_REV2], id="others")]
)
async def test_delete_non_existing_fails(existing: list[Object]) -> None:
    fx = Fixture()
    fx.seed(*existing)
    with pytest.raises(NotFound):
        await fx.history.delete_controller_revision(SS1_REV1)
    assert fx.server_names() == names(existing)


# -- adopt_controller_revision -----------------------------------------------------------------


async def test_adopting_an_orphan_succeeds() -> None:
    fx = Fixture()
    (orphan,) = fx.seed(SS1_ORPHAN)
    adopted = await fx.history.adopt_controller_revision(SS1, PARENT_KIND, orphan)
    assert is_controlled_by(adopted, SS1)
    assert is_controlled_by(fx.server(orphan["metadata"]["name"]), SS1)
    (patch,) = fx.client.actions_for("patch")
    assert patch.patch_type is PatchType.STRATEGIC
    assert patch.patch == {
        "metadata": {
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": "ss1",
                    "uid": "ss1-uid",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "uid": orphan["metadata"]["uid"],
        }
    }


async def test_adopting_an_owned_revision_fails() -> None:
    fx = Fixture()
    (owned,) = fx.seed(SS2_REV1)
    with pytest.raises(AlreadyOwned):
        await fx.history.adopt_controller_revision(SS1, PARENT_KIND, owned)
    assert fx.client.actions == []


async def test_adopting_a_non_existent_revision_fails() -> None:
    fx = Fixture()
    with pytest.raises(NotFound):
        await fx.history.adopt_controller_revision(SS1, PARENT_KIND, SS1_ORPHAN)


async def test_adopting_a_replaced_revision_fails() -> None:
    # The cached orphan was deleted and another revision created under its name.
    fx = Fixture()
    (cached,) = fx.seed(SS1_ORPHAN)
    fx.client.tracker.delete(CONTROLLERREVISIONS, cached["metadata"]["name"], namespace=NS)
    fx.client.tracker.add(SS1_ORPHAN)
    with pytest.raises(Invalid):
        await fx.history.adopt_controller_revision(SS1, PARENT_KIND, cached)
    assert get_owners(fx.server(cached["metadata"]["name"])) == []


def get_owners(revision: Object) -> list[str]:
    return [ref["uid"] for ref in revision["metadata"].get("ownerReferences") or []]


# -- release_controller_revision ---------------------------------------------------------------


@dataclass
class ReleaseCase:
    name: str
    revision: Object
    owners_after: list[str] = field(default_factory=list)


RELEASE_CASES = [
    ReleaseCase("releasing an owned revision succeeds", SS1_REV1),
    ReleaseCase("releasing an orphan succeeds", SS1_ORPHAN),
    ReleaseCase(
        "releasing a revision owned by another controller leaves it", SS2_REV1, ["ss2-uid"]
    ),
]


@pytest.mark.parametrize("case", RELEASE_CASES, ids=lambda c: c.name)
async def test_release(case: ReleaseCase) -> None:
    fx = Fixture()
    (stored,) = fx.seed(case.revision)
    released = await fx.history.release_controller_revision(SS1, stored)
    assert released is not None
    assert not is_controlled_by(released, SS1)
    assert get_owners(fx.server(stored["metadata"]["name"])) == case.owners_after
    (patch,) = fx.client.actions_for("patch")
    assert patch.patch == {
        "metadata": {
            "ownerReferences": [{"$patch": "delete", "uid": "ss1-uid"}],
            "uid": stored["metadata"]["uid"],
        }
    }


async def test_releasing_a_non_existent_revision_succeeds() -> None:
    fx = Fixture()
    assert await fx.history.release_controller_revision(SS1, SS1_REV1) is None
    assert len(fx.client.actions_for("patch")) == 1


async def test_releasing_a_replaced_revision_leaves_it() -> None:
    fx = Fixture()
    (cached,) = fx.seed(SS1_REV1)
    fx.client.tracker.delete(CONTROLLERREVISIONS, cached["metadata"]["name"], namespace=NS)
    fx.client.tracker.add(SS1_REV1)
    assert await fx.history.release_controller_revision(SS1, cached) is None
    assert get_owners(fx.server(cached["metadata"]["name"])) == ["ss1-uid"]


async def test_release_raises_other_errors() -> None:
    fx = Fixture()
    (stored,) = fx.seed(SS1_REV1)

    def fail(action: Action) -> None:
        raise InternalError("internal error")

    fx.client.prepend_reactor("patch", CONTROLLERREVISIONS, fail)
    with pytest.raises(InternalError):
        await fx.history.release_controller_revision(SS1, stored)
