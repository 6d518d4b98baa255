"""A :class:`~kcontrol.envtest.ControlPlane` grown into a cluster: :class:`Cluster` starts
kube-scheduler, kube-controller-manager and kwok after etcd and kube-apiserver, each a child
process with its log in the cluster's directory, creates kwok's nodes and waits until they
are Ready. What runs, and how kwok plays pods: :mod:`kcontrol.envtest.cluster`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp

from kcontrol.envtest._command import parse_command_line, run_command
from kcontrol.envtest._controlplane import ControlPlane
from kcontrol.envtest._crds import CRDSource
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
from kcontrol.envtest.cluster._kwok import kwok_config, node_manifest

__all__ = [
    "ALL_CONTROLLERS",
    "COMPONENTS",
    "KUBE_CONTROLLER_MANAGER",
    "KUBE_SCHEDULER",
    "KWOK",
    "WITHOUT_WORKLOAD_CONTROLLERS",
    "Cluster",
    "main",
]

KUBE_SCHEDULER = "kube-scheduler"
"""The scheduler's component (and binary) name."""
KUBE_CONTROLLER_MANAGER = "kube-controller-manager"
"""kube-controller-manager's component (and binary) name."""
KWOK = "kwok"
"""kwok's component (and binary) name: it plays kubelet for the cluster's fake nodes."""
COMPONENTS = (KUBE_SCHEDULER, KUBE_CONTROLLER_MANAGER, KWOK)
"""The components a :class:`Cluster` runs besides etcd and kube-apiserver, in start order."""

WITHOUT_WORKLOAD_CONTROLLERS = ("*", "-deployment-controller", "-replicaset-controller")
"""kube-controller-manager's ``--controllers`` beside kcontrol-manager: all but the two it runs."""

ALL_CONTROLLERS = ("*",)
"""kube-controller-manager's ``--controllers`` with its deployment and replicaset controllers."""


