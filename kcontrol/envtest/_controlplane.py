"""etcd plus kube-apiserver on loopback, started and stopped as one: :class:`ControlPlane`.

It writes a throw-away CA and serving certificate, service-account keys and a static token
file (:data:`USERS`) into a temp dir, starts etcd with ``--unsafe-no-fsync`` and
kube-apiserver with RBAC authorization on free ports (again on new ones when a port was taken
before the bind), waits until each answers, installs the CRDs it was given, and removes it
all on stop. Every process is managed without an event loop (:mod:`kcontrol.envtest._process`),
so a plane started in one loop can be stopped, or its apiserver restarted, from another.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import aiohttp
from kubernetes_asyncio import client, config

from kcontrol.client import ApiClient, ClientConfig, Object, StaticTokenAuth
from kcontrol.envtest._crds import CRDSource, install_crds, load_crds, uninstall_crds
from kcontrol.envtest._pki import Pki, write_pki
from kcontrol.envtest._process import (
    PORT_ATTEMPTS,
    ControlPlaneError,
    Process,
    find_binary,
    free_port,
    log_size,
    lost_port,
    tail,
)

__all__ = ["ADMIN", "USERS", "ControlPlane"]

ADMIN = "admin"
"""The administrator (group ``system:masters``): the user of :attr:`ControlPlane.kubeconfig_path`
and of :meth:`ControlPlane.token` by default."""
USERS: dict[str, tuple[str, ...]] = {
    ADMIN: ("system:masters",),
    "alice": (),
    "bob": (),
}
"""Users in the token file and their groups; every user also gets ``system:authenticated``."""


class ControlPlane:
    """etcd + kube-apiserver on free loopback ports; an async context manager.

    ``feature_gates`` turn kube-apiserver's feature gates on or off
    (``{"ShardedListAndWatch": True}``: shard selectors, v1.36 alpha).
    ``extra_apiserver_args`` are appended to kube-apiserver's command line (a later flag wins,
    e.g. ``["--min-request-timeout=5"]``). ``start_timeout`` bounds each component's start-up.
    ``crds`` (files, directories or dicts; see :mod:`kcontrol.envtest`) are read now and
    installed by :meth:`start`, each given ``crd_install_timeout`` seconds to be served.
    """

    def __init__(
        self,
        *,
        extra_apiserver_args: Sequence[str] = (),
        start_timeout: float = 90.0,
        crds: CRDSource | Iterable[CRDSource] = (),
        crd_install_timeout: float = 30.0,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        gates = ",".join(
            f"{k}={'true' if v else 'false'}" for k, v in (feature_gates or {}).items()
        )
        self.extra_apiserver_args = [
            *([f"--feature-gates={gates}"] if gates else []),
            *extra_apiserver_args,
        ]
        self.start_timeout = start_timeout
        self.crds: list[Object] = load_crds(crds)
        self.crd_install_timeout = crd_install_timeout
        self._dir: Path | None = None
        self._pki: Pki | None = None
        self._tokens: dict[str, str] = {}
        self._etcd: Process | None = None
        self._apiserver: Process | None = None
        self.etcd_port = 0
        self.port = 0

    # -- public surface -------------------------------------------------------------------

    @property
    def host(self) -> str:
        """The apiserver URL, ``https://127.0.0.1:<port>``."""
        return f"https://127.0.0.1:{self.port}"

    @property
    def directory(self) -> Path:
        """The temp dir holding certificates, tokens, kubeconfigs, data and logs."""
        if self._dir is None:
            raise ControlPlaneError("control plane is not started")
        return self._dir

    @property
    def ca_file(self) -> Path:
        """The CA certificate that signed the apiserver's serving certificate."""
        assert self._pki is not None, "control plane is not started"
        return self._pki.ca_cert

    @property
    def serving_cert_pair(self) -> tuple[Path, Path]:
        """The apiserver's serving certificate and key (valid for 127.0.0.1 and localhost);
        a test proxy can present them so clients need no extra trust."""
        assert self._pki is not None, "control plane is not started"
        return self._pki.serving_cert, self._pki.serving_key

    @property
    def kubeconfig_path(self) -> Path:
        """A kubeconfig file for the administrator."""
        return self.directory / "admin.kubeconfig"

    @property
    def apiserver_log(self) -> Path:
        return self.directory / "kube-apiserver.log"

    @property
    def etcd_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    def token(self, user: str = ADMIN) -> str:
        """The bearer token of a user from :data:`USERS`."""
        return self._tokens[user]

    def user_kubeconfig(self, user: str) -> Path:
        """A kubeconfig file authenticating as ``user`` (one of :data:`USERS`)."""
        path = self.directory / f"{user}.kubeconfig"
        if not path.exists():
            self._write_kubeconfig(path, user)
        return path

    def ssl_context(self) -> ssl.SSLContext:
        """An SSL context trusting the apiserver's CA."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    async def kube_configuration(self, user: str = ADMIN) -> Any:
        """A ready ``kubernetes_asyncio.client.Configuration`` for ``user``."""
        configuration = client.Configuration()
        await config.load_kube_config(
            config_file=str(self.user_kubeconfig(user)), client_configuration=configuration
        )
        return configuration

    @staticmethod
    def binary(name: str) -> Path:
        """Path of a control-plane binary (``kubectl``, ``kube-apiserver``, ``etcd``)."""
        return find_binary(name)

    def kubectl(self, *args: str, user: str = ADMIN, check: bool = True) -> str:
        """Run the built ``kubectl`` against this control plane; returns its stdout."""
        done = subprocess.run(
            [str(find_binary("kubectl")), "--kubeconfig", str(self.user_kubeconfig(user)), *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if check and done.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def start(self) -> None:
        """Create the temp dir and key material, start etcd, then kube-apiserver."""
        apiserver_bin = find_binary("kube-apiserver")
        etcd_bin = find_binary("etcd")
        self._dir = Path(tempfile.mkdtemp(prefix="kcontrol-envtest-"))
        try:
            self._pki = write_pki(self._dir, ["127.0.0.1", "localhost"])
            self._write_tokens()
            await self._start_etcd(etcd_bin)
            await self._start_first_apiserver(apiserver_bin)
            if self.crds:
                await self.install_crds(self.crds)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop both processes and remove the temp dir; safe to call twice."""
        for process in (self._apiserver, self._etcd):
            if process is not None:
                process.stop()
        self._apiserver = self._etcd = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    async def stop_apiserver(self) -> None:
        """Stop kube-apiserver (SIGTERM, then SIGKILL); etcd keeps running with the data."""
        assert self._apiserver is not None, "control plane is not started"
        await asyncio.to_thread(self._apiserver.stop)

    def kill_apiserver(self) -> None:
        """SIGKILL kube-apiserver at once (a crash, not a graceful stop)."""
        assert self._apiserver is not None, "control plane is not started"
        self._apiserver.signal(signal.SIGKILL)
        self._apiserver.stop()

    async def start_apiserver(self) -> None:
        """(Re)start kube-apiserver on the same port and wait until ``/readyz`` answers ok."""
        assert self._apiserver is not None, "control plane is not started"
        if not self._apiserver.running():
            self._apiserver.start()
        await self._wait_ready()

    async def restart_apiserver(self) -> None:
        """Stop and start kube-apiserver; the data in etcd survives."""
        await self.stop_apiserver()
        await self.start_apiserver()

    def admin_client(self) -> ApiClient:
        """A new unthrottled :class:`~kcontrol.client.ApiClient` for the administrator; the
        caller closes it (``async with``)."""
        config = ClientConfig(
            host=self.host, auth=StaticTokenAuth(self.token()), ca_file=str(self.ca_file)
        )
        return ApiClient(config, qps=0)

    async def install_crds(
        self, sources: CRDSource | Iterable[CRDSource], *, max_time: float | None = None
    ) -> list[Object]:
        """Create or update the CRDs of ``sources`` and wait until each is established and
        served (at most ``max_time`` seconds, default ``crd_install_timeout``); the CRDs as
        stored. :class:`ControlPlaneError` names a CRD that was not ready in time."""
        crds = load_crds(sources)
        async with self.admin_client() as client:
            try:
                return await install_crds(
                    client, crds, max_time=max_time or self.crd_install_timeout
                )
            except TimeoutError as error:
                raise ControlPlaneError(str(error)) from None

    async def uninstall_crds(
        self, sources: CRDSource | Iterable[CRDSource], *, max_time: float | None = None
    ) -> None:
        """Delete the CRDs of ``sources`` (with their custom resources) and wait until they
        are gone (at most ``max_time`` seconds, default ``crd_install_timeout``)."""
        crds = load_crds(sources)
        async with self.admin_client() as client:
            try:
                await uninstall_crds(client, crds, max_time=max_time or self.crd_install_timeout)
            except TimeoutError as error:
                raise ControlPlaneError(str(error)) from None

    # -- internals ------------------------------------------------------------------------

    def _write_tokens(self) -> None:
        lines = []
        for index, (user, groups) in enumerate(USERS.items()):
            token = os.urandom(16).hex()
            self._tokens[user] = token
            group_field = f',"{",".join(groups)}"' if groups else ""
            lines.append(f"{token},{user},uid-{index}{group_field}")
        (self.directory / "tokens.csv").write_text("\n".join(lines) + "\n")

    def _write_kubeconfig(self, path: Path, user: str) -> None:
        # JSON is valid YAML: kubectl and kubernetes_asyncio both read it.
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "envtest",
                    "cluster": {"server": self.host, "certificate-authority": str(self.ca_file)},
                }
            ],
            "users": [{"name": user, "user": {"token": self._tokens[user]}}],
            "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": user}}],
            "current-context": "envtest",
        }
        path.write_text(json.dumps(kubeconfig, indent=2))
        path.chmod(0o600)

    def _etcd_process(self, binary: Path) -> Process:
        peer = f"http://127.0.0.1:{free_port()}"
        client = self.etcd_endpoint
        argv = [
            str(binary),
            "--name=envtest",
            f"--data-dir={self.directory / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=envtest={peer}",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ]
        return Process("etcd", argv, self.directory / "etcd.log")

    def _apiserver_process(self, binary: Path) -> Process:
        assert self._pki is not None
        argv = [
            str(binary),
            f"--etcd-servers={self.etcd_endpoint}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={self.directory / 'certs'}",
            f"--tls-cert-file={self._pki.serving_cert}",
            f"--tls-private-key-file={self._pki.serving_key}",
            f"--client-ca-file={self._pki.ca_cert}",
            f"--service-account-key-file={self._pki.service_account_pub}",
            f"--service-account-signing-key-file={self._pki.service_account_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--token-auth-file={self.directory / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--allow-privileged=true",
            *self._admission_args(),
            *self.extra_apiserver_args,
        ]
        return Process("kube-apiserver", argv, self.apiserver_log)

    def _admission_args(self) -> list[str]:
        # No controller manager runs here, so no namespace has a default ServiceAccount, which
        # the ServiceAccount admission plugin would require of every pod.
        return ["--disable-admission-plugins=ServiceAccount"]

    async def _start_etcd(self, binary: Path) -> None:
        """Start etcd on free ports; again on new ones (a fresh data dir) if a port was taken
        before etcd bound it."""
        for attempt in range(PORT_ATTEMPTS):
            self.etcd_port = free_port()
            self._etcd = self._etcd_process(binary)
            offset = log_size(self._etcd.log)
            self._etcd.start()
            try:
                await self._wait_etcd()
                return
            except ControlPlaneError:
                self._etcd.stop()
                if attempt + 1 == PORT_ATTEMPTS or not lost_port(self._etcd.log, offset):
                    raise
                shutil.rmtree(self.directory / "etcd", ignore_errors=True)

    async def _start_first_apiserver(self, binary: Path) -> None:
        """Start kube-apiserver on a free port (written to the admin kubeconfig); again on
        a new one if the port was taken before the apiserver bound it."""
        for attempt in range(PORT_ATTEMPTS):
            self.port = free_port()
            self._write_kubeconfig(self.kubeconfig_path, ADMIN)
            self._apiserver = self._apiserver_process(binary)
            offset = log_size(self.apiserver_log)
            try:
                await self.start_apiserver()
                return
            except ControlPlaneError:
                self._apiserver.stop()
                if attempt + 1 == PORT_ATTEMPTS or not lost_port(self.apiserver_log, offset):
                    raise

    async def _wait_etcd(self) -> None:
        assert self._etcd is not None
        deadline = time.monotonic() + self.start_timeout
        async with aiohttp.ClientSession() as session:
            while time.monotonic() < deadline:
                if not self._etcd.running():
                    break
                try:
                    async with session.get(f"{self.etcd_endpoint}/health") as response:
                        if response.status == 200 and b'"true"' in await response.read():
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
        raise ControlPlaneError(f"etcd did not become healthy:\n{tail(self._etcd.log)}")

    async def _wait_ready(self) -> None:
        assert self._apiserver is not None
        deadline = time.monotonic() + self.start_timeout
        headers = {"Authorization": f"Bearer {self.token()}"}
        last = "no answer"
        connector = aiohttp.TCPConnector(ssl=self.ssl_context())
        async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
            while time.monotonic() < deadline:
                if not self._apiserver.running():
                    last = "kube-apiserver exited"
                    break
                try:
                    async with session.get(f"{self.host}/readyz") as response:
                        if response.status == 200:
                            return
                        last = f"/readyz {response.status}: {(await response.text())[-500:]}"
                except aiohttp.ClientError as error:
                    last = str(error)
                await asyncio.sleep(0.2)
        raise ControlPlaneError(
            f"kube-apiserver not ready ({last}); log tail:\n{tail(self.apiserver_log)}"
        )
