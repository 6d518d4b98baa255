"""The secure port's certificates: a self-signed pair in --cert-dir (kept across restarts,
replaced when broken), and a certificate rotated on disk - as a Secret volume rotates it, or
written in place - served to new connections without a restart, a half-written pair never."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import ssl
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from prometheus_client import CollectorRegistry

from kcontrol.client import load_config
from kcontrol.errors import ServingError
from kcontrol.manager import HealthServer, ManagerOptions
from kcontrol.manager._serving import SecureServer
from kcontrol.manager._tls import ServingTLS, ensure_self_signed
from kcontrol.testing.envtest import ControlPlane
from tests.manager.secure_helpers import https_get


def test_a_self_signed_pair_is_written_once_and_kept(tmp_path: Path) -> None:
    cert_file, key_file = ensure_self_signed(tmp_path / "certs", ["localhost", "10.1.2.3"])
    assert (cert_file.name, key_file.name) == ("kcontrol-manager.crt", "kcontrol-manager.key")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["10.1.2.3"]
    first = cert_file.read_bytes()
    ensure_self_signed(tmp_path / "certs", ["localhost"])
    assert cert_file.read_bytes() == first, "a pair that loads is kept (a restart reuses it)"
    key_file.write_text("broken")
    ensure_self_signed(tmp_path / "certs", ["localhost"])
    assert cert_file.read_bytes() != first, "a broken pair is replaced"
    ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert_file, key_file)


def test_files_that_do_not_load_are_a_serving_error(tmp_path: Path) -> None:
    cert_file, key_file = ensure_self_signed(tmp_path / "a", ["localhost"])
    other_cert, _ = ensure_self_signed(tmp_path / "b", ["localhost"])
    with pytest.raises(ServingError, match="cannot load the serving certificate"):
        ServingTLS(other_cert, key_file).load()
    with pytest.raises(ServingError, match=r"missing\.crt"):
        ServingTLS(tmp_path / "missing.crt", key_file).load()
    junk = tmp_path / "junk-ca.crt"
    junk.write_text("not a certificate")
    with pytest.raises(ServingError, match="cannot load the client CA"):
        ServingTLS(cert_file, key_file, client_ca_file=junk).load()


class SecretVolume:
    """A directory laid out as kubelet's atomic writer lays out a Secret volume:
    ``tls.crt -> ..data/tls.crt``, ``..data -> ..<version>``; :meth:`publish` swaps
    ``..data`` in one rename."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir()
        self.versions = 0
        for name in ("tls.crt", "tls.key"):
            (root / name).symlink_to(Path("..data") / name)

    def publish(self, cert_file: Path, key_file: Path) -> None:
        self.versions += 1
        version = self.root / f"..version-{self.versions}"
        version.mkdir()
        shutil.copy(cert_file, version / "tls.crt")
        shutil.copy(key_file, version / "tls.key")
        staging = self.root / "..data_tmp"
        staging.symlink_to(version.name)
        os.replace(staging, self.root / "..data")

    @property
    def cert_file(self) -> Path:
        return self.root / "tls.crt"

    @property
    def key_file(self) -> Path:
        return self.root / "tls.key"


async def served_certificate(port: int) -> bytes:
    """The DER certificate a new TLS connection to ``port`` is served."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
        with contextlib.suppress(ssl.SSLError, ConnectionError):
            await writer.wait_closed()
    assert isinstance(der, bytes)
    return der


def der_of(cert_file: Path) -> bytes:
    return x509.load_pem_x509_certificate(cert_file.read_bytes()).public_bytes(Encoding.DER)


@contextlib.asynccontextmanager
async def secure_server(
    plane: ControlPlane, cert_file: Path, key_file: Path
) -> AsyncIterator[SecureServer]:
    options = ManagerOptions(
        kubeconfig=str(plane.kubeconfig_path),
        bind_address="127.0.0.1",
        tls_cert_file=str(cert_file),
        tls_private_key_file=str(key_file),
        authentication_skip_lookup=True,
    )
    registry = CollectorRegistry()
    server = SecureServer(
        HealthServer(registry=registry), options, registry=registry, cert_reload_interval=0.1
    )
    config = await load_config(kubeconfig=str(plane.kubeconfig_path))
    task = asyncio.create_task(server.run(config, port=0))
    try:
        await asyncio.wait_for(server.wait_started(), 30)
        yield server
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def eventually_served(port: int, expected: bytes, within: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while (served := await served_certificate(port)) != expected:
        assert loop.time() < deadline, "the new certificate was not served in time"
        await asyncio.sleep(0.1)
    assert served == expected


@pytest.mark.slow
async def test_a_certificate_rotated_on_disk_is_served_without_a_restart(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    pairs = [ensure_self_signed(tmp_path / f"pair-{n}", ["127.0.0.1"]) for n in range(3)]
    volume = SecretVolume(tmp_path / "volume")
    volume.publish(*pairs[0])
    async with secure_server(control_plane, volume.cert_file, volume.key_file) as server:
        port = server.port
        assert await served_certificate(port) == der_of(pairs[0][0])

        # cert-manager renews: kubelet swaps the Secret volume's ..data symlink.
        volume.publish(*pairs[1])
        await eventually_served(port, der_of(pairs[1][0]))
        answer = await https_get(
            port, "/healthz", context=ssl.create_default_context(cafile=str(pairs[1][0]))
        )
        assert (answer.status, answer.body) == (200, "ok"), "served, and verifiable"

        # Files rewritten in place, certificate first: the half-written pair (new
        # certificate, old key) is never served; the complete one is.
        data = volume.root / "..data"
        shutil.copy(pairs[2][0], data / "tls.crt")
        for _ in range(5):  # several reload intervals
            await asyncio.sleep(0.1)
            assert await served_certificate(port) == der_of(pairs[1][0])
        shutil.copy(pairs[2][1], data / "tls.key")
        await eventually_served(port, der_of(pairs[2][0]))
