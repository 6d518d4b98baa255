"""Keyed checksums of config data, and the transform that keeps config data out of memory.

A checksum is ``hmac-sha256-v2:<key id>:<mac>``: HMAC-SHA256, under a key only the controller
holds, of the config's identity and data in canonical form (one JSON object with sorted keys
and no whitespace: ``binaryData``, ``data``, the kind, ``name`` and ``namespace``), cut to 128
bits. Other metadata is not part of it, so label or annotation edits restart nothing.
Checksums end up in workload annotations that many more people can read than can read
Secrets; a bare digest of a low-entropy secret (a short password) could be brute-forced
offline from it, a keyed one cannot without the key. Binding the kind, namespace and name
in makes equal data in two configs give unrelated checksums, so the annotations do not tell
a reader which configs are equal, and a tenant cannot test a guess at another namespace's
Secret by creating a Secret of its own holding the guess and comparing checksums.

The key id (8 hex digits, itself an HMAC of a constant) says which key made a checksum. A
stored checksum that is not this key's ``v2`` one is *foreign* and is replaced without a
restart (see :mod:`kcontrol_controllers.configrestart._plan`): another key's, xing's (16 hex
digits of an unkeyed SHA-256), or this key's in the *legacy* format of earlier versions
(``hmac-sha256:<key id>:<mac>``, over the data only). So rotating the key, switching from
xing's controller, or upgrading from a version that wrote the legacy format restarts
nothing by itself. A legacy checksum is recognised (:meth:`HmacKey.is_legacy`) but never
compared with the data: it is not bound to a config, so comparing it would keep the
equality test above open to anyone who recorded legacy checksums before the upgrade.

ConfigMaps and Secrets are read only to be hashed: :meth:`HmacKey.config_transform` is the
transform of the controller's own ConfigMap and Secret informers. It runs on each object as
it is decoded, before anything is cached or handed to a handler, and keeps only what the
controller decides with: ``apiVersion``, ``kind``, the metadata fields of
:data:`CACHED_METADATA`, and the checksum (:data:`CHECKSUM_FIELD`). Data, labels,
annotations (``kubectl.kubernetes.io/last-applied-configuration`` holds a whole object made
by ``kubectl apply``, values included) and managed fields are dropped. The caches never hold
a secret value, nor a tenant's megabyte of ConfigMap.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from kcontrol.client import Object
from kcontrol.errors import OptionsError
from kcontrol.informers import TransformFunc

__all__ = [
    "CACHED_METADATA",
    "CHECKSUM_FIELD",
    "MIN_KEY_BYTES",
    "HmacKey",
    "cached_checksum",
    "canonical_data",
]

CHECKSUM_FIELD: Final = "configrestart.kcontrol.io/checksum"
"""Where the transform leaves a config's checksum (a top-level field of the cached object,
which no API object has)."""

CACHED_METADATA: Final = ("name", "namespace", "uid", "resourceVersion")
"""The metadata fields of a config the transform keeps: its identity and version."""

MIN_KEY_BYTES: Final = 16
"""A shorter HMAC key is refused (128 bits at least; ``openssl rand -hex 32`` gives 64)."""

_PREFIX: Final = "hmac-sha256-v2"
_LEGACY_PREFIX: Final = "hmac-sha256"
_MAC_HEX: Final = 32
_KEY_ID_HEX: Final = 8
_FORMAT: Final = re.compile(rf"^{_PREFIX}:([0-9a-f]{{{_KEY_ID_HEX}}}):[0-9a-f]{{{_MAC_HEX}}}$")
_LEGACY_FORMAT: Final = re.compile(
    rf"^{_LEGACY_PREFIX}:([0-9a-f]{{{_KEY_ID_HEX}}}):[0-9a-f]{{{_MAC_HEX}}}$"
)

_DATA_FIELDS: Final[Mapping[str, tuple[str, ...]]] = {
    "configmap": ("data", "binaryData"),
    "secret": ("data", "stringData"),
}
"""The fields of each kind of config that hold its data (module docstring)."""


def canonical_data(
    kind: str,
    namespace: str,
    name: str,
    data: Mapping[str, Any] | None,
    binary_data: Mapping[str, Any] | None,
) -> bytes:
    """The bytes a checksum is computed over: one JSON object, keys sorted, holding the
    config's ``kind`` (``configmap``/``secret``), ``namespace``, ``name``, ``data`` and
    ``binaryData``. Missing and empty maps are the same."""
    body = {
        "binaryData": dict(binary_data or {}),
        "data": dict(data or {}),
        "kind": kind,
        "name": name,
        "namespace": namespace,
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class HmacKey:
    """The controller's HMAC key. Never logged, never written anywhere.

    Build it with :meth:`from_file` (``--configrestart-hmac-key-file``) or from bytes
    (tests). Surrounding whitespace is not part of the key (a file written by
    ``echo`` ends in a newline).
    """

    __slots__ = ("_key", "key_id")

    def __init__(self, key: bytes) -> None:
        key = key.strip()
        if len(key) < MIN_KEY_BYTES:
            raise OptionsError(
                f"the config-restart HMAC key must be at least {MIN_KEY_BYTES} bytes "
                f"(got {len(key)})"
            )
        self._key = key
        key_id = hmac.new(key, b"kcontrol configrestart key id", hashlib.sha256).hexdigest()
        self.key_id: str = key_id[:_KEY_ID_HEX]

    def __repr__(self) -> str:
        return f"HmacKey(key_id={self.key_id!r})"

    @classmethod
    def from_file(cls, path: str) -> HmacKey:
        """The key in the file ``path``; :class:`OptionsError` (one line, naming the flag
        and the file) if it is unset, unreadable or too short."""
        if not path:
            raise OptionsError(
                "--configrestart-hmac-key-file is required by the configrestart controller: "
                "a file holding at least 16 bytes of secret key (e.g. a Secret volume; "
                "create it with `openssl rand -hex 32`)"
            )
        try:
            raw = Path(path).read_bytes()
        except OSError as error:
            raise OptionsError(
                f"--configrestart-hmac-key-file {path!r}: {error.strerror or error}"
            ) from None
        try:
            return cls(raw)
        except OptionsError as error:
            raise OptionsError(f"--configrestart-hmac-key-file {path!r}: {error}") from None

    def checksum(
        self,
        kind: str,
        namespace: str,
        name: str,
        data: Mapping[str, Any] | None,
        binary_data: Mapping[str, Any] | None = None,
    ) -> str:
        """The checksum of the config ``kind``/``namespace``/``name`` holding ``data`` and
        ``binary_data`` (module docstring)."""
        message = canonical_data(kind, namespace, name, data, binary_data)
        mac = hmac.new(self._key, message, hashlib.sha256)
        return f"{_PREFIX}:{self.key_id}:{mac.hexdigest()[:_MAC_HEX]}"

    def config_checksum(self, kind: str, config: Mapping[str, Any]) -> str:
        """The checksum of a ConfigMap (``kind`` ``configmap``: its ``data`` and
        ``binaryData``) or a Secret (``secret``: its ``data``, and ``stringData`` as the API
        server would store it, base64 in ``data``), named by its metadata."""
        meta = config.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        if kind == "configmap":
            return self.checksum(
                kind, namespace, name, config.get("data"), config.get("binaryData")
            )
        if kind != "secret":
            raise ValueError(f"not a config kind: {kind!r}")
        data = dict(config.get("data") or {})
        # stringData is write-only (the API server never returns it); a fake client may
        # return it: hash it as the server would store it, base64 in data.
        for key, text in (config.get("stringData") or {}).items():
            data[key] = base64.b64encode(str(text).encode()).decode()
        return self.checksum(kind, namespace, name, data)

    def is_own(self, value: object) -> bool:
        """Whether ``value`` is a checksum this key made in the current format (else it is
        foreign: another key's, xing's, this key's legacy one, or garbage)."""
        return self._made_by_this_key(_FORMAT, value)

    def is_legacy(self, value: object) -> bool:
        """Whether ``value`` is a checksum this key made in the legacy format (over the data
        only; module docstring). Such a checksum is foreign all the same."""
        return self._made_by_this_key(_LEGACY_FORMAT, value)

    def _made_by_this_key(self, pattern: re.Pattern[str], value: object) -> bool:
        if not isinstance(value, str):
            return False
        match = pattern.match(value)
        return match is not None and match.group(1) == self.key_id

    def config_transform(self, kind: str) -> TransformFunc:
        """The transform of the informer of ConfigMaps (``kind`` ``configmap``) or Secrets
        (``secret``); see the module docstring. Idempotent."""
        if kind not in _DATA_FIELDS:
            raise ValueError(f"not a config kind: {kind!r}")
        data_fields = _DATA_FIELDS[kind]

        def transform(obj: Object) -> Object:
            checksum = obj.get(CHECKSUM_FIELD)
            if not isinstance(checksum, str) or any(f in obj for f in data_fields):
                checksum = self.config_checksum(kind, obj)
            meta = obj.get("metadata") or {}
            kept: Object = {
                "metadata": {f: meta[f] for f in CACHED_METADATA if f in meta},
                CHECKSUM_FIELD: checksum,
            }
            for field in ("apiVersion", "kind"):
                if field in obj:
                    kept[field] = obj[field]
            return kept

        return transform


def cached_checksum(config: Mapping[str, Any]) -> str | None:
    """The checksum the transform left on a cached ConfigMap or Secret."""
    value = config.get(CHECKSUM_FIELD)
    return value if isinstance(value, str) else None
