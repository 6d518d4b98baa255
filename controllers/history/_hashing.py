"""Names of ControllerRevisions: ``<parent name>-<hash of the revision's data>``.

A port of ``ControllerRevisionName`` and ``HashControllerRevision`` of upstream's
``pkg/controller/history``. The hash is defined exactly, because it names revisions and pods
carry it (a StatefulSet's pods in ``controller-revision-hash``): the same data must give the
same name across restarts, and - where it can - the name kube-controller-manager gives.

1. ``data`` = the revision's ``data`` (a JSON value, normally an object) as Go writes it
   (:func:`kcontrol_controllers.hashing.go_json`: keys sorted, no whitespace, UTF-8, ``<``,
   ``>``, ``&``, U+2028 and U+2029 escaped). Upstream hashes the raw bytes of ``data``; its
   StatefulSet and DaemonSet controllers produce them with ``json.Marshal`` of a map, which
   writes the same bytes, and :meth:`History.create_controller_revision` sends exactly these
   bytes, so a revision gets the name kube-controller-manager would give it. Only a float
   spelled differently by Go (``1e-7`` where Python writes ``1e-07``) gives another name;
   revisions are still matched by :func:`~kcontrol_controllers.history.equal_revision`,
   which compares parsed data. A revision without ``data`` contributes no bytes.
2. If ``probe`` (the parent's ``status.collisionCount``) is not ``None``, append its decimal
   ASCII digits (``strconv.FormatInt``; ``-1`` appends ``b"-1"``).
3. ``h`` = the 32-bit FNV-1 hash of those bytes (Go's ``fnv.New32``, not FNV-1a).
4. The hash is the decimal string of ``h`` through ``rand.SafeEncodeString``
   (:func:`kcontrol_controllers.hashing.safe_encode_string`): 1 to 10 characters of
   ``bcdfghjklmnpqrstvwxz2456789``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..hashing import fnv32, go_json, safe_encode_string

__all__ = [
    "CONTROLLER_REVISION_HASH_LABEL",
    "MAX_PREFIX_LENGTH",
    "controller_revision_name",
    "hash_controller_revision",
]

CONTROLLER_REVISION_HASH_LABEL: Final = "controller.kubernetes.io/hash"
"""The label holding the hash of a ControllerRevision's data (upstream
``ControllerRevisionHashLabel``). It is set when the revision is built and not updated when
creation renames the revision after a collision (as upstream)."""

MAX_PREFIX_LENGTH: Final = 223
"""The longest name prefix kept, so that a revision name stays within the 253 characters of
an object name, leaving 30 for ``-`` and the hash (which has at most 10)."""


def controller_revision_name(prefix: str, hash_: str) -> str:
    """``prefix-hash_``, the name of a ControllerRevision of the parent named ``prefix``;
    a prefix longer than :data:`MAX_PREFIX_LENGTH` is cut to that length. (Upstream cuts
    bytes; object names are ASCII, so characters and bytes are the same.)"""
    return f"{prefix[:MAX_PREFIX_LENGTH]}-{hash_}"


def hash_controller_revision(revision: Mapping[str, Any], probe: int | None) -> str:
    """The hash of ``revision``'s ``data`` with ``probe`` (the collision count, or ``None``),
    as defined in the module docstring. Fields other than ``data`` do not count."""
    data = revision.get("data")
    h = fnv32(b"" if data is None else go_json(data))
    if probe is not None:
        h = fnv32(str(probe).encode("ascii"), seed=h)
    return safe_encode_string(str(h))
