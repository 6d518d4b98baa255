"""The secure port's TLS: its serving certificate and the client CA, reloaded as they change.

Where the serving certificate comes from, as in kube-controller-manager:

- ``--tls-cert-file`` and ``--tls-private-key-file`` when given (e.g. a cert-manager
  Certificate's Secret mounted as a volume);
- else ``<--cert-dir>/kcontrol-manager.crt`` and ``.key``, used as they are if both can be
  read, else generated there (:func:`ensure_self_signed`): a self-signed ECDSA P-256
  certificate for ``localhost``, ``127.0.0.1`` and the bind address, valid one year;
- without ``--cert-dir``, the same pair in a private temporary directory removed at exit
  (kube-controller-manager keeps it in memory; Python's :mod:`ssl` loads only files).

Rotation without a restart: :class:`ServingTLS` polls the files (``stat``: device, inode,
size, modification time - a Secret volume's atomic symlink swap changes them all) every
``reload_interval`` seconds and, when one changed, builds a new :class:`ssl.SSLContext` from
them. The listening context never changes; each TLS handshake switches to the newest one in
the server-name callback, which OpenSSL calls for every ClientHello, SNI or not. A pair that
does not load (a certificate written before its key) is logged and the previous context kept
until the next poll sees files that do.

Client certificates are requested (``CERT_OPTIONAL``: presenting one is optional, but one that
does not verify against the CA fails the handshake) when there is a client CA source: the
``--client-ca-file`` (reloaded like the serving pair) or the bundle the cluster publishes,
handed in with :meth:`ServingTLS.set_client_ca` as it is looked up and refreshed.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kcontrol.clock import Clock, RealClock
from kcontrol.errors import ServingError
from kcontrol.logging import get_logger

__all__ = ["CERT_RELOAD_INTERVAL", "PAIR_NAME", "ServingTLS", "ensure_self_signed"]

_log = get_logger(__name__)

PAIR_NAME = "kcontrol-manager"
"""File names of a pair in ``--cert-dir`` (kube-controller-manager's is its own name too)."""

CERT_RELOAD_INTERVAL = 10.0
"""Seconds between two checks of the certificate files for changes."""

_SELF_SIGNED_VALIDITY = datetime.timedelta(days=365)

_FileState = tuple[int, int, int, int] | None


def _state(path: Path | None) -> _FileState:
    if path is None:
        return None
    try:
        stat = path.stat()  # follows symlinks: a Secret volume swaps ..data
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def ensure_self_signed(directory: Path, hosts: Sequence[str]) -> tuple[Path, Path]:
    """``directory/kcontrol-manager.{crt,key}``: kept when both load as a pair, else a new
    self-signed certificate for ``hosts`` (DNS names or IP addresses) written there, the key
    readable by its owner only. Raises :class:`~kcontrol.errors.ServingError` when the
    directory cannot be written."""
    cert_file, key_file = directory / f"{PAIR_NAME}.crt", directory / f"{PAIR_NAME}.key"
    if cert_file.exists() and key_file.exists():
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as error:
            _log.warning(
                "the certificate pair in --cert-dir does not load; generating a new one",
                cert=str(cert_file),
                error=str(error),
            )
        else:
            return cert_file, key_file
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, f"{PAIR_NAME}@{int(now.timestamp())}")]
    )
    alternatives: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            alternatives.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alternatives.append(x509.DNSName(host))
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _SELF_SIGNED_VALIDITY)
        .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_atomically(key_file, key_pem, mode=0o600)
        _write_atomically(
            cert_file, certificate.public_bytes(serialization.Encoding.PEM), mode=0o644
        )
    except OSError as error:
        raise ServingError(
            f"cannot write a self-signed certificate to {directory}: {error}"
        ) from None
    _log.info("generated a self-signed serving certificate", cert=str(cert_file), key=str(key_file))
    return cert_file, key_file


def _write_atomically(path: Path, data: bytes, *, mode: int) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    os.replace(temporary, path)


