"""A member's storage: its PersistentVolumeClaims, its volumes, and who owns the claims.

Each ``spec.volumeClaimTemplates`` entry ``data`` gives the member ``web-3`` the claim
``data-web-3`` (:func:`get_persistent_volume_claim_name`), labelled with the set's selector
(``matchLabels`` winning over the template's labels) and mounted as the volume ``data``
(:func:`update_storage`, which replaces any pod volume of that name).

The claims' owner references carry ``spec.persistentVolumeClaimRetentionPolicy`` (the
StatefulSetAutoDeletePVC feature, GA): the garbage collector deletes a claim when its
controller goes. :func:`is_claim_owner_up_to_date` and
:func:`update_claim_owner_ref_for_set_and_pod` keep one of these shapes:

================  ================  =====================================================
``whenScaled``    ``whenDeleted``   the claim's controller
================  ================  =====================================================
Retain            Retain            neither the set nor the pod
Retain            Delete            the set
Delete            Retain            the pod, once its ordinal is beyond the set's range
Delete            Delete            the pod beyond the range, the set within it
================  ================  =====================================================

A policy holding any other value is treated as Retain/Retain, as upstream's ``default``
branch. A claim is left alone when a reference names the set or the pod by kind and name
but with another UID (stale: an earlier object of that name owned it), and no reference to
the set or pod is added while another controller owns it (only ours are removed).

Every function reads its arguments without modifying them, except
:func:`update_storage` (the pod) and :func:`update_claim_owner_ref_for_set_and_pod` (the
claim), which modify the caller's copy they are given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from kcontrol.client import Object, deep_copy

from ..podutil import new_controller_ref
from ._fields import meta, name, namespace, spec, uid
from ._identity import get_ordinal, pod_in_ordinal_range
from ._names import (
    API_VERSION,
    DELETE_POLICY,
    KIND,
    POD_API_VERSION,
    POD_KIND,
    RETAIN_POLICY,
)

__all__ = [
    "RetentionPolicy",
    "add_controller_ref",
    "claim_is_stale",
    "get_persistent_volume_claim_name",
    "get_persistent_volume_claim_retention_policy",
    "get_persistent_volume_claims",
    "has_non_controller_owner",
    "has_owner_ref",
    "has_stale_owner_ref",
    "has_unexpected_controller",
    "is_claim_owner_up_to_date",
    "matches_ref",
    "remove_refs",
    "storage_matches",
    "update_claim_owner_ref_for_set_and_pod",
    "update_storage",
]


# -- claims and volumes ------------------------------------------------------------------------


def get_persistent_volume_claim_name(
    set_: Mapping[str, Any], claim_template: Mapping[str, Any], ordinal: int
) -> str:
    """The name of the claim ``claim_template`` gives the member with ``ordinal``:
    ``<template>-<set>-<ordinal>`` (a name format other components rely on)."""
    return f"{name(claim_template)}-{name(set_)}-{ordinal}"


def _templates(set_: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    return spec(set_).get("volumeClaimTemplates") or ()


def get_persistent_volume_claims(
    set_: Mapping[str, Any], pod: Mapping[str, Any]
) -> dict[str, Object]:
    """The claims ``pod`` needs, by template name, in template order: a deep copy of each
    template named for the pod's ordinal, in the set's namespace, its labels the template's
    merged with the set's ``selector.matchLabels`` (the selector's value wins)."""
    ordinal = get_ordinal(pod)
    selector_labels = (spec(set_).get("selector") or {}).get("matchLabels") or {}
    claims: dict[str, Object] = {}
    for template in _templates(set_):
        claim: Object = deep_copy(dict(template))
        metadata = claim["metadata"] = dict(claim.get("metadata") or {})
        metadata["name"] = get_persistent_volume_claim_name(set_, template, ordinal)
        metadata["namespace"] = namespace(set_)
        merged = {**(metadata.get("labels") or {}), **selector_labels}
        if merged:
            metadata["labels"] = merged
        else:
            metadata.pop("labels", None)
        claims[name(template)] = claim
    return claims


def storage_matches(set_: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """True when ``pod`` has an ordinal and, for each claim template, a volume of the
    template's name mounting the claim named for that ordinal."""
    ordinal = get_ordinal(pod)
    if ordinal < 0:
        return False
    volumes = {v.get("name"): v for v in spec(pod).get("volumes") or ()}
    for template in _templates(set_):
        volume = volumes.get(name(template))
        source = (volume or {}).get("persistentVolumeClaim")
        if source is None or source.get("claimName") != get_persistent_volume_claim_name(
            set_, template, ordinal
        ):
            return False
    return True