class Cluster(ControlPlane):
    """A :class:`ControlPlane` plus kube-scheduler, kube-controller-manager and kwok.

    - ``nodes``: kwok nodes created at start (named ``kwok-node-0``, ...); more with
      :meth:`create_nodes`.
    - ``pod_ready_delay``: seconds from a pod's start to Ready (per pod: the
      ``kwok.kcontrol.io/ready-delay`` annotation).
    - ``controllers``: kube-controller-manager's ``--controllers`` list.
    - ``extra_args``: more flags per component name (``{KUBE_CONTROLLER_MANAGER: [...]}``), after
      the defaults, so a later flag wins; ``extra_apiserver_args`` and ``feature_gates`` as for
      the control plane.
    - ``crds``: CustomResourceDefinitions installed once the apiserver is up, before the other
      components start (see :class:`~kcontrol.envtest.ControlPlane`).

    Start-up raises :class:`ControlPlaneError` with the failing component's log tail.
    """

    def __init__(
        self,
        *,
        nodes: int = 3,
        pod_ready_delay: float = 1.0,
        controllers: Sequence[str] = WITHOUT_WORKLOAD_CONTROLLERS,
        extra_args: dict[str, Sequence[str]] | None = None,
        extra_apiserver_args: Sequence[str] = (),
        start_timeout: float = 90.0,
        crds: CRDSource | Iterable[CRDSource] = (),
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        super().__init__(
            extra_apiserver_args=extra_apiserver_args,
            start_timeout=start_timeout,
            crds=crds,
            feature_gates=feature_gates,
        )
        unknown = set(extra_args or {}) - set(COMPONENTS)
        if unknown:
            raise ValueError(f"extra_args for unknown components: {sorted(unknown)}")
        self.initial_nodes = nodes
        self.pod_ready_delay = pod_ready_delay
        self.controllers = tuple(controllers)
        self.extra_args = {name: list(args) for name, args in (extra_args or {}).items()}
        self._components: dict[str, Process] = {}
        self._ports: dict[str, int] = {}
        self._log_offsets: dict[str, int] = {}
        self._node_count = 0

    # -- public surface -------------------------------------------------------------------

    def component_log(self, name: str) -> Path:
        """The log file of a component (``kube-scheduler``, ``kube-controller-manager``,
        ``kwok``)."""
        return self.directory / f"{name}.log"

    def component_running(self, name: str) -> bool:
        """Whether the component's process is alive."""
        return self._component(name).running()

    def component_pid(self, name: str) -> int:
        """The component's process id (it leads its own process group)."""
        popen = self._component(name).popen
        if popen is None:
            raise ControlPlaneError(f"{name} is not running")
        return popen.pid

    async def stop_component(self, name: str) -> None:
        """Stop one component (SIGTERM, then SIGKILL after 10 s); the rest keep running."""
        await asyncio.to_thread(self._component(name).stop)

    def kill_component(self, name: str) -> None:
        """SIGKILL one component at once (a crash)."""
        process = self._component(name)
        process.signal(signal.SIGKILL)
        process.stop()

    async def start_component(self, name: str) -> None:
        """(Re)start a stopped component and wait until it reports healthy."""
        if not self._component(name).running():
            self._launch(name)
        await self._wait_healthy_or_rebind(name)

    async def restart_component(self, name: str) -> None:
        """Stop and start one component."""
        await self.stop_component(name)
        await self.start_component(name)

    async def set_controller_manager_controllers(self, controllers: Sequence[str]) -> None:
        """Restart kube-controller-manager with ``--controllers`` set to ``controllers``."""
        await self.stop_component(KUBE_CONTROLLER_MANAGER)
        self.controllers = tuple(controllers)
        await self.start_component(KUBE_CONTROLLER_MANAGER)

    async def create_nodes(self, count: int, *, labels: dict[str, str] | None = None) -> list[str]:
        """Create ``count`` more kwok nodes and wait until every one is Ready (at most
        ``start_timeout``); their names."""
        names = [f"kwok-node-{self._node_count + i}" for i in range(count)]
        self._node_count += count
        async with self._session() as session:
            for name in names:
                status, body = await _request(
                    session, "POST", f"{self.host}/api/v1/nodes", node_manifest(name, labels=labels)
                )
                if status != 201:
                    raise ControlPlaneError(f"creating node {name}: HTTP {status}: {body}")
            await self._wait_nodes_ready(session, names)
        return names

    async def wait_for_service_account(self, namespace: str, name: str = "default") -> None:
        """Wait until kube-controller-manager has created ``namespace``'s ServiceAccount
        (pods cannot be created in a namespace before it exists); at most ``start_timeout``."""
        deadline = time.monotonic() + self.start_timeout
        url = f"{self.host}/api/v1/namespaces/{namespace}/serviceaccounts/{name}"
        async with self._session() as session:
            while True:
                status, _ = await _request(session, "GET", url)
                if status == 200:
                    return
                if time.monotonic() > deadline:
                    raise ControlPlaneError(
                        f"serviceaccount {namespace}/{name} not created in time; "
                        f"kube-controller-manager log tail:\n"
                        f"{tail(self.component_log(KUBE_CONTROLLER_MANAGER))}"
                    )
                await asyncio.sleep(0.1)

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the control plane, then every component, then the initial nodes."""
        binaries = {name: find_binary(name) for name in COMPONENTS}
        await super().start()
        try:
            (self.directory / "kwok.yaml").write_text(kwok_config(ready_delay=self.pod_ready_delay))
            for name in COMPONENTS:
                self._ports[name] = free_port()
                log = self.component_log(name)
                self._components[name] = Process(name, [str(binaries[name])], log)
            for name in COMPONENTS:
                self._launch(name)
            for name in COMPONENTS:
                await self._wait_healthy_or_rebind(name)
            if self.initial_nodes:
                await self.create_nodes(self.initial_nodes)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop every component, then the control plane; safe to call twice."""
        for process in reversed(list(self._components.values())):
            process.stop()
        self._components.clear()
        super().stop()

    # -- internals ------------------------------------------------------------------------

    def _admission_args(self) -> list[str]:
        return []  # every default admission plugin, ServiceAccount included

    def _component(self, name: str) -> Process:
        try:
            return self._components[name]
        except KeyError:
            raise ControlPlaneError(f"no component {name!r} (cluster not started?)") from None

    def _argv(self, name: str) -> list[str]:
        binary = str(find_binary(name))
        kubeconfig = str(self.kubeconfig_path)
        port = self._ports[name]
        if name == KWOK:
            argv = [
                binary,
                f"--kubeconfig={kubeconfig}",
                f"--config={self.directory / 'kwok.yaml'}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                "--node-lease-duration-seconds=40",
                f"--server-address=127.0.0.1:{port}",
            ]
        else:
            argv = [
                binary,
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self.directory / (name + '-certs')}",
            ]
        if name == KUBE_CONTROLLER_MANAGER:
            assert self._pki is not None
            argv += [
                f"--controllers={','.join(self.controllers)}",
                f"--service-account-private-key-file={self._pki.service_account_key}",
                f"--root-ca-file={self._pki.ca_cert}",
                "--cluster-name=kcontrol",
            ]
        return [*argv, *self.extra_args.get(name, ())]

    def _health_url(self, name: str) -> str:
        scheme = "http" if name == KWOK else "https"
        return f"{scheme}://127.0.0.1:{self._ports[name]}/healthz"

    def _launch(self, name: str) -> None:
        """Start ``name``'s process on its port; where its log stood is kept to tell a lost
        port from another failure."""
        process = self._component(name)
        self._log_offsets[name] = log_size(process.log)
        process.argv = self._argv(name)
        process.start()

    async def _wait_healthy_or_rebind(self, name: str) -> None:
        """Wait until ``name`` is healthy; when it failed because another process took its
        port between the pick and its bind ('address already in use': the ports come from
        the ephemeral range every outgoing connection draws from), start it again on a new
        port, up to PORT_ATTEMPTS times."""
        for attempt in range(PORT_ATTEMPTS):
            try:
                await self._wait_healthy(name)
                return
            except ControlPlaneError:
                process = self._component(name)
                process.stop()
                if attempt + 1 == PORT_ATTEMPTS or not lost_port(
                    process.log, self._log_offsets.get(name, 0)
                ):
                    raise
                self._ports[name] = free_port()
                self._launch(name)

    async def _wait_healthy(self, name: str) -> None:
        process = self._component(name)
        deadline = time.monotonic() + self.start_timeout
        last = "no answer"
        # The components serve with self-signed certificates: this only asks "are you up?".
        # Each ask is short: a port another process holds may accept and never answer.
        connector = aiohttp.TCPConnector(ssl=False)
        timeout = aiohttp.ClientTimeout(total=2)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            while time.monotonic() < deadline:
                if not process.running():
                    last = f"{name} exited"
                    break
                try:
                    async with session.get(self._health_url(name)) as response:
                        if response.status == 200:
                            return
                        last = f"/healthz {response.status}: {(await response.text())[-300:]}"
                except (aiohttp.ClientError, TimeoutError) as error:
                    last = str(error) or "no answer in 2 s"
                await asyncio.sleep(0.2)
        raise ControlPlaneError(
            f"{name} not healthy ({last}); log tail:\n{tail(self.component_log(name))}"
        )

    def _session(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(ssl=self.ssl_context())
        return aiohttp.ClientSession(
            connector=connector, headers={"Authorization": f"Bearer {self.token()}"}
        )

    async def _wait_nodes_ready(self, session: aiohttp.ClientSession, names: list[str]) -> None:
        deadline = time.monotonic() + self.start_timeout
        pending = set(names)
        while pending:
            status, body = await _request(session, "GET", f"{self.host}/api/v1/nodes")
            if status == 200:
                for node in body.get("items", []):
                    if node["metadata"]["name"] in pending and _node_ready(node):
                        pending.discard(node["metadata"]["name"])
            if not pending:
                return
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"nodes {sorted(pending)} not Ready in time; kwok log tail:\n"
                    f"{tail(self.component_log(KWOK))}"
                )
            await asyncio.sleep(0.2)


def _node_ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


async def _request(
    session: aiohttp.ClientSession, method: str, url: str, body: Any = None
) -> tuple[int, Any]:
    async with session.request(method, url, json=body) as response:
        raw = await response.read()
        with contextlib.suppress(ValueError):
            return response.status, json.loads(raw)
        return response.status, raw.decode(errors="replace")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m kcontrol.envtest.cluster [--crds PATH]... [--] COMMAND ARGS...``: run a
    command against a local cluster (control plane, scheduler, KCM without its deployment
    and replicaset controllers, three kwok nodes) with those CRDs installed; see
    :mod:`kcontrol.envtest`."""
    crds, command = parse_command_line(argv, module="kcontrol.envtest.cluster")
    return run_command(Cluster(crds=crds), command)
