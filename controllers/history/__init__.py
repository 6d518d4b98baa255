"""The history of a StatefulSet or DaemonSet as ControllerRevisions, a port of
kube-controller-manager's ``pkg/controller/history`` (Kubernetes 1.36 behaviour).

A ControllerRevision is an immutable snapshot of a parent's template (``data``) with a
position in its history (``revision``). The StatefulSet and DaemonSet controllers record one
per distinct template, and label their pods with the name of the revision they were made
from; so names must be stable and equal templates must be recognised as equal.

Contracts:

- a revision is named ``<parent name>-<hash>``, the hash being FNV-1 of Go's JSON encoding of
  ``data`` plus the collision count (:func:`hash_controller_revision` defines it exactly); the
  same data and count always give the same name;
- two revisions are equal when their data is the same JSON (:func:`equal_revision`), whatever
  their bytes, names or labels (unless both carry numeric hash labels that differ), so that
  revisions written by kube-controller-manager are recognised;
- a history is ordered by ``revision``, then creation time, then name
  (:func:`sort_controller_revisions`); the next revision number is one past the highest
  (:func:`next_revision`);
- :class:`History` reads a parent's revisions (its own and orphans) from the informer's cache
  and creates, updates, deletes, adopts and releases them through the API; creation resolves
  name collisions by bumping the collision count it returns.

Layout: ``_hashing`` (the hash label, names, the hash), ``_revisions`` (pure functions on
revisions), ``_history`` (the cache index and :class:`History`).
"""

from ._hashing import (
    CONTROLLER_REVISION_HASH_LABEL,
    controller_revision_name,
    hash_controller_revision,
)
from ._history import (
    CONTROLLER_REVISION_CONTROLLER_INDEX,
    History,
    controller_revision_index_func,
    controller_revision_index_key,
)
from ._revisions import (
    body_to_create,
    equal_revision,
    find_equal_revisions,
    new_controller_revision,
    next_revision,
    sort_controller_revisions,
)

__all__ = [
    "CONTROLLER_REVISION_CONTROLLER_INDEX",
    "CONTROLLER_REVISION_HASH_LABEL",
    "History",
    "body_to_create",
    "controller_revision_index_func",
    "controller_revision_index_key",
    "controller_revision_name",
    "equal_revision",
    "find_equal_revisions",
    "hash_controller_revision",
    "new_controller_revision",
    "next_revision",
    "sort_controller_revisions",
]
