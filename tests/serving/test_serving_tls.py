"""The secure port's TLS: a self-signed pair in --cert-dir (kept across restarts, replaced
when broken), a certificate rotated on disk - as a Secret volume rotates it, or written in
place - served to new connections without a restart, a half-written pair never; no TLS
session resumed past a replaced client CA (TLS 1.2 and 1.3); --tls-min-version and
--tls-cipher-suites as kube-controller-manager reads them; client renegotiation refused."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import ssl
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from prometheus_client import CollectorRegistry

from kcontrol.client import load_config
from kcontrol.envtest import ControlPlane
from kcontrol.errors import ServingError
from kcontrol.serving import HealthServer, SecureServer, ServingOptions
from kcontrol.serving._tls import ServingTLS, ensure_self_signed
from tests.serving.secure_helpers import (
    ClientCA,
    https_get,
    insecure_client,
    listening,
    read_response,
    request_bytes,
    sync_get,
    whoami_app,
)

TLS12, TLS13 = ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3
VERSIONS = pytest.mark.parametrize("version", [TLS12, TLS13], ids=["tls1.2", "tls1.3"])


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
    plane: ControlPlane, cert_file: Path, key_file: Path, **options_: Any
) -> AsyncIterator[SecureServer]:
    options = ServingOptions(
        bind_address="127.0.0.1",
        tls_cert_file=str(cert_file),
        tls_private_key_file=str(key_file),
        authentication_skip_lookup=True,
        **options_,
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


# -- sessions and client CAs -------------------------------------------------------------------


def client_context(
    server_cert: Path, client: tuple[Path, Path], version: ssl.TLSVersion
) -> ssl.SSLContext:
    """A client presenting ``client``'s certificate, trusting ``server_cert``, on TLS
    ``version`` only. One context for every connection: Python resumes sessions only
    through the context that made them."""
    context = ssl.create_default_context(cafile=str(server_cert))
    context.load_cert_chain(*client)
    context.minimum_version = context.maximum_version = version
    return context


def replace_file(path: Path, source: Path) -> None:
    """Replace ``path`` with a copy of ``source`` in one rename (a new inode)."""
    staging = path.with_name(path.name + ".new")
    shutil.copy(source, staging)
    os.replace(staging, path)


async def resumed_answer(
    port: int, path: str, context: ssl.SSLContext, session: ssl.SSLSession | None
) -> tuple[int, str] | None:
    """The answer to ``path`` on a new connection offering ``session``; None when the
    handshake or the request failed (the client certificate was refused)."""
    try:
        status, body, _, _ = await asyncio.to_thread(sync_get, port, path, context, session)
    except (ssl.SSLError, OSError):
        return None
    return status, body


@VERSIONS
async def test_a_replaced_client_ca_never_authenticates_a_resumed_session(
    version: ssl.TLSVersion, tmp_path: Path
) -> None:
    cert, key = ensure_self_signed(tmp_path / "serving", ["127.0.0.1"])
    old_ca, new_ca = ClientCA(tmp_path / "old-ca"), ClientCA(tmp_path / "new-ca")
    ca_file = tmp_path / "client-ca.crt"
    replace_file(ca_file, old_ca.cert_file)
    tls = ServingTLS(cert, key, client_ca_file=ca_file)
    tls.load()
    bob = client_context(cert, old_ca.issue("bob"), version)
    async with listening(whoami_app(), tls=tls) as listener:
        status, body, session, _ = await asyncio.to_thread(sync_get, listener.port, "/whoami", bob)
        assert (status, body) == (200, "bob")
        assert await resumed_answer(listener.port, "/whoami", bob, session) == (200, "bob")

        replace_file(ca_file, new_ca.cert_file)  # the old CA is removed
        assert tls.reload_if_changed()
        assert await resumed_answer(listener.port, "/whoami", bob, None) is None, (
            "a new handshake with the old CA's certificate fails"
        )
        answer = await resumed_answer(listener.port, "/whoami", bob, session)
        assert answer is None or answer[1] != "bob", "the old session authenticated bob"


@VERSIONS
async def test_no_session_tickets_are_issued(version: ssl.TLSVersion, tmp_path: Path) -> None:
    cert, key = ensure_self_signed(tmp_path / "serving", ["127.0.0.1"])
    tls = ServingTLS(cert, key)
    tls.load()
    assert tls.context.options & ssl.OP_NO_TICKET
    assert tls.context.num_tickets == 0
    context = insecure_client(version=version)
    async with listening(whoami_app(), tls=tls) as listener:
        _, _, session, _ = await asyncio.to_thread(sync_get, listener.port, "/healthz", context)
    assert session is None or not session.has_ticket


@pytest.mark.slow
@VERSIONS
async def test_the_secure_port_refuses_a_resumed_session_after_its_client_ca_changed(
    version: ssl.TLSVersion, control_plane: ControlPlane, tmp_path: Path
) -> None:
    cert, key = ensure_self_signed(tmp_path / "serving", ["127.0.0.1"])
    old_ca, new_ca = ClientCA(tmp_path / "old-ca"), ClientCA(tmp_path / "new-ca")
    ca_file = tmp_path / "client-ca.crt"
    replace_file(ca_file, old_ca.cert_file)
    admin = client_context(cert, old_ca.issue("kcontrol-admin", ("system:masters",)), version)
    async with secure_server(control_plane, cert, key, client_ca_file=str(ca_file)) as server:
        status, _, session, _ = await asyncio.to_thread(sync_get, server.port, "/metrics", admin)
        assert status == 200

        replace_file(ca_file, new_ca.cert_file)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while await resumed_answer(server.port, "/metrics", admin, None) is not None:
            assert loop.time() < deadline, "the new client CA was not loaded in time"
            await asyncio.sleep(0.1)
        answer = await resumed_answer(server.port, "/metrics", admin, session)
        assert answer is None or answer[0] == 401, answer


# -- versions, cipher suites, renegotiation ------------------------------------------------------


async def handshake(port: int, context: ssl.SSLContext) -> tuple[str, str] | None:
    """The TLS version and cipher of a new connection that got ``/healthz`` answered; None
    when the handshake failed."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    except (ssl.SSLError, OSError):
        return None
    try:
        writer.write(request_bytes("/healthz"))
        await writer.drain()
        assert await read_response(reader) == (200, b"ok")
        ssl_object = writer.get_extra_info("ssl_object")
        cipher, tls_version, _ = ssl_object.cipher()
        return tls_version, cipher
    finally:
        writer.close()


