"""The control plane from the command line: start it, run one command against it, stop it
(``python -m kcontrol.envtest [--crds PATH]... [--] COMMAND ARGS...``)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence

from kcontrol.envtest._controlplane import ControlPlane

__all__ = ["main", "parse_command_line", "run_command"]


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


def parse_command_line(
    argv: Sequence[str] | None = None, *, module: str = "kcontrol.envtest"
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
    """``python -m kcontrol.envtest [--crds PATH]... [--] COMMAND ARGS...``:
    :func:`run_command` on a local control plane (etcd + kube-apiserver) with those CRDs
    installed (see :mod:`kcontrol.envtest`)."""
    crds, command = parse_command_line(argv)
    return run_command(ControlPlane(crds=crds), command)
