"""``make run``: kcontrol-manager on a cluster, an example Deployment, and its rollout live.

Without ``$KUBECONFIG``, a local :class:`~kcontrol.envtest.cluster.Cluster` is started first
(etcd, kube-apiserver, kube-scheduler, kube-controller-manager without its deployment and
replicaset controllers, kwok nodes). Then:

1. ``kcontrol-manager`` runs as a child process in its own session (Ctrl-C in the terminal
   reaches only this process, which stops it in order), its output in a log file;
2. ``examples/rollout/namespace.yaml`` and ``deployment.yaml`` are applied (server-side);
3. :class:`~kcontrol.rollout.RolloutView` draws the rollout, headed by commands to try in
   another terminal, spelled to work there as shown (:class:`Commands`);
4. once it is complete, ``deployment-v2.yaml`` (another image) is applied after a countdown,
   so a rolling update can be watched (``--no-update`` skips it).

Ctrl-C (or SIGTERM) stops the view, then the manager, then the local cluster, and removes their
directories. On ``$KUBECONFIG``'s cluster nothing but the manager is stopped: the example
namespace is left in place (the last line says how to delete it), and the manager takes part
in leader election (``kube-system/kcontrol-manager``) unless told otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry
from rich.console import Console

from kcontrol.client import ApiClient, Object, Reader, Resource, load_config
from kcontrol.envtest import ControlPlaneError, find_binary
from kcontrol.envtest.cluster import Cluster
from kcontrol.errors import KcontrolError, NotFound
from kcontrol.rollout._apply import apply_file, load_manifests
from kcontrol.rollout._cli import USER_AGENT, run_until_interrupted
from kcontrol.rollout._snapshot import Snapshot, rollout_status
from kcontrol.rollout._view import RolloutView

__all__ = ["Commands", "LocalOptions", "ManagerExited", "ManagerProcess", "main", "run_local"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "rollout"
"""The example manifests, in the source tree (``make run`` runs from it)."""

SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")

MANAGER_STOP_TIMEOUT = 10.0
"""Seconds kcontrol-manager gets to shut down after SIGTERM before it is killed."""


class ManagerExited(KcontrolError):
    """kcontrol-manager exited on its own; the message holds its log tail."""


@dataclass(frozen=True, slots=True)
class LocalOptions:
    """What :func:`run_local` does.

    - ``kubeconfig``: the cluster to use; None starts a local one with ``nodes`` kwok nodes;
    - ``examples``: directory of ``namespace.yaml``, ``deployment.yaml``, ``deployment-v2.yaml``;
    - ``manager_args``: more kcontrol-manager flags (after the defaults, so they win);
    - ``update_after``: seconds between the first rollout's completion and applying
      ``deployment-v2.yaml``; None never applies it.
    """

    kubeconfig: str | None = None
    examples: Path = EXAMPLES
    manager_args: tuple[str, ...] = ()
    nodes: int = 3
    update_after: float | None = 5.0
    console: Console = field(default_factory=Console)


@dataclass(frozen=True, slots=True)
class Commands:
    """The commands ``make run`` suggests, spelled to work as shown in a new terminal.

    Such a terminal need not have kubectl on its PATH (``make assets`` builds it into the
    cache directory, ``~/.cache/kcontrol/k8s/<version>/``), nor the virtualenv active, nor
    start in the source tree, nor know the cluster: so kubectl and Python are named by path,
    and :meth:`setup` (a ``cd`` and an ``export KUBECONFIG``) comes first. Every argument is
    shell-quoted.

    - ``kubectl``: the built kubectl, else the one on PATH, by absolute path;
    - ``python``: this interpreter, relative to ``directory`` when below it;
    - ``directory``: where relative paths (the examples) are relative to;
    - ``kubeconfig``: the cluster's kubeconfig, absolute.
    """

    kubectl: str
    python: str
    directory: Path
    kubeconfig: str

    @classmethod
    def for_cluster(cls, kubeconfig: str) -> Commands:
        """The commands for ``kubeconfig``'s cluster, from the working directory."""
        directory = Path.cwd()
        return cls(
            kubectl=_kubectl(),
            python=_relative(Path(sys.executable).absolute(), directory),
            directory=directory,
            kubeconfig=os.path.abspath(kubeconfig),
        )

    def setup(self) -> tuple[str, str]:
        """What to run first in the other terminal."""
        return (
            f"cd {shlex.quote(str(self.directory))}",
            f"export KUBECONFIG={shlex.quote(self.kubeconfig)}",
        )

    def kubectl_command(self, *args: str) -> str:
        """kubectl with ``args``, after :meth:`setup`."""
        return shlex.join([self.kubectl, *args])

    def kubectl_standalone(self, *args: str) -> str:
        """kubectl with ``args`` and the kubeconfig: works in any terminal, any directory
        (``args`` must not hold relative paths)."""
        return f"KUBECONFIG={shlex.quote(self.kubeconfig)} {self.kubectl_command(*args)}"

    def apply(self, path: Path) -> str:
        """``kubectl apply -f path``, after :meth:`setup`."""
        return self.kubectl_command("apply", "-f", _relative(path.resolve(), self.directory))

    def rollout_view(self, target: str) -> str:
        """``python -m kcontrol.rollout NAMESPACE/NAME``, after :meth:`setup`."""
        return shlex.join([self.python, "-m", "kcontrol.rollout", target])