@pytest.fixture
def serving_pair(tmp_path: Path) -> tuple[Path, Path]:
    return ensure_self_signed(tmp_path / "serving", ["127.0.0.1"])


@pytest.mark.parametrize(
    ("min_version", "tls12_served"),
    [("VersionTLS12", True), ("VersionTLS13", False)],
)
async def test_tls_min_version(
    min_version: str, tls12_served: bool, serving_pair: tuple[Path, Path]
) -> None:
    tls = ServingTLS(*serving_pair, min_version=min_version)
    tls.load()
    async with listening(whoami_app(), tls=tls) as listener:
        tls12 = await handshake(listener.port, insecure_client(version=TLS12))
        tls13 = await handshake(listener.port, insecure_client(version=TLS13))
    assert (tls12 is not None) == tls12_served
    assert tls13 is not None and tls13[0] == "TLSv1.3"


def test_the_default_min_version_is_tls12(serving_pair: tuple[Path, Path]) -> None:
    tls = ServingTLS(*serving_pair)
    tls.load()
    assert tls.context.minimum_version == TLS12


async def test_tls_cipher_suites_restrict_tls12_only(serving_pair: tuple[Path, Path]) -> None:
    tls = ServingTLS(
        *serving_pair,
        cipher_suites=["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"],
    )
    tls.load()
    async with listening(whoami_app(), tls=tls) as listener:
        offered_all = await handshake(listener.port, insecure_client(version=TLS12))
        other_only = await handshake(
            listener.port,
            insecure_client(version=TLS12, ciphers="ECDHE-ECDSA-AES256-GCM-SHA384"),
        )
        tls13 = await handshake(listener.port, insecure_client(version=TLS13))
    assert offered_all == ("TLSv1.2", "ECDHE-ECDSA-AES128-GCM-SHA256")
    assert other_only is None, "a suite not in --tls-cipher-suites is refused"
    assert tls13 is not None, "TLS 1.3's suites are not configurable (as in Go)"


async def test_tls13_suites_alone_leave_no_tls12(serving_pair: tuple[Path, Path]) -> None:
    tls = ServingTLS(*serving_pair, cipher_suites=["TLS_AES_128_GCM_SHA256"])
    tls.load()
    async with listening(whoami_app(), tls=tls) as listener:
        assert await handshake(listener.port, insecure_client(version=TLS12)) is None
        assert await handshake(listener.port, insecure_client(version=TLS13)) is not None


def test_cipher_suites_openssl_lacks_are_a_serving_error(serving_pair: tuple[Path, Path]) -> None:
    with pytest.raises(ServingError, match="none of the --tls-cipher-suites"):
        ServingTLS(
            *serving_pair,
            cipher_suites=["TLS_RSA_WITH_RC4_128_SHA", "TLS_RSA_WITH_3DES_EDE_CBC_SHA"],
        ).load()
    with pytest.raises(ValueError, match="TLS_NOPE"):
        ServingTLS(*serving_pair, cipher_suites=["TLS_NOPE"])


# OpenSSL 3 refuses client renegotiation unless SSL_OP_ALLOW_CLIENT_RENEGOTIATION is set;
# OpenSSL 1.1.1 allowed it. The test sets that option to show the refusal does not rest on
# the library's default.
_ALLOW_CLIENT_RENEGOTIATION = 1 << 8


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_client_initiated_renegotiation_is_refused(serving_pair: tuple[Path, Path]) -> None:
    tls = ServingTLS(*serving_pair)
    tls.load()
    assert tls.context.options & ssl.OP_NO_RENEGOTIATION
    tls.context.options |= _ALLOW_CLIENT_RENEGOTIATION
    async with listening(whoami_app(), tls=tls) as listener:
        client = await asyncio.create_subprocess_exec(
            "openssl",
            "s_client",
            "-tls1_2",
            "-connect",
            f"127.0.0.1:{listener.port}",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        assert client.stdin is not None and client.stdout is not None
        output = b""
        try:
            client.stdin.write(b"R\n")  # s_client's command: renegotiate
            await client.stdin.drain()
            async with asyncio.timeout(30):
                while b"RENEGOTIATING" not in output:
                    line = await client.stdout.readline()
                    assert line, output.decode(errors="replace")
                    output += line
            await asyncio.sleep(0.5)  # let a renegotiation, if accepted, complete
            with contextlib.suppress(ConnectionError):
                client.stdin.write(request_bytes("/healthz", close=True))
                await client.stdin.drain()
                client.stdin.close()
            async with asyncio.timeout(30):
                output += await client.stdout.read()
        finally:
            if client.returncode is None:
                client.kill()
            await client.wait()
    text = output.decode(errors="replace")
    assert "no renegotiation" in text, text
    assert "200 OK" not in text, text
