"""Keyed checksums of config data, and the Secret transform that keeps values out of memory.

A checksum is ``hmac-sha256:<key id>:<mac>``: HMAC-SHA256, under a key only the controller
holds, of the config's *data* in canonical form (the kind, then ``data`` and ``binaryData``
as JSON with sorted keys and no whitespace), cut to 128 bits. Metadata is not part of it, so
label or annotation edits restart nothing. Checksums end up in workload annotations that many
more people can read than can read Secrets; a bare digest of a low-entropy secret (a short
password) could be brute-forced offline from it, a keyed one cannot without the key.

The key id (8 hex digits, itself an HMAC of a constant) says which key made a checksum: a
stored checksum from another key, or from xing's controller (16 hex digits of an unkeyed
SHA-256), is *foreign*, and is replaced without a restart (see
:mod:`kcontrol_controllers.configrestart._plan`) - so rotating the key, or switching from xing's
controller, restarts nothing by itself.

Secrets are read only to be hashed: :meth:`HmacKey.secret_transform` is the transform of the
controller's own Secret informer. It runs on each object as it is decoded, before anything
is cached or handed to a handler, and replaces ``data`` / ``stringData`` with the checksum
(:data:`CHECKSUM_FIELD`); it also drops the ``kubectl.kubernetes.io/last-applied-configuration``
annotation, which holds the whole Secret (values included) when it was made by
``kubectl apply``. The cache never holds a secret value.
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
from kcontrol.informers import TransformFunc, strip_managed_fields

__all__ = [
    "CHECKSUM_FIELD",
    "LAST_APPLIED_ANNOTATION",
    "MIN_KEY_BYTES",
    "HmacKey",
    "canonical_data",
    "secret_checksum",
]

CHECKSUM_FIELD: Final = "configrestart.kcontrol.io/checksum"
"""Where the Secret transform leaves a Secret's checksum (a top-level field of the cached
object, which no API object has)."""

LAST_APPLIED_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"

MIN_KEY_BYTES: Final = 16
"""A shorter HMAC key is refused (128 bits at least; ``openssl rand -hex 32`` gives 64)."""

_PREFIX: Final = "hmac-sha256"
_MAC_HEX: Final = 32
_KEY_ID_HEX: Final = 8
_FORMAT: Final = re.compile(rf"^{_PREFIX}:([0-9a-f]{{{_KEY_ID_HEX}}}):[0-9a-f]{{{_MAC_HEX}}}$")


def canonical_data(
    kind: str, data: Mapping[str, Any] | None, binary_data: Mapping[str, Any] | None
) -> bytes:
    """The bytes a checksum is computed over: ``kind`` (``configmap``/``secret``), then
    ``{"binaryData": ..., "data": ...}`` as JSON with sorted keys. Missing and empty maps are
    the same."""
    body = {"binaryData": dict(binary_data or {}), "data": dict(data or {})}
    encoded = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return kind.encode() + b"\n" + encoded.encode()


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
        data: Mapping[str, Any] | None,
        binary_data: Mapping[str, Any] | None = None,
    ) -> str:
        """The checksum of a config's data (module docstring)."""
        mac = hmac.new(self._key, canonical_data(kind, data, binary_data), hashlib.sha256)
        return f"{_PREFIX}:{self.key_id}:{mac.hexdigest()[:_MAC_HEX]}"

    def configmap_checksum(self, configmap: Mapping[str, Any]) -> str:
        """The checksum of a ConfigMap's ``data`` and ``binaryData``."""
        return self.checksum("configmap", configmap.get("data"), configmap.get("binaryData"))

    def is_own(self, value: object) -> bool:
        """Whether ``value`` is a checksum this key made (else it is foreign: another key's,
        xing's, or garbage)."""
        if not isinstance(value, str):
            return False
        match = _FORMAT.match(value)
        return match is not None and match.group(1) == self.key_id

    def secret_transform(self) -> TransformFunc:
        """The transform of the Secret informer (module docstring). Idempotent."""

        def transform(obj: Object) -> Object:
            strip_managed_fields(obj)
            if CHECKSUM_FIELD not in obj or "data" in obj or "stringData" in obj:
                data = dict(obj.get("data") or {})
                # stringData is write-only (the API server never returns it); a fake client
                # may: hash it as the server would store it, base64 in data.
                for name, text in (obj.get("stringData") or {}).items():
                    data[name] = base64.b64encode(str(text).encode()).decode()
                obj[CHECKSUM_FIELD] = self.checksum("secret", data)
            obj.pop("data", None)
            obj.pop("stringData", None)
            annotations = (obj.get("metadata") or {}).get("annotations")
            if isinstance(annotations, dict):
                annotations.pop(LAST_APPLIED_ANNOTATION, None)
            return obj

        return transform


def secret_checksum(secret: Mapping[str, Any]) -> str | None:
    """The checksum the Secret transform left on a cached Secret."""
    value = secret.get(CHECKSUM_FIELD)
    return value if isinstance(value, str) else None