class ManagerProcess:
    """kcontrol-manager as a child process: its own session (a terminal's Ctrl-C does not
    reach it), stdout and stderr in ``log``. :meth:`stop` is SIGTERM, then SIGKILL after
    :data:`MANAGER_STOP_TIMEOUT`."""

    def __init__(self, args: Sequence[str], log: Path) -> None:
        self.argv = [*_manager_command(), *args]
        self.log = log
        self._process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("kcontrol-manager not started")
        return self._process.pid

    async def start(self) -> None:
        with self.log.open("ab") as log:
            self._process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )

    async def wait(self) -> None:
        """Block while the manager runs; raise :class:`ManagerExited` when it exits."""
        assert self._process is not None
        code = await self._process.wait()
        raise ManagerExited(f"kcontrol-manager exited with {code}; log tail:\n{self._tail()}")

    async def stop(self) -> None:
        process = self._process
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), MANAGER_STOP_TIMEOUT)
        except TimeoutError:
            process.kill()
            await process.wait()

    def _tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


async def run_local(options: LocalOptions) -> None:
    """Run everything (see the module docstring) until cancelled; clean up on the way out."""
    console = options.console
    async with contextlib.AsyncExitStack() as stack:
        if options.kubeconfig is None:
            cluster = Cluster(nodes=options.nodes)
            with console.status(
                "starting a local cluster: etcd, kube-apiserver, kube-scheduler, "
                f"kube-controller-manager, kwok with {options.nodes} nodes..."
            ):
                await cluster.start()  # stops what it started if it fails
            stack.callback(_stop_cluster, cluster, console)
            kubeconfig = str(cluster.kubeconfig_path)
            workdir = cluster.directory
            defaults = ["--leader-elect=false"]
        else:
            kubeconfig = options.kubeconfig
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kcontrol-run-")))
            defaults = []
        manager = ManagerProcess(
            ["--kubeconfig", kubeconfig, "--secure-port=0", *defaults, *options.manager_args],
            workdir / "kcontrol-manager.log",
        )
        await manager.start()
        stack.push_async_callback(_stopped, manager, console)
        config = await load_config(kubeconfig=kubeconfig)
        client = await stack.enter_async_context(
            ApiClient(config, qps=20, burst=30, user_agent=USER_AGENT, registry=CollectorRegistry())
        )

        first = options.examples / "deployment.yaml"
        second = options.examples / "deployment-v2.yaml"
        target = load_manifests(first)[-1]["metadata"]
        namespace, name = target["namespace"], target["name"]
        commands = Commands.for_cluster(kubeconfig)
        await apply_file(client, options.examples / "namespace.yaml")
        if options.kubeconfig is not None:
            stack.callback(
                console.print,
                f"left namespace {namespace} in place; remove it with: "
                + commands.kubectl_standalone("delete", "namespace", namespace),
                soft_wrap=True,  # one line, however long: it must paste as one command
            )
        await _wait_for_service_account(client, namespace)

        view = RolloutView(
            client,
            namespace,
            name,
            console=console,
            header=_header(
                options,
                commands,
                manager=(manager.pid, manager.log),
                target=f"{namespace}/{name}",
                second=second,
            ),
        )
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(manager.wait(), name="kcontrol-manager")
            tasks.create_task(view.run(), name="rollout view")
            tasks.create_task(_demo(view, client, options, commands), name="demo")


async def _demo(
    view: RolloutView,
    client: ApiClient,
    options: LocalOptions,
    commands: Commands,
) -> None:
    """Apply the example, wait for its rollout, then (after a countdown) roll out v2."""
    first = options.examples / "deployment.yaml"
    second = options.examples / "deployment-v2.yaml"
    deployment = (await apply_file(client, first))[-1]
    view.notice = f"applied {_shown(first)}: {_summary(deployment)}; kcontrol-manager rolls it out"
    await view.wait_for(_rolled_out(deployment))
    # Commands go on lines of their own, so that the view does not wrap them.
    if options.update_after is None:
        view.notice = f"rollout complete. Roll out another image:\n  {commands.apply(second)}"
        return
    for left in range(int(options.update_after), 0, -1):
        view.notice = (
            f"rollout complete. Applying {_shown(second)} (a new image) in {left} s, "
            "for a rolling update"
        )
        await asyncio.sleep(1.0)
    deployment = (await apply_file(client, second))[-1]
    view.notice = f"applied {_shown(second)}: rolling update to {_summary(deployment)}"
    await view.wait_for(_rolled_out(deployment))
    view.notice = (
        f"rolling update complete; Ctrl-C stops everything. Roll back:\n  {commands.apply(first)}"
    )


