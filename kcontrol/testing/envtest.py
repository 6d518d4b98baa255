"""A real Kubernetes control plane for tests: etcd plus kube-apiserver on loopback.

::

    async with ControlPlane(crds=["config/crd"]) as cp:   # CRDs installed and served
        cfg = await cp.kube_configuration()          # kubernetes_asyncio Configuration
        subprocess.run([cp.binary("kubectl"), "--kubeconfig", cp.kubeconfig_path, "get", "ns"])
        await cp.install_crds([{"apiVersion": "apiextensions.k8s.io/v1", ...}])

The binaries (``etcd``, ``kube-apiserver``, ``kubectl``) are looked up in ``$KCONTROL_ASSETS``,
then ``$KUBEBUILDER_ASSETS`` (controller-runtime's convention), then the per-version cache that
``hack/build-k8s.sh`` fills (``~/.cache/kcontrol/k8s/<version>/``).

What it starts: etcd with ``--unsafe-no-fsync`` and kube-apiserver with a throw-away CA and
serving certificate, service-account keys, RBAC authorization, and a static token file holding
an administrator (``system:masters``) and unprivileged users for RBAC tests (:data:`USERS`).
Processes run in their own session; they are managed with plain :mod:`subprocess`, so a control
plane started in one event loop can be stopped, or its apiserver restarted, from another (pytest
gives each test its own loop). On exit both processes are stopped and the temp dir removed.

CustomResourceDefinitions (controller-runtime envtest's ``CRDInstallOptions``): ``crds`` -
files (YAML, several documents per file are fine, or JSON), directories (every ``.yaml``,
``.yml`` and ``.json`` file in them) or dicts - are read when the plane is built (a missing
path fails at once) and installed when it starts; :meth:`ControlPlane.install_crds` installs
more on a running plane. Installing creates each CRD or updates the one already there, then
waits until each is ``Established`` and every served version answers a LIST, so a controller
started next finds its resources; :class:`ControlPlaneError` names the CRD that was not ready
in time. :meth:`ControlPlane.uninstall_crds` deletes them and waits until they are gone.

From the command line, the control plane runs one command and stops with it::

    python -m kcontrol.testing.envtest [--crds PATH]... [--] COMMAND ARGS...

Every ``{kubeconfig}`` in the arguments is replaced by the path of an administrator's
kubeconfig, which is also ``$KUBECONFIG`` in the command's environment; the exit code is the
command's. For example ``python -m kcontrol.testing.envtest --crds config/crd -- pytest
tests/e2e`` runs a test suite against a fresh apiserver with the project's CRDs, and
``python -m kcontrol.testing.envtest -- kubectl --kubeconfig {kubeconfig} get ns`` a single
command. Without a command it serves until interrupted (Ctrl-C), printing where. SIGINT and
SIGTERM are passed on to the command. :mod:`kcontrol.testing.cluster` takes the same
arguments for a whole cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import aiohttp
from kubernetes_asyncio import client, config

from kcontrol.client import ApiClient, ClientConfig, Object, StaticTokenAuth
from kcontrol.errors import KcontrolError
from kcontrol.testing._crds import CRDSource, install_crds, load_crds, uninstall_crds
from kcontrol.testing._pki import Pki, write_pki

__all__ = [
    "ADMIN",
    "K8S_VERSION",
    "USERS",
    "CRDSource",
    "ControlPlane",
    "ControlPlaneError",
    "find_binary",
    "main",
    "run_command",
]

K8S_VERSION = os.environ.get("KCONTROL_K8S_VERSION", "v1.36.3")
"""The Kubernetes release whose binaries are used (hack/k8s/go.mod pins the same)."""

ADMIN = "admin"
USERS: dict[str, tuple[str, ...]] = {
    ADMIN: ("system:masters",),
    "alice": (),
    "bob": (),
}
"""Users in the token file and their groups; every user also gets ``system:authenticated``."""


class ControlPlaneError(KcontrolError):
    """The control plane could not be started; the message carries the component's log tail."""


def _cache_dir() -> Path:
    root = os.environ.get("KCONTROL_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kcontrol"
    )
    return Path(root) / "k8s" / K8S_VERSION


