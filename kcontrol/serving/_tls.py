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
them; :attr:`ServingTLS.context` is the newest, and the listener handshakes each new
connection with the context current when it is accepted. A pair that does not load (a
certificate written before its key) is logged and the previous context kept until the next
poll sees files that do.

Client certificates are requested (``CERT_OPTIONAL``: presenting one is optional, but one that
does not verify against the CA fails the handshake) when there is a client CA source: the
``--client-ca-file`` (reloaded like the serving pair) or the bundle the cluster publishes,
handed in with :meth:`ServingTLS.set_client_ca` as it is looked up and refreshed.

No TLS session outlives the client CA it was verified against: a resumed session is not
verified again, so a certificate of a removed CA would keep authenticating for the session's
lifetime. Session tickets are off (TLS 1.2 and 1.3: none are issued), and a TLS 1.2 session
cached by one context cannot be resumed through another: a changed CA (or certificate) means a
new context, with an empty session cache. Python cannot turn that cache off; it only ever
holds sessions verified against the context's own CA.

Like kube-controller-manager: ``--tls-min-version`` (default ``VersionTLS12``), and
``--tls-cipher-suites`` in Go's (IANA) names, mapped to OpenSSL's; they restrict TLS 1.2 and
below only, since TLS 1.3 suites are not configurable in Go either (TLS 1.3 names are accepted
and change nothing). Client-initiated renegotiation is refused (Go's server never accepts
one).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from kcontrol.clock import Clock, RealClock
from kcontrol.errors import ServingError
from kcontrol.logging import get_logger

__all__ = [
    "CERT_RELOAD_INTERVAL",
    "CIPHER_SUITES",
    "DEFAULT_TLS_MIN_VERSION",
    "INSECURE_CIPHER_SUITES",
    "PAIR_NAME",
    "TLS_VERSIONS",
    "ServingTLS",
    "ensure_self_signed",
]

_log = get_logger(__name__)

PAIR_NAME = "kcontrol-manager"
"""File names of a pair in ``--cert-dir`` (kube-controller-manager's is its own name too)."""

CERT_RELOAD_INTERVAL = 10.0
"""Seconds between two checks of the certificate files for changes."""

_SELF_SIGNED_VALIDITY = datetime.timedelta(days=365)

TLS_VERSIONS: Mapping[str, ssl.TLSVersion] = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}
"""``--tls-min-version``'s values, as kube-controller-manager names them. OpenSSL 3 refuses
TLS 1.0 and 1.1 at its default security level whatever the minimum."""

DEFAULT_TLS_MIN_VERSION = "VersionTLS12"
"""``--tls-min-version``'s default: TLS 1.2, as kube-controller-manager's."""

CIPHER_SUITES: Mapping[str, str | None] = {
    # Go's tls.CipherSuites(), and the two legacy names component-base keeps.
    "TLS_AES_128_GCM_SHA256": None,  # TLS 1.3: not configurable
    "TLS_AES_256_GCM_SHA384": None,
    "TLS_CHACHA20_POLY1305_SHA256": None,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    # Go's tls.InsecureCipherSuites(); OpenSSL 3 no longer has RC4 and 3DES.
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
}
"""``--tls-cipher-suites``'s values (kube-controller-manager's: Go's names, which are the
IANA ones) and the OpenSSL name of each; ``None`` for the TLS 1.3 suites."""

INSECURE_CIPHER_SUITES = frozenset(
    {
        "TLS_RSA_WITH_RC4_128_SHA",
        "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
        "TLS_RSA_WITH_AES_128_CBC_SHA256",
        "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
        "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
        "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    }
)
"""The suites kube-controller-manager's help lists as insecure values."""

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
    cert_pem, key_pem = _self_signed_pair(hosts)
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_atomically(key_file, key_pem, mode=0o600)
        _write_atomically(cert_file, cert_pem, mode=0o644)
    except OSError as error:
        raise ServingError(
            f"cannot write a self-signed certificate to {directory}: {error}"
        ) from None
    _log.info("generated a self-signed serving certificate", cert=str(cert_file), key=str(key_file))
    return cert_file, key_file


def _self_signed_pair(hosts: Sequence[str]) -> tuple[bytes, bytes]:
    """A new self-signed ECDSA P-256 serving certificate for ``hosts`` and its key (PKCS#8),
    both PEM.

    cryptography is imported here, not with the module: only a secure port without a given
    certificate needs it, and importing it costs every other start of the process.
    """
    from cryptography import x509  # noqa: PLC0415
    from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # noqa: PLC0415

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
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


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
    without it (the CA then comes from :meth:`set_client_ca`). ``min_version`` (a
    :data:`TLS_VERSIONS` name) and ``cipher_suites`` (:data:`CIPHER_SUITES` names; empty:
    OpenSSL's defaults) as the flags (module docstring). Call :meth:`load` once, handshake
    each connection with :attr:`context`, and keep :meth:`run` running to pick up changed
    files.
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
        min_version: str = DEFAULT_TLS_MIN_VERSION,
        cipher_suites: Sequence[str] = (),
    ) -> None:
        try:
            self._min_version = TLS_VERSIONS[min_version]
            self._ciphers = [CIPHER_SUITES[name] for name in cipher_suites]
        except KeyError as error:
            raise ValueError(f"unknown TLS version or cipher suite {error}") from None
        self._cert_file = cert_file
        self._key_file = key_file
        self._client_ca_file = client_ca_file
        self._verify = request_client_certificates or client_ca_file is not None
        self._reload_interval = reload_interval
        self._clock: Clock = clock if clock is not None else RealClock()
        self._client_ca: bytes | None = None  # from set_client_ca, when no file is given
        self._states: tuple[_FileState, ...] = ()
        self._current: ssl.SSLContext | None = None  # the newest context

    @property
    def context(self) -> ssl.SSLContext:
        """The context to handshake a new connection with (the newest); valid once
        :meth:`load` returned."""
        if self._current is None:
            raise RuntimeError("ServingTLS.load() was not called")
        return self._current

    def load(self) -> None:
        """Build the first context; raises :class:`~kcontrol.errors.ServingError` naming the
        file that does not load."""
        self._states = self._file_states()
        self._current = self._build()

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
        # No resumption across client CAs (module docstring); no client renegotiation.
        context.options |= ssl.OP_NO_TICKET | ssl.OP_NO_RENEGOTIATION
        context.num_tickets = 0
        with warnings.catch_warnings():  # Python deprecates TLS 1.0 and 1.1; the flag asks
            warnings.simplefilter("ignore", DeprecationWarning)
            context.minimum_version = self._min_version
        if self._ciphers:
            openssl_names = [name for name in self._ciphers if name is not None]
            if not openssl_names:  # TLS 1.3 suites only: no TLS 1.2 handshake can succeed
                context.minimum_version = ssl.TLSVersion.TLSv1_3
            else:
                try:
                    context.set_ciphers(":".join(openssl_names))
                except ssl.SSLError:
                    raise ServingError(
                        "none of the --tls-cipher-suites is available in this OpenSSL build"
                    ) from None
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
        return context
