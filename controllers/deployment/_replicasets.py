"""A Deployment's ReplicaSets: which one is new, ordering, counting, and labelling.

The new ReplicaSet is found by template equality, never by the ``pod-template-hash`` value:
the oldest ReplicaSet whose pod template equals the Deployment's once that label is ignored
(:func:`equal_ignore_hash`). So ReplicaSets created by kube-controller-manager - whose hash
values this controller cannot reproduce - are recognised as they are, and a cluster can switch
between the two controllers without a rollout.

Equality follows apimachinery's ``equality.Semantic.DeepEqual`` on the objects the server
sent: the server fills in every default, so comparing the decoded JSON is comparing the API
objects, except for one rule of the semantic comparison that JSON can show differently - a
missing map or list equals an empty one (and a JSON ``null`` equals a missing field).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from kcontrol.client import Object, deep_copy
from kcontrol.labels import SelectorError, selector_from_label_selector

from ._annotations import get_desired_replicas_annotation
from ._fields import (
    DEFAULT_UNIQUE_LABEL_KEY,
    creation_key,
    labels_of,
    spec,
    spec_replicas,
    status_int,
    template_of,
    uid_of,
)

__all__ = [
    "active_replica_sets",
    "actual_replica_count",
    "available_replica_count",
    "clone_and_add_label",
    "clone_selector_and_add_label",
    "deployments_selecting",
    "equal_ignore_hash",
    "find_active_or_latest",
    "find_new_replica_set",
    "find_old_replica_sets",
    "is_saturated",
    "ready_replica_count",
    "semantic_equal",
    "sorted_by_creation",
    "sorted_by_size_newer",
    "sorted_by_size_older",
    "terminating_replica_count",
]


def _normalized(value: Any) -> Any:
    """``value`` with every null, empty map and empty list dropped from maps (recursively)."""
    if type(value) is dict or isinstance(value, Mapping):  # dict first: the ABC check is dear
        result = {}
        for key, item in value.items():
            normalized = _normalized(item)
            if normalized is None or normalized in ({}, []):
                continue
            result[key] = normalized
        return result
    if isinstance(value, list | tuple):
        return [_normalized(item) for item in value]
    return value


def semantic_equal(a: Any, b: Any) -> bool:
    """Deep equality of decoded JSON where a missing, ``null``, empty map or empty list field
    are all the same (Go's ``equality.Semantic.DeepEqual`` on API objects)."""
    return bool(_normalized(a) == _normalized(b))


def _without_hash_label(template: Mapping[str, Any]) -> Any:
    metadata = template.get("metadata")
    if not isinstance(metadata, Mapping):
        return template
    labels = metadata.get("labels")
    if not isinstance(labels, Mapping) or DEFAULT_UNIQUE_LABEL_KEY not in labels:
        return template
    stripped = {k: v for k, v in labels.items() if k != DEFAULT_UNIQUE_LABEL_KEY}
    return {**template, "metadata": {**metadata, "labels": stripped}}


def equal_ignore_hash(template1: Mapping[str, Any], template2: Mapping[str, Any]) -> bool:
    """Whether two pod templates are semantically equal once the ``pod-template-hash`` label
    is removed from both (neither argument is changed)."""
    return semantic_equal(_without_hash_label(template1), _without_hash_label(template2))


# -- ordering ----------------------------------------------------------------------------------


def sorted_by_creation(replica_sets: Iterable[Object]) -> list[Object]:
    """Oldest first; ties broken by name (``ReplicaSetsByCreationTimestamp``)."""
    return sorted(replica_sets, key=creation_key)


def sorted_by_size_older(replica_sets: Iterable[Object]) -> list[Object]:
    """Largest ``spec.replicas`` first; among equal sizes the older first
    (``ReplicaSetsBySizeOlder``: who loses replicas first when scaling down)."""
    return sorted(sorted_by_creation(replica_sets), key=spec_replicas, reverse=True)


def sorted_by_size_newer(replica_sets: Iterable[Object]) -> list[Object]:
    """Largest ``spec.replicas`` first; among equal sizes the newer first
    (``ReplicaSetsBySizeNewer``: who gains replicas first when scaling up)."""
    newest_first = sorted(replica_sets, key=creation_key, reverse=True)
    return sorted(newest_first, key=spec_replicas, reverse=True)


# -- new and old -------------------------------------------------------------------------------


def find_new_replica_set(
    deployment: Mapping[str, Any], replica_sets: Iterable[Object]
) -> Object | None:
    """The oldest ReplicaSet whose template equals the Deployment's (ignoring the hash
    label), or ``None``. There can be more than one after some upgrades; taking the oldest
    makes the choice deterministic."""
    # equal_ignore_hash, with the Deployment's side normalized once for every candidate and
    # each ReplicaSet's remembered from earlier syncs (one sync asks up to four times).
    wanted = _wanted_template(template_of(deployment))
    for rs in sorted_by_creation(replica_sets):
        if _comparable_template(rs) == wanted:
            return rs
    return None


_K = TypeVar("_K")
_V = TypeVar("_V")

_TEMPLATE_MEMO_SIZE = 8192
_template_memo: dict[tuple[str, str], Any] = {}


def _comparable_template(replica_set: Mapping[str, Any]) -> Any:
    """The ReplicaSet's pod template without the hash label, normalized (what
    :func:`equal_ignore_hash` compares), remembered by UID and resourceVersion: together they
    name one stored version of the object, and this controller never changes a ReplicaSet's
    template in memory. Objects without them (not from the API server) are not remembered."""
    meta = replica_set.get("metadata") or {}
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    if not uid or not version:
        return _normalized(_without_hash_label(template_of(replica_set)))
    key = (str(uid), str(version))
    comparable = _template_memo.get(key)
    if comparable is None:
        comparable = _normalized(_without_hash_label(template_of(replica_set)))
        _remember(_template_memo, _TEMPLATE_MEMO_SIZE, key, comparable)
    return comparable


_WANTED_MEMO_SIZE = 64
_wanted_memo: dict[int, tuple[Mapping[str, Any], Any]] = {}


def _wanted_template(template: Mapping[str, Any]) -> Any:
    """The Deployment's pod template as :func:`equal_ignore_hash` compares it, remembered by
    the identity of the template object: a sync reads it up to six times from its own copy
    of the Deployment. The memo holds the template itself, so its id cannot be reused while
    remembered; a template is never changed in place (a rollback puts in a new one)."""
    key = id(template)
    remembered = _wanted_memo.get(key)
    if remembered is not None and remembered[0] is template:
        return remembered[1]
    wanted = _normalized(_without_hash_label(template))
    _remember(_wanted_memo, _WANTED_MEMO_SIZE, key, (template, wanted))
    return wanted


def _remember(memo: dict[_K, _V], size: int, key: _K, value: _V) -> None:
    """Store ``value`` in ``memo``, dropping its oldest entry once it holds ``size``."""
    if len(memo) >= size:
        del memo[next(iter(memo))]
    memo[key] = value


def find_old_replica_sets(
    deployment: Mapping[str, Any], replica_sets: Iterable[Object]
) -> tuple[list[Object], list[Object]]:
    """``(old ReplicaSets with replicas, all old ReplicaSets)``, oldest first: every
    ReplicaSet but the new one."""
    ordered = sorted_by_creation(replica_sets)
    new_rs = find_new_replica_set(deployment, ordered)
    new_uid = uid_of(new_rs) if new_rs is not None else None
    all_old = [rs for rs in ordered if new_rs is None or uid_of(rs) != new_uid]
    required = [rs for rs in all_old if spec_replicas(rs) != 0]
    return required, all_old


def active_replica_sets(replica_sets: Iterable[Object | None]) -> list[Object]:
    """The ReplicaSets with ``spec.replicas > 0`` (``FilterActiveReplicaSets``)."""
    return [rs for rs in replica_sets if rs is not None and spec_replicas(rs) > 0]


def find_active_or_latest(
    new_rs: Object | None, old_replica_sets: Sequence[Object]
) -> Object | None:
    """The only active ReplicaSet; if none is active, the new one or else the newest old
    one; ``None`` when several are active (or there is no ReplicaSet at all)."""
    if new_rs is None and not old_replica_sets:
        return None
    newest_first = sorted(old_replica_sets, key=creation_key, reverse=True)
    active = active_replica_sets([*newest_first, new_rs])
    if not active:
        return new_rs if new_rs is not None else newest_first[0]
    if len(active) == 1:
        return active[0]
    return None


def is_saturated(deployment: Mapping[str, Any], replica_set: Mapping[str, Any] | None) -> bool:
    """Whether ``replica_set`` holds the whole Deployment: its size, its desired-replicas
    annotation and its available replicas all equal ``spec.replicas``."""
    if replica_set is None:
        return False
    desired = get_desired_replicas_annotation(replica_set)
    if desired is None:
        return False
    replicas = spec_replicas(deployment)
    return (
        spec_replicas(replica_set) == replicas
        and desired == replicas
        and status_int(replica_set, "availableReplicas") == replicas
    )


# -- counting ----------------------------------------------------------------------------------


def actual_replica_count(replica_sets: Iterable[Mapping[str, Any] | None]) -> int:
    """Sum of ``status.replicas`` (pods that exist and are not terminating)."""
    return sum(status_int(rs, "replicas") for rs in replica_sets if rs is not None)


def ready_replica_count(replica_sets: Iterable[Mapping[str, Any] | None]) -> int:
    """Sum of ``status.readyReplicas``."""
    return sum(status_int(rs, "readyReplicas") for rs in replica_sets if rs is not None)


def available_replica_count(replica_sets: Iterable[Mapping[str, Any] | None]) -> int:
    """Sum of ``status.availableReplicas``."""
    return sum(status_int(rs, "availableReplicas") for rs in replica_sets if rs is not None)


def terminating_replica_count(replica_sets: Iterable[Mapping[str, Any] | None]) -> int | None:
    """Sum of ``status.terminatingReplicas``, or ``None`` when it cannot be known: a
    ReplicaSet that its controller has synced (``observedGeneration > 0``) but that does not
    report the field makes the total unknown; one never synced counts as 0."""
    total = 0
    for rs in replica_sets:
        if rs is None:
            continue
        rs_status = rs.get("status") or {}
        value = rs_status.get("terminatingReplicas")
        if value is None:
            if int(rs_status.get("observedGeneration") or 0) == 0:
                continue
            return None
        total += int(value)
    return total


# -- labels and selectors ----------------------------------------------------------------------


def clone_and_add_label(labels: Mapping[str, str] | None, key: str, value: str) -> dict[str, str]:
    """A copy of ``labels`` with ``key=value`` added."""
    result = dict(labels or {})
    result[key] = value
    return result


def clone_selector_and_add_label(
    selector: Mapping[str, Any] | None, key: str, value: str
) -> dict[str, Any]:
    """A deep copy of a LabelSelector with ``key=value`` added to ``matchLabels``."""
    result: dict[str, Any] = deep_copy(dict(selector or {}))
    result["matchLabels"] = clone_and_add_label(result.get("matchLabels"), key, value)
    return result


def deployments_selecting(
    replica_set: Mapping[str, Any], deployments: Iterable[Object]
) -> list[Object]:
    """The Deployments (of the ReplicaSet's namespace) whose selector matches the
    ReplicaSet's labels. A ReplicaSet without labels matches none, and an empty or invalid
    selector matches nothing (upstream ``GetDeploymentsForReplicaSet``)."""
    labels = labels_of(replica_set)
    if not labels:
        return []
    matching = []
    for deployment in deployments:
        try:
            selector = selector_from_label_selector(spec(deployment).get("selector"))
        except SelectorError:
            continue
        if selector.empty() or not selector.matches(labels):
            continue
        matching.append(deployment)
    return matching