def find_binary(name: str) -> Path:
    """Locate a control-plane binary, or raise :class:`ControlPlaneError` saying how to get it."""
    candidates = [os.environ.get("KCONTROL_ASSETS"), os.environ.get("KUBEBUILDER_ASSETS")]
    for directory in [*(Path(c) for c in candidates if c), _cache_dir()]:
        path = directory / name
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise ControlPlaneError(
        f"{name} {K8S_VERSION} not found in $KCONTROL_ASSETS, $KUBEBUILDER_ASSETS or "
        f"{_cache_dir()}; build it with `hack/build-k8s.sh` (or `make assets`)"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


_PORT_ATTEMPTS = 3
"""Times etcd and kube-apiserver are started on fresh ports when another process took a
port between :func:`_free_port` and their own bind: the ports come from the ephemeral range,
which every outgoing connection on a busy machine draws from too."""


def _log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _lost_port(log: Path, offset: int) -> bool:
    """Whether the process logging to ``log`` (from ``offset``) failed to bind its port."""
    try:
        with log.open("rb") as out:
            out.seek(offset)
            return b"address already in use" in out.read()
    except OSError:
        return False


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class _Process:
    """One child process with its log file; loop-independent."""

    def __init__(self, name: str, argv: list[str], log: Path) -> None:
        self.name = name
        self.argv = argv
        self.log = log
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.running():
            assert self.popen is not None
            os.killpg(self.popen.pid, sig)

    def stop(self, timeout: float = 10.0) -> None:
        if self.popen is None:
            return
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
            except ProcessLookupError:
                pass
        self.popen = None


class ControlPlane:
    """etcd + kube-apiserver on free loopback ports; an async context manager.

    ``feature_gates`` turn kube-apiserver's feature gates on or off
    (``{"ShardedListAndWatch": True}``: shard selectors, v1.36 alpha).
    ``extra_apiserver_args`` are appended to kube-apiserver's command line (a later flag wins,
    e.g. ``["--min-request-timeout=5"]``). ``start_timeout`` bounds each component's start-up.
    ``crds`` (files, directories or dicts; see the module docstring) are read now and
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
        self._etcd: _Process | None = None
        self._apiserver: _Process | None = None
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

    def _etcd_process(self, binary: Path) -> _Process:
        peer = f"http://127.0.0.1:{_free_port()}"
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
        return _Process("etcd", argv, self.directory / "etcd.log")

    def _apiserver_process(self, binary: Path) -> _Process:
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
        return _Process("kube-apiserver", argv, self.apiserver_log)

    def _admission_args(self) -> list[str]:
        # No controller manager runs here, so no namespace has a default ServiceAccount, which
        # the ServiceAccount admission plugin would require of every pod.
        return ["--disable-admission-plugins=ServiceAccount"]

    async def _start_etcd(self, binary: Path) -> None:
        """Start etcd on free ports; again on new ones (a fresh data dir) if a port was taken
        before etcd bound it."""
        for attempt in range(_PORT_ATTEMPTS):
            self.etcd_port = _free_port()
            self._etcd = self._etcd_process(binary)
            offset = _log_size(self._etcd.log)
            self._etcd.start()
            try:
                await self._wait_etcd()
                return
            except ControlPlaneError:
                self._etcd.stop()
                if attempt + 1 == _PORT_ATTEMPTS or not _lost_port(self._etcd.log, offset):
                    raise
                shutil.rmtree(self.directory / "etcd", ignore_errors=True)

    async def _start_first_apiserver(self, binary: Path) -> None:
        """Start kube-apiserver on a free port (written to the admin kubeconfig); again on
        a new one if the port was taken before the apiserver bound it."""
        for attempt in range(_PORT_ATTEMPTS):
            self.port = _free_port()
            self._write_kubeconfig(self.kubeconfig_path, ADMIN)
            self._apiserver = self._apiserver_process(binary)
            offset = _log_size(self.apiserver_log)
            try:
                await self.start_apiserver()
                return
            except ControlPlaneError:
                self._apiserver.stop()
                if attempt + 1 == _PORT_ATTEMPTS or not _lost_port(self.apiserver_log, offset):
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
        raise ControlPlaneError(f"etcd did not become healthy:\n{_tail(self._etcd.log)}")

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
            f"kube-apiserver not ready ({last}); log tail:\n{_tail(self.apiserver_log)}"
        )


def run_command(plane: ControlPlane, argv: Sequence[str] | None = None) -> int:
    """Start ``plane``, run ``[--] COMMAND ARGS...`` against it, stop it; the command's exit code.

    Every ``{kubeconfig}`` in the arguments is replaced by the admin kubeconfig path (also set
    as ``$KUBECONFIG``); SIGINT/SIGTERM are passed on to the command, and the plane is stopped
    when it exits. Without a command, serve until interrupted.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]

    async def run() -> int:
        async with plane:
            kubeconfig = str(plane.kubeconfig_path)
            print(
                f"{type(plane).__name__} ready at {plane.host}; kubeconfig: {kubeconfig}",
                flush=True,
            )
            if not args:
                stop = asyncio.Event()
                loop = asyncio.get_running_loop()
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, stop.set)
                await stop.wait()
                return 0
            command = [a.replace("{kubeconfig}", kubeconfig) for a in args]
            child = await asyncio.create_subprocess_exec(
                *command, env={**os.environ, "KUBECONFIG": kubeconfig}
            )
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, child.send_signal, sig)
            return await child.wait()

    return asyncio.run(run())


def _parse_command_line(
    argv: Sequence[str] | None = None, *, module: str = "kcontrol.testing.envtest"
) -> tuple[list[str], list[str]]:
    """The ``--crds`` paths and the command of ``[--crds PATH]... [--] COMMAND ARGS...``."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {module}",
        description="Run COMMAND against a local control plane; {kubeconfig} in its arguments "
        "becomes the admin kubeconfig's path.",
    )
    parser.add_argument(
        "--crds",
        action="append",
        default=[],
        metavar="PATH",
        help="a CRD file or directory to install before the command (repeatable)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command and its arguments")
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    return list(args.crds), command


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m kcontrol.testing.envtest [--crds PATH]... [--] COMMAND ARGS...``:
    :func:`run_command` on a local control plane (etcd + kube-apiserver) with those CRDs
    installed (see the module docstring)."""
    crds, command = _parse_command_line(argv)
    return run_command(ControlPlane(crds=crds), command)


if __name__ == "__main__":
    raise SystemExit(main())
