"""Claims, volumes and the claims' owner references (upstream TestStorageMatches,
TestUpdateStorage, TestGetPersistentVolumeClaims, TestGetPersistentVolumeClaimRetentionPolicy,
TestMatchesRef, TestIsClaimOwnerUpToDate, TestClaimOwnerUpToDateEdgeCases,
TestUpdateClaimOwnerRefForSetAndPod, TestUpdateClaimControllerRef, TestHasOwnerRef,
TestHasUnexpectedController, TestNonController, TestHasStaleOwnerRef, and
stateful_pod_control_test's TestPodClaimIsStale)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from statefulset_fixtures import new_stateful_set, obj, owner_ref

from kcontrol.client import Object
from kcontrol_controllers.statefulset._pods import new_stateful_set_pod
from kcontrol_controllers.statefulset._storage import (
    RetentionPolicy,
    add_controller_ref,
    claim_is_stale,
    get_persistent_volume_claim_name,
    get_persistent_volume_claim_retention_policy,
    get_persistent_volume_claims,
    has_non_controller_owner,
    has_owner_ref,
    has_stale_owner_ref,
    has_unexpected_controller,
    is_claim_owner_up_to_date,
    matches_ref,
    remove_refs,
    storage_matches,
    update_claim_owner_ref_for_set_and_pod,
    update_storage,
)

RETAIN, DELETE = "Retain", "Delete"


def with_refs(target: Object, refs: list[dict[str, Any]]) -> Object:
    target.setdefault("metadata", {})["ownerReferences"] = refs
    return target


def refs_of(target: Object) -> list[dict[str, Any]]:
    return list(target.get("metadata", {}).get("ownerReferences") or [])


def policy_set(
    name: str, uid: str, when_scaled: str, when_deleted: str, replicas: int = 1
) -> Object:
    set_ = obj(name, uid, replicas=replicas)
    set_["spec"]["persistentVolumeClaimRetentionPolicy"] = {
        "whenScaled": when_scaled,
        "whenDeleted": when_deleted,
    }
    return set_


# -- claims and volumes ------------------------------------------------------------------------


def test_claim_name() -> None:
    assert get_persistent_volume_claim_name(new_stateful_set(), obj("data"), 3) == "data-foo-3"


def test_storage_matches() -> None:
    set_ = new_stateful_set(3)
    assert storage_matches(set_, new_stateful_set_pod(set_, 1))

    def no_volumes(pod: Object) -> None:
        pod["spec"]["volumes"] = None

    def no_claim_sources(pod: Object) -> None:
        for volume in pod["spec"]["volumes"]:
            volume.pop("persistentVolumeClaim", None)

    def other_claim(pod: Object) -> None:
        for volume in pod["spec"]["volumes"]:
            if "persistentVolumeClaim" in volume:
                volume["persistentVolumeClaim"]["claimName"] = "foo"

    def no_ordinal(pod: Object) -> None:
        pod["metadata"]["name"] = "bar"

    for spoil in (no_volumes, no_claim_sources, other_claim, no_ordinal):
        pod = new_stateful_set_pod(set_, 1)
        spoil(pod)
        assert not storage_matches(set_, pod), spoil.__name__


def test_storage_matches_without_templates() -> None:
    set_ = new_stateful_set(3, claims=())
    assert storage_matches(set_, obj("foo-0"))
    assert not storage_matches(set_, obj("foo"))  # still needs an ordinal


def test_update_storage_repairs() -> None:
    set_ = new_stateful_set(3)

    def no_volumes(pod: Object) -> None:
        del pod["spec"]["volumes"]

    def no_claim_sources(pod: Object) -> None:
        for volume in pod["spec"]["volumes"]:
            volume.pop("persistentVolumeClaim", None)

    def other_claim(pod: Object) -> None:
        pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] = "foo"

    for spoil in (no_volumes, no_claim_sources, other_claim):
        pod = new_stateful_set_pod(set_, 1)
        spoil(pod)
        assert not storage_matches(set_, pod)
        update_storage(set_, pod)
        assert storage_matches(set_, pod), spoil.__name__


def test_update_storage_order_and_replacement() -> None:
    set_ = new_stateful_set(3, claims=("b", "a"), pod_volumes=())
    pod = obj(
        "foo-2",
        volumes=[
            {"name": "a", "emptyDir": {}},  # named as a template: replaced
            {"name": "scratch", "emptyDir": {}},
        ],
    )
    update_storage(set_, pod)
    assert pod["spec"]["volumes"] == [
        {"name": "b", "persistentVolumeClaim": {"claimName": "b-foo-2"}},
        {"name": "a", "persistentVolumeClaim": {"claimName": "a-foo-2"}},
        {"name": "scratch", "emptyDir": {}},
    ]


def test_get_persistent_volume_claims_labels() -> None:
    pod = obj("foo-0")
    set_ = new_stateful_set(1)
    expected_base = {"name": "datadir-foo-0", "namespace": "default"}

    def claim_meta(selector: dict[str, str] | None, template_labels: dict[str, str] | None) -> Any:
        set_["spec"]["selector"]["matchLabels"] = selector
        if template_labels is None:
            set_["spec"]["volumeClaimTemplates"][0]["metadata"].pop("labels", None)
        else:
            set_["spec"]["volumeClaimTemplates"][0]["metadata"]["labels"] = template_labels
        claims = get_persistent_volume_claims(set_, pod)
        assert list(claims) == ["datadir"]
        assert claims["datadir"]["spec"] == {"resources": {"requests": {"storage": "1"}}}
        return claims["datadir"]["metadata"]

    # neither: no labels
    assert claim_meta(None, None) == expected_base
    # the selector's labels alone
    assert claim_meta({"test": "test"}, None) == {**expected_base, "labels": {"test": "test"}}
    # both, not overlapping: merged
    assert claim_meta({"name": "foo"}, {"test": "test"}) == {
        **expected_base,
        "labels": {"test": "test", "name": "foo"},
    }
    # both, overlapping: the selector wins
    assert claim_meta({"test": "foo"}, {"test": "test"}) == {
        **expected_base,
        "labels": {"test": "foo"},
    }


def test_get_persistent_volume_claims_copies_the_templates() -> None:
    set_ = new_stateful_set(1)
    claims = get_persistent_volume_claims(set_, obj("foo-0"))
    claims["datadir"]["spec"]["resources"]["requests"]["storage"] = "5"
    claims["datadir"]["metadata"]["labels"]["x"] = "y"
    template = set_["spec"]["volumeClaimTemplates"][0]
    assert template["spec"]["resources"]["requests"]["storage"] == "1"
    assert template["metadata"] == {"name": "datadir", "namespace": "default"}
    assert set_["spec"]["selector"]["matchLabels"] == {"foo": "bar"}


# -- the retention policy ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (None, RetentionPolicy(RETAIN, RETAIN)),
        ({"whenScaled": RETAIN, "whenDeleted": RETAIN}, RetentionPolicy(RETAIN, RETAIN)),
        ({"whenScaled": DELETE, "whenDeleted": RETAIN}, RetentionPolicy(RETAIN, DELETE)),
        ({"whenDeleted": DELETE}, RetentionPolicy(when_deleted=DELETE, when_scaled=RETAIN)),
    ],
)
def test_retention_policy(policy: dict[str, str] | None, expected: RetentionPolicy) -> None:
    set_ = obj("set")
    if policy is not None:
        set_["spec"] = {"persistentVolumeClaimRetentionPolicy": policy}
    assert get_persistent_volume_claim_retention_policy(set_) == expected


@pytest.mark.parametrize(
    ("ref", "obj_name", "should_match"),
    [
        (owner_ref("fred", "abc", controller=None), "fred", True),
        (owner_ref("fred", "abc", controller=None), "fred", True),  # UID not compared
        (owner_ref("fred", "abc", controller=None), "joan", False),
        (owner_ref("fred", "abc", api_version="beta2", controller=None), "fred", False),
        (owner_ref("fred", "abc", kind="Node", controller=None), "fred", False),
    ],
)
def test_matches_ref(ref: dict[str, Any], obj_name: str, should_match: bool) -> None:
    assert matches_ref(ref, obj(obj_name, "not-matching"), "v1", "Pod") is should_match


IS_UP_TO_DATE_CASES = [
    # name, whenScaled, whenDeleted, needs pod ref, needs set ref, replicas, ordinal
    ("retain", RETAIN, RETAIN, False, False, 0, 0),
    ("on SS delete", RETAIN, DELETE, False, True, 0, 0),
    ("on scaledown only, condemned", DELETE, RETAIN, True, False, 2, 2),
    ("on scaledown only, remains", DELETE, RETAIN, False, False, 2, 1),
    ("on both, condemned", DELETE, DELETE, True, False, 2, 2),
    ("on both, remains", DELETE, DELETE, False, True, 2, 1),
]


@pytest.mark.parametrize(
    ("name", "when_scaled", "when_deleted", "needs_pod_ref", "needs_set_ref", "replicas", "ord_"),
    IS_UP_TO_DATE_CASES,
    ids=[case[0] for case in IS_UP_TO_DATE_CASES],
)
def test_is_claim_owner_up_to_date(
    name: str,
    when_scaled: str,
    when_deleted: str,
    needs_pod_ref: bool,
    needs_set_ref: bool,
    replicas: int,
    ord_: int,
) -> None:
    for other_refs, pod_ref, set_ref in itertools.product([False, True], repeat=3):
        pod = obj(f"pod-{ord_}", "pod-123")
        set_ = policy_set("stateful-set", "ss-456", when_scaled, when_deleted, replicas)
        refs: list[dict[str, Any]] = []
        if pod_ref:
            refs = add_controller_ref(refs, pod, "v1", "Pod")
        if set_ref:
            refs = add_controller_ref(refs, set_, "apps/v1", "StatefulSet")
        if other_refs:
            refs += [owner_ref("rand1", "rand1-uid", controller=None)]
            refs += [owner_ref("rand2", "rand2-uid", controller=None)]
        claim = with_refs(obj("target-claim"), refs)
        expected = pod_ref == needs_pod_ref and set_ref == needs_set_ref
        assert is_claim_owner_up_to_date(claim, set_, pod) is expected, (
            name,
            other_refs,
            pod_ref,
            set_ref,
        )


def _pod_ref(uid: str = "pod-123", controller: bool | None = True) -> dict[str, Any]:
    return owner_ref("pod-1", uid, controller=controller)


def _set_ref(
    uid: str = "ss-456", controller: bool | None = True, api_version: str = "apps/v1"
) -> dict[str, Any]:
    return owner_ref(
        "stateful-set", uid, api_version=api_version, kind="StatefulSet", controller=controller
    )


@pytest.mark.parametrize(
    ("refs", "when_scaled", "when_deleted", "should_match"),
    [
        pytest.param([_pod_ref()], DELETE, DELETE, True, id="normal controller, pod"),
        pytest.param([_pod_ref(controller=None)], DELETE, DELETE, False, id="non-controller, pod"),
        pytest.param([_pod_ref("pod-stale")], DELETE, DELETE, True, id="stale controller, pod"),
        pytest.param(
            [_pod_ref(), owner_ref("Random", "random", controller=True)],
            DELETE,
            DELETE,
            False,
            id="unexpected controller, pod",
        ),
        pytest.param([_set_ref()], RETAIN, DELETE, True, id="normal controller, set"),
        pytest.param(
            [_set_ref(controller=None, api_version="appsv1")],
            RETAIN,
            DELETE,
            False,
            id="non-controller, set",
        ),
        pytest.param([_set_ref("set-stale")], RETAIN, DELETE, True, id="stale controller, set"),
        pytest.param(
            [
                _set_ref(),
                owner_ref(
                    "Random", "random", api_version="apps/v1", kind="StatefulSet", controller=True
                ),
            ],
            RETAIN,
            DELETE,
            False,
            id="unexpected controller, set",
        ),
        pytest.param(
            [owner_ref("Random", "random", controller=True)],
            RETAIN,
            DELETE,
            True,
            id="only another controller: not to be touched",
        ),
        pytest.param(
            [_set_ref()], "Sometimes", DELETE, False, id="unknown policy is Retain/Retain"
        ),
    ],
)
def test_claim_owner_up_to_date_edge_cases(
    refs: list[dict[str, Any]], when_scaled: str, when_deleted: str, should_match: bool
) -> None:
    claim = with_refs(obj("target-claim"), refs)
    set_ = policy_set("stateful-set", "ss-456", when_scaled, when_deleted, replicas=1)
    pod = obj("pod-1", "pod-123")
    assert is_claim_owner_up_to_date(claim, set_, pod) is should_match


UPDATE_CASES = [
    # name, whenScaled, whenDeleted, condemned, needs pod ref, needs set ref, unexpected
    ("retain", RETAIN, RETAIN, False, False, False, False),
    ("delete with set", RETAIN, DELETE, False, False, True, False),
    ("delete with scaledown, not condemned", DELETE, RETAIN, False, False, False, False),
    ("delete on scaledown, condemned", DELETE, RETAIN, True, True, False, False),
    ("delete on both, not condemned", DELETE, DELETE, False, False, True, False),
    ("delete on both, condemned", DELETE, DELETE, True, True, False, False),
    ("unexpected controller", DELETE, DELETE, True, False, False, True),
]


@pytest.mark.parametrize(
    ("name", "when_scaled", "when_deleted", "condemned", "needs_pod", "needs_set", "unexpected"),
    UPDATE_CASES,
    ids=[case[0] for case in UPDATE_CASES],
)
def test_update_claim_owner_ref_for_set_and_pod(
    name: str,
    when_scaled: str,
    when_deleted: str,
    condemned: bool,
    needs_pod: bool,
    needs_set: bool,
    unexpected: bool,
) -> None:
    for variation in range(8):
        has_pod_ref, has_set_ref = bool(variation & 1), bool(variation & 2)
        extra_owner = bool(variation & 3)  # as upstream's table
        set_ = policy_set("ss", "ss-123", when_scaled, when_deleted, replicas=5)
        pod = obj("pod-8" if condemned else "pod-1", "pod-456")
        refs: list[dict[str, Any]] = []
        if has_pod_ref:
            refs = add_controller_ref(refs, pod, "v1", "Pod")
        if has_set_ref:
            refs = add_controller_ref(refs, set_, "apps/v1", "StatefulSet")
        extra = owner_ref("random", "abc", api_version="custom/v1", kind="random", controller=None)
        if extra_owner:
            refs.append(extra)
        if unexpected:
            refs.append(
                owner_ref(
                    "unknown", "xyz", api_version="custom/v1", kind="Unknown", controller=True
                )
            )
        claim = with_refs(obj("claim"), refs)
        update_claim_owner_ref_for_set_and_pod(claim, set_, pod)

        def controls(owner_uid: str) -> bool:
            for ref in refs_of(claim):  # noqa: B023 - the claim of this iteration
                if ref["uid"] == owner_uid:
                    return ref.get("controller") is True
            return False

        assert controls("pod-456") is needs_pod, (name, variation)
        assert controls("ss-123") is needs_set, (name, variation)
        assert (extra in refs_of(claim)) is extra_owner, (name, variation)
        assert is_claim_owner_up_to_date(claim, set_, pod) or unexpected, (name, variation)


def _ref_keys(refs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return sorted((r["apiVersion"], r["kind"], r["name"]) for r in refs)


@pytest.mark.parametrize(
    ("original", "expected"),
    [
        pytest.param(
            [
                owner_ref("sts", "123", api_version="apps/v1", kind="StatefulSet", controller=True),
                owner_ref("foo", "", api_version="someone", kind="Else", controller=None),
            ],
            [("apps/v1", "StatefulSet", "sts"), ("someone", "Else", "foo")],
            id="set correctly",
        ),
        pytest.param(
            [owner_ref("sts", "123", api_version="apps/v1", kind="StatefulSet", controller=None)],
            [("apps/v1", "StatefulSet", "sts")],
            id="missing controller",
        ),
        pytest.param(
            [owner_ref("sts", "456", api_version="someone", kind="else", controller=None)],
            [("apps/v1", "StatefulSet", "sts"), ("someone", "else", "sts")],
            id="matching name but missing",
        ),
        pytest.param([], [("apps/v1", "StatefulSet", "sts")], id="not present"),
        pytest.param(
            [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "sts", "controller": True}],
            [],
            id="controller, but no UID",
        ),
        pytest.param(
            [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "sts"}],
            [],
            id="neither controller nor UID",
        ),
    ],
)
def test_update_claim_controller_ref(
    original: list[dict[str, Any]], expected: list[tuple[str, str, str]]
) -> None:
    set_ = policy_set("sts", "123", DELETE, DELETE, replicas=1)
    pod = obj("pod-0", "456")
    claim = with_refs(obj("claim"), original)
    update_claim_owner_ref_for_set_and_pod(claim, set_, pod)
    assert _ref_keys(refs_of(claim)) == expected
    for ref in refs_of(claim):
        if ref["kind"] == "StatefulSet" and ref["apiVersion"] == "apps/v1":
            assert ref == {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "name": "sts",
                "uid": "123",
                "controller": True,
                "blockOwnerDeletion": True,
            }
    if not expected:
        assert "ownerReferences" not in claim["metadata"]  # Go omits the empty list


def test_update_claim_owner_ref_does_not_touch_its_inputs() -> None:
    set_ = policy_set("sts", "123", DELETE, DELETE, replicas=1)
    refs = [owner_ref("sts", "123", api_version="apps/v1", kind="StatefulSet", controller=None)]
    claim = with_refs(obj("claim"), refs)
    update_claim_owner_ref_for_set_and_pod(claim, set_, obj("pod-0", "456"))
    assert refs == [
        owner_ref("sts", "123", api_version="apps/v1", kind="StatefulSet", controller=None)
    ]


@pytest.mark.parametrize(
    ("uid", "has_ref"), [("123", True), ("456", True), ("789", True), ("012", False)]
)
def test_has_owner_ref(uid: str, has_ref: bool) -> None:
    target = with_refs(
        obj("target"),
        [
            {"uid": "123", "controller": True},
            {"uid": "456", "controller": False},
            {"uid": "789"},
        ],
    )
    assert has_owner_ref(target, obj("owner", uid)) is has_ref


UNEXPECTED_CASES = [
    ("custom controller", "chipmunks/v1", "CustomController", "simon", "other-uid", True, True),
    (
        "custom non-controller",
        "chipmunks/v1",
        "CustomController",
        "simon",
        "other-uid",
        False,
        False,
    ),
    ("custom unspecified", "chipmunks/v1", "CustomController", "simon", "other-uid", None, False),
    ("other pod controller", "v1", "Pod", "simon", "other-uid", True, True),
    ("other set controller", "apps/v1", "Set", "simon", "other-uid", True, True),
    ("own set controller", "apps/v1", "StatefulSet", "set", "set-uid", True, False),
    ("own set controller, stale uid", "apps/v1", "StatefulSet", "set", "stale-uid", True, True),
    ("own pod controller", "v1", "Pod", "pod", "pod-uid", True, False),
    ("own pod controller, stale uid", "v1", "Pod", "pod", "stale-uid", True, True),
    ("own set non-controller, stale uid", "apps/v1", "StatefulSet", "set", "x", None, True),
]


@pytest.mark.parametrize(
    ("name", "api_version", "kind", "ref_name", "ref_uid", "controller", "unexpected"),
    UNEXPECTED_CASES,
    ids=[case[0] for case in UNEXPECTED_CASES],
)
def test_has_unexpected_controller(
    name: str,
    api_version: str,
    kind: str,
    ref_name: str,
    ref_uid: str,
    controller: bool | None,
    unexpected: bool,
) -> None:
    ref = owner_ref(ref_name, ref_uid, api_version=api_version, kind=kind, controller=controller)
    claim = with_refs(obj("claim"), [ref])
    set_, pod = obj("set", "set-uid"), obj("pod", "pod-uid")
    assert not has_unexpected_controller(claim, set_, pod), "no policy: Retain/Retain"
    for when_deleted, when_scaled in [(RETAIN, DELETE), (DELETE, RETAIN), (DELETE, DELETE)]:
        policy_holder = policy_set("set", "set-uid", when_scaled, when_deleted)
        assert has_unexpected_controller(claim, policy_holder, pod) is unexpected


@pytest.mark.parametrize(
    ("refs", "unexpected"),
    [
        pytest.param(
            [
                owner_ref("pod", "pod-uid", controller=True),
                owner_ref("simon", "o", api_version="chipmunks/v1", kind="C", controller=True),
            ],
            True,
            id="own controller and another",
        ),
        pytest.param(
            [
                owner_ref("pod", "pod-uid", controller=True),
                owner_ref("simon", "o", api_version="chipmunks/v1", kind="C", controller=False),
            ],
            False,
            id="own controller and a non-controller",
        ),
    ],
)
def test_has_unexpected_controller_with_two_refs(
    refs: list[dict[str, Any]], unexpected: bool
) -> None:
    claim = with_refs(obj("claim"), refs)
    set_ = policy_set("set", "set-uid", DELETE, DELETE)
    assert has_unexpected_controller(claim, set_, obj("pod", "pod-uid")) is unexpected


NON_CONTROLLER_CASES: list[tuple[str, list[dict[str, Any]], bool]] = [
    (
        "set and pod controller",
        [
            owner_ref("pod", "pod", controller=True),
            owner_ref("set", "set", api_version="apps/v1", kind="Set", controller=True),
        ],
        False,
    ),
    (
        "set controller, pod noncontroller",
        [
            owner_ref("pod", "pod", controller=None),
            owner_ref("set", "set", api_version="apps/v1", kind="Set", controller=True),
        ],
        True,
    ),
    (
        "set noncontroller, pod controller",
        [
            owner_ref("pod", "pod", controller=True),
            owner_ref("set", "set", api_version="apps/v1", kind="Set", controller=None),
        ],
        True,
    ),
    (
        "set controller",
        [owner_ref("set", "set", api_version="apps/v1", kind="Set", controller=True)],
        False,
    ),
    ("pod controller", [owner_ref("pod", "pod", controller=True)], False),
    ("nothing", [], False),
    (
        "set noncontroller",
        [owner_ref("set", "set", api_version="apps/v1", kind="Set", controller=None)],
        True,
    ),
    (
        "set noncontroller with ptr",
        [owner_ref("set", "set", api_version="apps/v1", kind="Set", controller=False)],
        True,
    ),
    ("pod noncontroller", [owner_ref("pod", "pod", kind="pod", controller=None)], True),
    ("other noncontroller", [owner_ref("pod", "not-matching", kind="pod", controller=None)], False),
]


@pytest.mark.parametrize(
    ("name", "refs", "non_controller"),
    NON_CONTROLLER_CASES,
    ids=[case[0] for case in NON_CONTROLLER_CASES],
)
def test_has_non_controller_owner(
    name: str, refs: list[dict[str, Any]], non_controller: bool
) -> None:
    claim = with_refs(obj("claim"), refs)
    assert has_non_controller_owner(claim, obj("set", "set"), obj("pod", "pod")) is non_controller


def test_has_stale_owner_ref() -> None:
    target = with_refs(
        obj("claim"),
        [owner_ref("bob", "123", controller=None), owner_ref("shirley", "456", controller=None)],
    )
    assert not has_stale_owner_ref(target, obj("bob", "123"), "v1", "Pod")
    assert has_stale_owner_ref(target, obj("shirley", "789"), "v1", "Pod")
    assert not has_stale_owner_ref(target, obj("yvonne", "345"), "v1", "Pod")
    assert not has_stale_owner_ref(target, obj("shirley", "789"), "apps/v1", "StatefulSet")


def test_remove_and_add_refs() -> None:
    refs = [owner_ref("a", "1", controller=None), owner_ref("b", "2", controller=True)]
    kept = remove_refs(refs, lambda ref: ref["name"] == "a")
    assert kept == [refs[1]] and kept[0] is not refs[1]
    assert add_controller_ref(refs, obj("a", "1"), "v1", "Pod") == refs  # already there
    added = add_controller_ref(refs, obj("c", "3"), "v1", "Pod")
    assert added[2] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "c",
        "uid": "3",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert len(refs) == 2


CLAIM_STALE_CASES = [
    ("all missing", ["missing", "missing"], False, False),
    ("no claims", [], False, False),
    ("exists", ["missing", "exists"], False, False),
    ("all refs", ["with-ref", "with-ref"], False, False),
    ("stale & exists", ["stale", "exists"], True, False),
    ("stale & missing", ["stale", "missing"], True, False),
    ("withRef & stale", ["with-ref", "stale"], True, False),
    ("withRef, no UID", ["with-ref"], True, True),
]


@pytest.mark.parametrize(
    ("name", "claim_states", "expected", "skip_pod_uid"),
    CLAIM_STALE_CASES,
    ids=[case[0] for case in CLAIM_STALE_CASES],
)
def test_claim_is_stale(
    name: str, claim_states: list[str], expected: bool, skip_pod_uid: bool
) -> None:
    set_ = policy_set("set", "", DELETE, RETAIN)
    set_["metadata"]["namespace"] = "default"
    set_["spec"]["selector"] = {"matchLabels": {"key": "value"}}
    set_["spec"]["volumeClaimTemplates"] = [obj(f"claim-{i}") for i in range(len(claim_states))]
    pod = obj("set-3", "" if skip_pod_uid else "123")
    existing: dict[str, Object] = {}
    for i, state in enumerate(claim_states):
        claim = obj(f"claim-{i}-set-3")
        if state == "stale":
            with_refs(claim, [owner_ref("set-3", "stale", controller=None)])
        elif state == "with-ref":
            with_refs(claim, [owner_ref("set-3", "123", controller=None)])
        if state != "missing":
            existing[claim["metadata"]["name"]] = claim
    # what PodClaimIsStale does with its lister, claim by claim
    stale = any(
        claim_is_stale(set_, pod, existing[claim["metadata"]["name"]])
        for claim in get_persistent_volume_claims(set_, pod).values()
        if claim["metadata"]["name"] in existing
    )
    assert stale is expected


def test_claims_are_never_stale_when_retained_on_scale_down() -> None:
    set_ = policy_set("set", "", RETAIN, DELETE)
    claim = with_refs(obj("claim-0-set-3"), [owner_ref("set-3", "stale", controller=None)])
    assert not claim_is_stale(set_, obj("set-3", "123"), claim)
