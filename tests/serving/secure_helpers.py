"""Helpers of the secure-port tests: kcontrol-manager as a process serving HTTPS, HTTPS
requests with a bearer token or a client certificate, service-account tokens signed by hand,
RBAC for /metrics, a small CA for client certificates, and an application served by
kcontrol's listener alone (no API server) with raw HTTP over its connections."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import json
import signal
import socket
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kcontrol.envtest import ControlPlane
from kcontrol.serving._http import App, Request, Response
from kcontrol.serving._listener import ConnectionLimits, Listener, serve_app
from kcontrol.serving._tls import ServingTLS
from tests.processes import LoggedProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
METRICS_READER = "kcontrol:metrics-reader"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"


@dataclass
class Answer:
    status: int
    body: str
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.body)


def trusting(cert_file: Path, client: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    """A client context that trusts ``cert_file`` (the manager's self-signed certificate)."""
    context = ssl.create_default_context(cafile=str(cert_file))
    if client is not None:
        context.load_cert_chain(*client)
    return context


async def https_get(
    port: int,
    path: str,
    *,
    context: ssl.SSLContext,
    token: str | None = None,
    session: aiohttp.ClientSession | None = None,
    host: str = "127.0.0.1",
) -> Answer:
    """GET ``https://<host>:<port><path>``, with ``Authorization: Bearer <token>``."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    url = f"https://{host}:{port}{path}"
    if session is not None:
        async with session.get(url, headers=headers, ssl=context) as response:
            return Answer(response.status, await response.text(), dict(response.headers))
    timeout = aiohttp.ClientTimeout(total=30)
    async with (
        aiohttp.ClientSession(timeout=timeout) as own,
        own.get(url, headers=headers, ssl=context) as response,
    ):
        return Answer(response.status, await response.text(), dict(response.headers))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def service_account_token(
    key: rsa.RSAPrivateKey,
    namespace: str,
    name: str,
    uid: str,
    *,
    expires_in: float,
) -> str:
    """A bound service-account token (RS256 JWT) as kube-apiserver issues them, signed with
    ``key``; ``expires_in`` may be negative (already expired)."""
    now = int(time.time())
    claims = {
        "aud": [SERVICE_ACCOUNT_ISSUER],
        "exp": now + int(expires_in),
        "iat": now - 3600,
        "nbf": now - 3600,
        "iss": SERVICE_ACCOUNT_ISSUER,
        "jti": str(uuid.uuid4()),
        "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
        "sub": f"system:serviceaccount:{namespace}:{name}",
    }
    header = {"alg": "RS256", "typ": "JWT"}
    signing_input = ".".join(
        b64url(json.dumps(part, separators=(",", ":")).encode()) for part in (header, claims)
    )
    signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{b64url(signature)}"


def cluster_signing_key(plane: ControlPlane) -> rsa.RSAPrivateKey:
    """The control plane's service-account signing key (envtest writes it as ``sa.key``)."""
    key = serialization.load_pem_private_key((plane.directory / "sa.key").read_bytes(), None)
    assert isinstance(key, rsa.RSAPrivateKey)
    return key


def metrics_reader_role() -> dict[str, Any]:
    """deploy/'s ClusterRole for scrapers."""
    for document in yaml.safe_load_all((DEPLOY / "rbac.yaml").read_text()):
        kind, name = (document["kind"], document["metadata"]["name"]) if document else ("", "")
        if (kind, name) == ("ClusterRole", METRICS_READER):
            return dict(document)
    raise AssertionError(f"ClusterRole {METRICS_READER} not in deploy/rbac.yaml")


def apply(plane: ControlPlane, *documents: dict[str, Any]) -> None:
    text = "\n---\n".join(yaml.safe_dump(d) for d in documents)
    done = subprocess.run(
        [
            str(plane.binary("kubectl")),
            "--kubeconfig",
            str(plane.kubeconfig_path),
            "apply",
            "-f",
            "-",
        ],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def binding(name: str, role: str, subjects: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    }


class ClientCA:
    """A CA for client certificates, written to ``directory``."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"test-ca-{directory.name}")])
        now = datetime.datetime.now(datetime.UTC)
        self.name = name
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self.cert_file = directory / "ca.crt"
        self.cert_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, common_name: str, organizations: tuple[str, ...] = ()) -> tuple[Path, Path]:
        """A client certificate and key for ``common_name`` (groups: ``organizations``)."""
        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
        attributes += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attributes))
            .issuer_name(self.name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        cert_file = self.directory / f"{common_name}.crt"
        key_file = self.directory / f"{common_name}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return cert_file, key_file


class SecureManager(LoggedProcess):
    """``kcontrol-manager`` (no controllers, no leader election) serving HTTPS on a free port
    with its self-signed certificate in ``directory/certs``, logging JSON at ``-v=10`` (every
    line of every library) to ``directory/manager.log``."""

    def __init__(self, plane: ControlPlane, directory: Path, *extra: str) -> None:
        self.port = free_port()
        directory.mkdir(parents=True, exist_ok=True)
        self.cert_dir = directory / "certs"
        super().__init__(
            [
                str(Path(sys.executable).with_name("kcontrol-manager")),
                f"--kubeconfig={plane.kubeconfig_path}",
                "--controllers=",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--cert-dir={self.cert_dir}",
                "--log-format=json",
                "-v=10",
                *extra,
            ],
            directory / f"manager-{self.port}.log",
        )

    @property
    def cert_file(self) -> Path:
        return self.cert_dir / "kcontrol-manager.crt"

    def context(self, client: tuple[Path, Path] | None = None) -> ssl.SSLContext:
        return trusting(self.cert_file, client)

    async def wait_ready(self, within: float = 60.0) -> None:
        """Until ``/readyz`` answers 200 over HTTPS (without credentials)."""
        deadline = time.monotonic() + within
        last = "no answer"
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise AssertionError(
                    f"kcontrol-manager exited {self.popen.returncode}:\n{self.log()}"
                )
            if self.cert_file.exists():
                try:
                    answer = await https_get(self.port, "/readyz", context=self.context())
                    if answer.status == 200:
                        return
                    last = f"{answer.status} {answer.body}"
                except (aiohttp.ClientError, ssl.SSLError, OSError) as error:
                    last = str(error)
            await asyncio.sleep(0.2)
        raise AssertionError(f"kcontrol-manager not ready ({last}):\n{self.log()[-3000:]}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited within 30 s."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(30)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)


# -- kcontrol's listener alone ----------------------------------------------------------------


@contextlib.asynccontextmanager
async def listening(
    app: App,
    *,
    tls: ServingTLS | None = None,
    limits: ConnectionLimits | None = None,
) -> AsyncIterator[Listener]:
    """``app`` served on a free port of 127.0.0.1 by the secure port's listener (over TLS
    with ``tls``'s newest context), accepting connections until the block ends."""
    context: Callable[[], ssl.SSLContext] | None = None
    if tls is not None:
        serving = tls

        def newest() -> ssl.SSLContext:
            return serving.context

        context = newest
    async with serve_app(
        app, "127.0.0.1", 0, ssl_context=context, limits=limits, shutdown_timeout=0.5
    ) as listener:
        task = asyncio.create_task(listener.serve())
        try:
            yield listener
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def whoami_app() -> App:
    """``/healthz`` (``ok``) and ``/whoami``: the common name of the client certificate the
    TLS layer verified for this connection (``anonymous`` without one)."""

    async def healthz(request: Request) -> Response:
        return Response.text("ok")

    async def whoami(request: Request) -> Response:
        for rdn in (request.peer_certificate or {}).get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    return Response.text(value)
        return Response.text("anonymous")

    app = App()
    app.add("/healthz", healthz)
    app.add("/whoami", whoami)
    return app


def insecure_client(
    *,
    version: ssl.TLSVersion | None = None,
    ciphers: str | None = None,
) -> ssl.SSLContext:
    """A client context that trusts any server certificate, limited to TLS ``version`` and
    the OpenSSL ``ciphers`` when given."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if version is not None:
        context.minimum_version = context.maximum_version = version
    if ciphers is not None:
        context.set_ciphers(ciphers)
    return context


def request_bytes(path: str, *extra_headers: str, close: bool = False) -> bytes:
    headers = ["Host: localhost", *extra_headers]
    if close:
        headers.append("Connection: close")
    return (f"GET {path} HTTP/1.1\r\n" + "".join(h + "\r\n" for h in headers) + "\r\n").encode()


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """The status and body of one HTTP/1.1 response (with a Content-Length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    return status, await reader.readexactly(length)


async def closed_by_server(reader: asyncio.StreamReader, within: float) -> bool:
    """True once the server closed the connection (end of stream or reset), reading and
    dropping whatever it still sends; False if it is still open after ``within`` seconds."""
    try:
        async with asyncio.timeout(within):
            while await reader.read(65536):
                pass
    except TimeoutError:
        return False
    except (ConnectionError, ssl.SSLError):
        return True
    return True


def sync_get(
    port: int,
    path: str,
    context: ssl.SSLContext,
    session: ssl.SSLSession | None = None,
) -> tuple[int, str, ssl.SSLSession | None, bool]:
    """GET ``path`` over a new TLS connection with the blocking ``ssl`` module (offering
    ``session`` for resumption): status, body, the connection's session, and whether it was
    resumed. Run it in a thread."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1", session=session) as tls,
    ):
        tls.sendall(request_bytes(path, close=True))
        data = b""
        while chunk := tls.recv(65536):
            data += chunk
        if not data:
            raise ConnectionError("closed without an answer")
        head, _, body = data.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        return status, body.decode(), tls.session, tls.session_reused
