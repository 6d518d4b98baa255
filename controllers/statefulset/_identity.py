"""A StatefulSet member's identity: its ordinal, its name, and where it belongs.

A member of the set ``web`` is the pod ``web-<ordinal>``: the ordinal is read back from the
name (:func:`parent_name_and_ordinal`, upstream's ``(.*)-([0-9]+)$``), never from a label. The
set owns the ordinals ``[start, start + replicas)`` (:func:`get_start_ordinal`,
:func:`get_end_ordinal`, ``spec.ordinals.start`` defaulting to 0); a member outside that range
is condemned (:func:`pod_in_ordinal_range`). A pod's identity is its name and namespace, the
``statefulset.kubernetes.io/pod-name`` and ``apps.kubernetes.io/pod-index`` labels
(:func:`update_identity`) and, set once at creation because they are immutable, its
``hostname`` and ``subdomain`` (the set's governing service, :func:`init_identity`).

Functions that read never modify their arguments; :func:`update_identity` and
:func:`init_identity` modify the pod they are given, which must be the caller's own copy.
Upstream's ``getParentNameAndOrdinal``, ``getOrdinal``, ``getStartOrdinal``,
``getEndOrdinal``, ``podInOrdinalRange``, ``getPodName``, ``isMemberOf``, ``identityMatches``,
``initIdentity``, ``updateIdentity``, the ``ascendingOrdinal`` / ``descendingOrdinal`` orders
and ``overlappingStatefulSets``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any, Final, TypeVar

from kcontrol.metatime import ZERO_TIME, parse_time

from ._fields import labels, meta, name, namespace, spec, spec_replicas
from ._names import POD_INDEX_LABEL, POD_NAME_LABEL

__all__ = [
    "ascending_ordinal",
    "descending_ordinal",
    "get_end_ordinal",
    "get_ordinal",
    "get_parent_name",
    "get_pod_name",
    "get_start_ordinal",
    "identity_matches",
    "init_identity",
    "is_member_of",
    "overlapping_sets_order",
    "parent_name_and_ordinal",
    "pod_in_ordinal_range",
    "update_identity",
]

_STATEFUL_POD_NAME: Final = re.compile(r"(.*)-([0-9]+)\Z")
_MAX_INT32: Final = 2**31 - 1

_Pod = TypeVar("_Pod", bound=Mapping[str, Any])


def parent_name_and_ordinal(pod: Mapping[str, Any]) -> tuple[str, int]:
    """The parent set's name and the ordinal in ``pod``'s name: ``("web", 3)`` for
    ``web-3``; ``("", -1)`` for a name that does not end in ``-<digits>``.

    The ordinal must fit an int32, as upstream's ``ParseInt(..., 32)``: ``web-99999999999``
    has the parent ``web`` and the ordinal -1. Leading zeros are read (``web-01`` is 1), but
    such a pod's identity does not match (:func:`identity_matches`).
    """
    return _parse_pod_name(name(pod))


@functools.lru_cache(maxsize=4096)
def _parse_pod_name(text: str) -> tuple[str, int]:
    """:func:`parent_name_and_ordinal` of a name; remembered, as a sync asks it of each pod
    several times (a pure function of the string)."""
    match = _STATEFUL_POD_NAME.search(text)
    if match is None:
        return "", -1
    ordinal = int(match.group(2))
    return match.group(1), ordinal if ordinal <= _MAX_INT32 else -1


def get_parent_name(pod: Mapping[str, Any]) -> str:
    """The parent set's name in ``pod``'s name, ``""`` if none."""
    return parent_name_and_ordinal(pod)[0]


def get_ordinal(pod: Mapping[str, Any]) -> int:
    """The ordinal in ``pod``'s name, -1 if none."""
    return parent_name_and_ordinal(pod)[1]


def get_start_ordinal(set_: Mapping[str, Any]) -> int:
    """The set's first ordinal (inclusive): ``spec.ordinals.start``, 0 when unset."""
    ordinals = spec(set_).get("ordinals") or {}
    return int(ordinals.get("start") or 0)