class ServingTLS:
    """The TLS contexts of the secure port (module docstring).

    ``cert_file``/``key_file``: the serving pair. ``client_ca_file``: a CA bundle to verify
    client certificates with; ``request_client_certificates`` asks clients for one even
    without it (the CA then comes from :meth:`set_client_ca`). Call :meth:`load` once, listen
    with :attr:`context`, and keep :meth:`run` running to pick up changed files.
    """

    def __init__(
        self,
        cert_file: Path,
        key_file: Path,
        *,
        client_ca_file: Path | None = None,
        request_client_certificates: bool = False,
        reload_interval: float = CERT_RELOAD_INTERVAL,
        clock: Clock | None = None,
    ) -> None:
        self._cert_file = cert_file
        self._key_file = key_file
        self._client_ca_file = client_ca_file
        self._verify = request_client_certificates or client_ca_file is not None
        self._reload_interval = reload_interval
        self._clock: Clock = clock if clock is not None else RealClock()
        self._client_ca: bytes | None = None  # from set_client_ca, when no file is given
        self._states: tuple[_FileState, ...] = ()
        # _listening is the context the server was started with; _current the newest one,
        # which every handshake switches to.
        self._listening: ssl.SSLContext | None = None
        self._current: ssl.SSLContext | None = None

    @property
    def context(self) -> ssl.SSLContext:
        """The context to listen with; valid once :meth:`load` returned."""
        if self._listening is None:
            raise RuntimeError("ServingTLS.load() was not called")
        return self._listening

    def load(self) -> None:
        """Build the first context; raises :class:`~kcontrol.errors.ServingError` naming the
        file that does not load."""
        self._states = self._file_states()
        self._current = self._listening = self._build()

    def set_client_ca(self, bundle: bytes | None) -> None:
        """Verify client certificates with ``bundle`` (PEM) from now on; ignored when a
        ``client_ca_file`` is given. Raises :class:`~kcontrol.errors.ServingError` for a
        bundle that does not load, keeping the previous one."""
        if self._client_ca_file is not None or bundle == self._client_ca:
            return
        previous, self._client_ca = self._client_ca, bundle
        try:
            self._current = self._build()
        except ServingError:
            self._client_ca = previous
            raise
        _log.info("client CA updated", certificates=(bundle or b"").count(b"BEGIN CERTIFICATE"))

    def reload_if_changed(self) -> bool:
        """Rebuild the context if a file changed since the last load; True if it did. A
        pair that does not load is logged and the previous context kept."""
        states = self._file_states()
        if states == self._states:
            return False
        try:
            context = self._build()
        except ServingError as error:
            _log.warning(
                "changed certificate files do not load yet; serving the previous ones",
                error=str(error),
            )
            return False
        self._states = states
        self._current = context
        _log.info("reloaded the serving certificate", cert=str(self._cert_file))
        return True

    async def run(self) -> None:
        """Check the files every ``reload_interval`` seconds until cancelled."""
        while True:
            await self._clock.sleep(self._reload_interval)
            self.reload_if_changed()

    def _file_states(self) -> tuple[_FileState, ...]:
        return (_state(self._cert_file), _state(self._key_file), _state(self._client_ca_file))

    def _build(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self._cert_file, self._key_file)
        except (OSError, ssl.SSLError) as error:
            raise ServingError(
                f"cannot load the serving certificate {self._cert_file} with the key "
                f"{self._key_file}: {error}"
            ) from None
        if self._verify:
            context.verify_mode = ssl.CERT_OPTIONAL
            bundle, source = self._client_ca, "the cluster's client CA"
            if self._client_ca_file is not None:
                source = str(self._client_ca_file)
                try:
                    bundle = self._client_ca_file.read_bytes()
                except OSError as error:
                    raise ServingError(f"cannot read the client CA {source}: {error}") from None
            if bundle and bundle.strip():
                try:
                    context.load_verify_locations(cadata=bundle.decode("ascii", "replace"))
                except (ssl.SSLError, ValueError) as error:
                    raise ServingError(f"cannot load the client CA {source}: {error}") from None
        context.sni_callback = self._select_newest
        return context

    def _select_newest(
        self,
        connection: ssl.SSLObject | ssl.SSLSocket,
        server_name: str | None,
        initial: ssl.SSLContext,
    ) -> None:
        current = self._current
        if current is not None and current is not initial:
            connection.context = current