def _rolled_out(deployment: Object) -> Callable[[Snapshot], bool]:
    """Whether a snapshot shows ``deployment``'s generation (or a later one) rolled out."""
    generation = deployment["metadata"].get("generation", 0)

    def done(snapshot: Snapshot) -> bool:
        current = snapshot.deployment
        return (
            current is not None
            and current["metadata"].get("generation", 0) >= generation
            and rollout_status(current)[0]
        )

    return done


def _summary(deployment: Object) -> str:
    spec = deployment.get("spec") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    images = ", ".join(c.get("image", "?") for c in containers)
    return f"{spec.get('replicas', 1)} replicas of {images}"


async def _wait_for_service_account(client: Reader, namespace: str, within: float = 60.0) -> None:
    """Pods can be created in a namespace once its ``default`` ServiceAccount exists
    (kube-controller-manager makes it); wait for it, at most ``within`` seconds."""
    async with asyncio.timeout(within):
        while True:
            try:
                await client.get(SERVICEACCOUNTS, "default", namespace=namespace)
                return
            except NotFound:
                await asyncio.sleep(0.2)


def _stop_cluster(cluster: Cluster, console: Console) -> None:
    directory = cluster.directory  # only while it runs
    with console.status("stopping the local cluster..."):
        cluster.stop()
    console.print(f"stopped the local cluster, removed {directory}")


async def _stopped(manager: ManagerProcess, console: Console) -> None:
    await manager.stop()
    console.print(f"stopped kcontrol-manager (pid {manager.pid})")


def _header(
    options: LocalOptions,
    commands: Commands,
    *,
    manager: tuple[int, Path],
    target: str,
    second: Path,
) -> tuple[str, ...]:
    """The lines above the view: what runs where (``manager``: its pid and log), and
    commands to try (:class:`Commands`)."""
    pid, log = manager
    namespace, name = target.split("/")
    where = (
        f"a local cluster ({options.nodes} kwok nodes)"
        if options.kubeconfig is None
        else "$KUBECONFIG's cluster"
    )
    stop = (
        "Ctrl-C stops this view, kcontrol-manager and the local cluster, and removes them."
        if options.kubeconfig is None
        else "Ctrl-C stops this view and kcontrol-manager; the cluster is left as it is."
    )
    return (
        f"kcontrol-manager (pid {pid}) runs the deployment and replicaset controllers "
        f"on {where}; its log: {log}",
        "try, in another terminal:",
        *(f"  {line}" for line in commands.setup()),
        f"  {commands.kubectl_command('get', 'deploy,rs,pods', '-n', namespace)}",
        f"  {commands.apply(second)}",
        "  "
        + commands.kubectl_command("scale", f"deploy/{name}", "-n", namespace, "--replicas=10"),
        f"  {commands.rollout_view(target)}   # this view, on any cluster",
        stop,
    )


def _kubectl() -> str:
    """The kubectl built for the test cluster (the version kcontrol is tested with), else the
    one on PATH, by absolute path; bare ``kubectl`` if there is neither."""
    try:
        return os.path.abspath(find_binary("kubectl"))
    except ControlPlaneError:
        found = shutil.which("kubectl")
        return os.path.abspath(found) if found else "kubectl"


def _relative(path: Path, directory: Path) -> str:
    """``path`` relative to ``directory`` when it is below it (symlinks are not resolved: a
    virtualenv's python is a link to the base interpreter, which lacks the packages)."""
    try:
        return str(path.relative_to(directory))
    except ValueError:
        return str(path)


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is below it."""
    return _relative(path.resolve(), Path.cwd())


def _manager_command() -> list[str]:
    script = Path(sys.executable).parent / "kcontrol-manager"
    if script.is_file():
        return [str(script)]
    found = shutil.which("kcontrol-manager")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from kcontrol.manager import main; sys.exit(main())"]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m kcontrol.rollout.local [--no-update] [-- MANAGER FLAGS...]``."""
    parser = argparse.ArgumentParser(
        prog="python -m kcontrol.rollout.local",
        description=(
            "kcontrol-manager on $KUBECONFIG's cluster, or on a local kwok cluster started "
            "for the run, with an example Deployment whose rollout is shown live. "
            "Flags after -- go to kcontrol-manager."
        ),
    )
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG") or None)
    parser.add_argument("--examples", type=Path, default=EXAMPLES, help="example manifests")
    parser.add_argument("--nodes", type=int, default=3, help="kwok nodes of a local cluster")
    parser.add_argument(
        "--no-update", action="store_true", help="do not apply deployment-v2.yaml afterwards"
    )
    parser.add_argument("--update-after", type=float, default=5.0, metavar="SECONDS")
    parser.add_argument("manager_args", nargs="*", help="kcontrol-manager flags (after --)")
    args = parser.parse_args(argv)
    options = LocalOptions(
        kubeconfig=args.kubeconfig,
        examples=args.examples,
        manager_args=tuple(args.manager_args),
        nodes=args.nodes,
        update_after=None if args.no_update else args.update_after,
    )
    try:
        asyncio.run(run_until_interrupted(run_local(options)))
    except (KcontrolError, ControlPlaneError) as error:
        options.console.print(f"[red]{error}[/red]")
        return 1
    return 0
