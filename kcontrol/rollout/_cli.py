"""``python -m kcontrol.rollout NAMESPACE/NAME``: the rollout view against any cluster."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Coroutine, Sequence
from typing import Any

from prometheus_client import CollectorRegistry
from rich.console import Console
from rich.logging import RichHandler

from kcontrol.client import ApiClient, load_config
from kcontrol.errors import KcontrolError
from kcontrol.rollout._view import RolloutView

__all__ = ["main", "run_until_interrupted"]

USER_AGENT = "kcontrol-rollout"
ONCE_SYNC_TIMEOUT = 60.0
"""Seconds ``--once`` waits for the caches before it gives up."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the view; 0 on Ctrl-C (SIGINT) or SIGTERM, 1 when the cluster cannot be used,
    2 on bad arguments."""
    parser = argparse.ArgumentParser(
        prog="python -m kcontrol.rollout",
        description=(
            "Show a Deployment's rollout live: one progress bar per ReplicaSet, its "
            "conditions and latest events, from kcontrol's informers. Ctrl-C exits."
        ),
    )
    parser.add_argument(
        "target", metavar="NAMESPACE/NAME", help="the Deployment (NAME alone: namespace default)"
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube)")
    parser.add_argument("--context", help="kubeconfig context (default: its current-context)")
    parser.add_argument(
        "--once", action="store_true", help="print one frame once the caches synced, then exit"
    )
    parser.add_argument(
        "--events", type=int, default=8, metavar="N", help="latest events to show (default 8)"
    )
    args = parser.parse_args(argv)
    namespace, _, name = args.target.rpartition("/")
    if not name or "/" in namespace:
        parser.error(f"expected NAMESPACE/NAME, got {args.target!r}")
    console = Console()
    _log_to(console)

    async def view() -> None:
        config = await load_config(kubeconfig=args.kubeconfig, context=args.context)
        async with ApiClient(
            config, qps=20, burst=30, user_agent=USER_AGENT, registry=CollectorRegistry()
        ) as client:
            rollout = RolloutView(
                client, namespace or "default", name, console=console, max_events=args.events
            )
            if args.once:
                async with asyncio.timeout(ONCE_SYNC_TIMEOUT):
                    await rollout.run(once=True)
            else:
                await rollout.run()

    try:
        asyncio.run(run_until_interrupted(view()))
    except KcontrolError as error:
        console.print(f"[red]kcontrol.rollout: {error}[/red]")
        return 1
    except TimeoutError:
        console.print(
            f"[red]kcontrol.rollout: caches not synced in {ONCE_SYNC_TIMEOUT:.0f} s[/red]"
        )
        return 1
    return 0


async def run_until_interrupted(work: Coroutine[Any, Any, None]) -> bool:
    """Run ``work`` until it returns or SIGINT/SIGTERM arrives, which cancels it (and waits
    for it to unwind). True if a signal stopped it. Signals that arrive later, while the
    caller cleans up, are ignored."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with asyncio.TaskGroup() as tasks:
            working = tasks.create_task(work, name="work")
            stopping = tasks.create_task(stop.wait(), name="signal")
            await asyncio.wait([working, stopping], return_when=asyncio.FIRST_COMPLETED)
            working.cancel()
            stopping.cancel()
    except BaseExceptionGroup as group:  # the work failed: its one error, as it raised it
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    return stop.is_set()


def _log_to(console: Console) -> None:
    """Warnings and errors (a watch that broke, say) go above the live frame, not through it."""
    root = logging.getLogger()
    root.handlers[:] = [RichHandler(console=console, show_path=False, level=logging.WARNING)]
    root.setLevel(logging.WARNING)


if __name__ == "__main__":
    sys.exit(main())
