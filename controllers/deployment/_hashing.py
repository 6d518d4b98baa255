"""The ``pod-template-hash``: a short, stable name for a pod template (+ collision count).

Upstream (``controller.ComputeHash``) feeds a Go-specific dump of the typed template into
FNV-32a, so its values cannot be reproduced outside Go, and they do not need to be: the
controller finds a Deployment's ReplicaSets by template equality, never by hash (see
:mod:`kcontrol_controllers.deployment._replicasets`), so ReplicaSets created by
kube-controller-manager are picked up as they are. What matters is that the hash of a template
never changes across restarts and versions of kcontrol, because it names the ReplicaSet; so it
is defined here exactly, and tests pin it to fixed values:

1. ``data`` = the template (``spec.template`` of the Deployment, as the server sent it, without
   any ``pod-template-hash`` label - the Deployment's template never has one) encoded as
   canonical JSON: object keys sorted by code point, no whitespace, strings in UTF-8 without
   ASCII escaping, integers in decimal (``orjson.dumps(template, option=OPT_SORT_KEYS)``).
2. If ``collisionCount`` is set (even to 0), append 8 bytes: the count as an unsigned 32-bit
   little-endian integer followed by four zero bytes (what upstream appends).
3. ``h`` = FNV-32a of those bytes (offset basis 2166136261, prime 16777619).
4. The label value is the decimal string of ``h`` with every character ``c`` replaced by
   ``ALPHANUMS[ord(c) % 27]`` where ``ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"`` (apimachinery's
   ``rand.SafeEncodeString``: no vowels, no 0/1/3, so no words and no look-alikes).

So values have 1 to 10 characters from that alphabet, as upstream's do. The primitives
(FNV-1a, the safe encoding, canonical JSON) are :mod:`kcontrol_controllers.hashing`'s, shared
with the ControllerRevision hash; they are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..hashing import SAFE_ALPHANUMS, canonical_json, fnv32a, safe_encode_string

__all__ = ["SAFE_ALPHANUMS", "canonical_json", "compute_hash", "fnv32a", "safe_encode_string"]

_MASK32: Final = 0xFFFFFFFF


def compute_hash(template: Mapping[str, Any], collision_count: int | None) -> str:
    """The ``pod-template-hash`` of ``template`` with ``collision_count`` (see the module
    docstring for the exact definition). ``collision_count`` is ``status.collisionCount`` of
    the Deployment; ``None`` when the field is absent."""
    h = fnv32a(canonical_json(template))
    if collision_count is not None:
        suffix = (collision_count & _MASK32).to_bytes(4, "little") + bytes(4)
        h = fnv32a(suffix, seed=h)
    return safe_encode_string(str(h))