def update_storage(set_: Mapping[str, Any], pod: MutableMapping[str, Any]) -> None:
    """Make ``pod``'s volumes (modified in place) mount its claims: one volume per claim
    template, in template order, then the pod's other volumes in their order (a pod volume
    named as a template is replaced). Upstream's order of the claim volumes is a Go map's,
    random; this one is stable."""
    claims = get_persistent_volume_claims(set_, pod)
    pod_spec = pod.setdefault("spec", {})
    volumes: list[Any] = [
        {"name": template_name, "persistentVolumeClaim": {"claimName": name(claim)}}
        for template_name, claim in claims.items()
    ]
    volumes.extend(v for v in pod_spec.get("volumes") or () if v.get("name") not in claims)
    pod_spec["volumes"] = volumes


# -- the retention policy and the claims' owners -----------------------------------------------


@dataclass(frozen=True)
class RetentionPolicy:
    """``spec.persistentVolumeClaimRetentionPolicy``: what becomes of the claims when the
    set is deleted (``when_deleted``) and when it scales below their ordinal
    (``when_scaled``), ``Retain`` or ``Delete``."""

    when_deleted: str = RETAIN_POLICY
    when_scaled: str = RETAIN_POLICY


def get_persistent_volume_claim_retention_policy(set_: Mapping[str, Any]) -> RetentionPolicy:
    """The set's policy; Retain for an unset policy or field (the API default)."""
    policy = spec(set_).get("persistentVolumeClaimRetentionPolicy") or {}
    return RetentionPolicy(
        when_deleted=policy.get("whenDeleted") or RETAIN_POLICY,
        when_scaled=policy.get("whenScaled") or RETAIN_POLICY,
    )


def _delete_on(policy: RetentionPolicy) -> tuple[bool, bool]:
    """(delete when scaled, delete when the set is deleted); an unknown value anywhere makes
    it Retain/Retain, as upstream's switch falls to its default."""
    known = {RETAIN_POLICY, DELETE_POLICY}
    if policy.when_scaled not in known or policy.when_deleted not in known:
        return False, False
    return policy.when_scaled == DELETE_POLICY, policy.when_deleted == DELETE_POLICY