def get_end_ordinal(set_: Mapping[str, Any]) -> int:
    """The set's last ordinal (inclusive): start + replicas - 1 (start - 1 at 0 replicas,
    an empty range)."""
    return get_start_ordinal(set_) + spec_replicas(set_) - 1


def pod_in_ordinal_range(pod: Mapping[str, Any], set_: Mapping[str, Any]) -> bool:
    """True when ``pod``'s ordinal lies in the set's range: a replica to keep, not one to
    condemn."""
    ordinal = get_ordinal(pod)
    return get_start_ordinal(set_) <= ordinal <= get_end_ordinal(set_)


def get_pod_name(set_: Mapping[str, Any], ordinal: int) -> str:
    """The name of the set's member with ``ordinal``: ``<set>-<ordinal>``."""
    return f"{name(set_)}-{ordinal}"


def is_member_of(set_: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """True when ``pod``'s name names ``set_`` as its parent (ownership is not checked)."""
    return get_parent_name(pod) == name(set_)


def identity_matches(set_: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """True when ``pod`` has the identity of a member of ``set_``: a parsable ordinal, the
    canonical name for it, the set's namespace, and its own name as the ``pod-name`` label.
    (``hostname`` and ``subdomain`` are not compared: they are immutable.)"""
    parent, ordinal = parent_name_and_ordinal(pod)
    pod_name = name(pod)
    return (
        ordinal >= 0
        and parent == name(set_)
        and pod_name == get_pod_name(set_, ordinal)
        and namespace(pod) == namespace(set_)
        and labels(pod).get(POD_NAME_LABEL) == pod_name
    )


def update_identity(set_: Mapping[str, Any], pod: MutableMapping[str, Any]) -> None:
    """Give ``pod`` (modified in place) its identity in ``set_``: the canonical name for its
    ordinal, the set's namespace, and the ``pod-name`` and ``pod-index`` labels."""
    ordinal = get_ordinal(pod)
    metadata = pod.setdefault("metadata", {})
    metadata["name"] = get_pod_name(set_, ordinal)
    metadata["namespace"] = namespace(set_)
    pod_labels = metadata.get("labels")
    if pod_labels is None:
        pod_labels = metadata["labels"] = {}
    pod_labels[POD_NAME_LABEL] = metadata["name"]
    pod_labels[POD_INDEX_LABEL] = str(ordinal)


def init_identity(set_: Mapping[str, Any], pod: MutableMapping[str, Any]) -> None:
    """:func:`update_identity`, then the fields a pod can only get at creation:
    ``spec.hostname`` (its name) and ``spec.subdomain`` (the set's ``serviceName``; left out
    when the set has none, as Go omits an empty string)."""
    update_identity(set_, pod)
    pod_spec = pod.setdefault("spec", {})
    pod_spec["hostname"] = pod["metadata"]["name"]
    service_name = spec(set_).get("serviceName") or ""
    if service_name:
        pod_spec["subdomain"] = service_name
    else:
        pod_spec.pop("subdomain", None)


def ascending_ordinal(pods: Iterable[_Pod]) -> list[_Pod]:
    """``pods`` by ascending ordinal; pods without one (-1) first. The sort is stable."""
    return sorted(pods, key=get_ordinal)


def descending_ordinal(pods: Iterable[_Pod]) -> list[_Pod]:
    """``pods`` by descending ordinal; pods without one (-1) last. The sort is stable."""
    return sorted(pods, key=get_ordinal, reverse=True)


def overlapping_sets_order(set_: Mapping[str, Any]) -> tuple[Any, str]:
    """The sort key that breaks ties between sets whose selectors overlap (upstream
    ``overlappingStatefulSets``): the oldest first, then by name. A set without a creation
    time sorts as Go's zero time, first."""
    created = parse_time(meta(set_).get("creationTimestamp")) or ZERO_TIME
    return created, name(set_)