def _refs(obj: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    return meta(obj).get("ownerReferences") or ()


def matches_ref(
    ref: Mapping[str, Any], obj: Mapping[str, Any], api_version: str, kind: str
) -> bool:
    """True when ``ref`` names ``obj`` by API version, kind and name (not by UID)."""
    return (
        ref.get("apiVersion") == api_version
        and ref.get("kind") == kind
        and ref.get("name", "") == name(obj)
    )


def has_owner_ref(target: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """True when one of ``target``'s owner references has ``owner``'s UID, controller or
    not."""
    owner_uid = uid(owner)
    return any(ref.get("uid", "") == owner_uid for ref in _refs(target))


def has_stale_owner_ref(
    target: Mapping[str, Any], obj: Mapping[str, Any], api_version: str, kind: str
) -> bool:
    """True when the first of ``target``'s references naming ``obj`` (by kind and name)
    carries another UID: an earlier object of that name owned ``target``."""
    for ref in _refs(target):
        if matches_ref(ref, obj, api_version, kind):
            return bool(ref.get("uid", "") != uid(obj))
    return False


def has_unexpected_controller(
    claim: Mapping[str, Any], set_: Mapping[str, Any], pod: Mapping[str, Any]
) -> bool:
    """True when the policy is not Retain/Retain and ``claim`` has a controller other than
    the set and the pod - or a reference naming the set or pod with a stale UID (pods were
    orphaned wrongly: the claim is left to the garbage collector). Under Retain/Retain any
    controller is fine."""
    policy = get_persistent_volume_claim_retention_policy(set_)
    if policy.when_scaled == RETAIN_POLICY and policy.when_deleted == RETAIN_POLICY:
        return False
    for ref in _refs(claim):
        if matches_ref(ref, set_, API_VERSION, KIND):
            if ref.get("uid", "") != uid(set_):
                return True
            continue
        if matches_ref(ref, pod, POD_API_VERSION, POD_KIND):
            if ref.get("uid", "") != uid(pod):
                return True
            continue
        if ref.get("controller") is True:
            return True
    return False


def has_non_controller_owner(
    claim: Mapping[str, Any], set_: Mapping[str, Any], pod: Mapping[str, Any]
) -> bool:
    """True when the set or the pod (by UID) owns ``claim`` without being its controller."""
    owners = {uid(set_), uid(pod)}
    return any(
        ref.get("uid", "") in owners and ref.get("controller") is not True for ref in _refs(claim)
    )


def remove_refs(
    refs: Sequence[Mapping[str, Any]], predicate: Callable[[Mapping[str, Any]], bool]
) -> list[dict[str, Any]]:
    """Copies of the references for which ``predicate`` is false, in order."""
    return [dict(ref) for ref in refs if not predicate(ref)]


def add_controller_ref(
    refs: Sequence[Mapping[str, Any]], owner: Mapping[str, Any], api_version: str, kind: str
) -> list[dict[str, Any]]:
    """``refs`` (copied) with a controller reference to ``owner`` appended, unless one of
    them has ``owner``'s UID already."""
    copied = [dict(ref) for ref in refs]
    if any(ref.get("uid", "") == uid(owner) for ref in copied):
        return copied
    return [*copied, new_controller_ref(owner, api_version, kind)]


def is_claim_owner_up_to_date(
    claim: Mapping[str, Any], set_: Mapping[str, Any], pod: Mapping[str, Any]
) -> bool:
    """True when ``claim``'s owner references already have the policy's shape for ``pod``
    (the table above), or when the claim must not be touched: a stale reference to the set
    or the pod, or another controller with no reference of ours to clean up. False when
    the set or the pod owns it without being its controller."""
    if has_stale_owner_ref(claim, set_, API_VERSION, KIND) or has_stale_owner_ref(
        claim, pod, POD_API_VERSION, POD_KIND
    ):
        return True
    set_ref, pod_ref = has_owner_ref(claim, set_), has_owner_ref(claim, pod)
    if has_unexpected_controller(claim, set_, pod):
        return not (set_ref or pod_ref)
    if has_non_controller_owner(claim, set_, pod):
        return False
    delete_on_scale, delete_on_delete = _delete_on(
        get_persistent_volume_claim_retention_policy(set_)
    )
    scaled_down = not pod_in_ordinal_range(pod, set_)
    if not delete_on_scale:
        return set_ref == delete_on_delete and not pod_ref
    if not delete_on_delete:
        return not set_ref and pod_ref == scaled_down
    return set_ref != scaled_down and pod_ref == scaled_down


def update_claim_owner_ref_for_set_and_pod(
    claim: MutableMapping[str, Any], set_: Mapping[str, Any], pod: Mapping[str, Any]
) -> None:
    """Give ``claim`` (modified in place) the owner references the policy wants: remove
    every reference naming the set or the pod, then - unless another controller owns the
    claim - add the set and/or the pod as its controller. Other owners are kept. Check
    :func:`is_claim_owner_up_to_date` first, to skip a pointless update."""
    unexpected = has_unexpected_controller(claim, set_, pod)
    refs = remove_refs(
        _refs(claim),
        lambda ref: (
            matches_ref(ref, set_, API_VERSION, KIND)
            or matches_ref(ref, pod, POD_API_VERSION, POD_KIND)
        ),
    )
    if not unexpected:
        delete_on_scale, delete_on_delete = _delete_on(
            get_persistent_volume_claim_retention_policy(set_)
        )
        scaled_down = not pod_in_ordinal_range(pod, set_)
        if delete_on_scale and scaled_down:
            refs = add_controller_ref(refs, pod, POD_API_VERSION, POD_KIND)
        elif delete_on_delete:
            refs = add_controller_ref(refs, set_, API_VERSION, KIND)
    metadata = claim.setdefault("metadata", {})
    if refs:
        metadata["ownerReferences"] = refs
    else:
        metadata.pop("ownerReferences", None)


def claim_is_stale(
    set_: Mapping[str, Any], pod: Mapping[str, Any], claim: Mapping[str, Any]
) -> bool:
    """True when ``claim``, an existing claim of ``pod``'s, is stale and must block the
    pod's creation (upstream ``PodClaimIsStale``, per claim): under ``whenScaled: Delete``,
    a reference to a pod of ``pod``'s name with another UID (or ``pod``, not created yet,
    has none) means the claim is about to be deleted with that earlier pod. Under
    ``whenScaled: Retain`` claims are reused and never stale."""
    if get_persistent_volume_claim_retention_policy(set_).when_scaled == RETAIN_POLICY:
        return False
    return has_stale_owner_ref(claim, pod, POD_API_VERSION, POD_KIND)
