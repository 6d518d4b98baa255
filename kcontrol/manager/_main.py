"""``kcontrol-manager``: parse flags, set up logging and signals, run a :class:`Manager`.

Exit status: 0 after a clean stop (SIGTERM/SIGINT: syncs drained, lease released), 1 when
leadership was lost or the manager failed, 2 for invalid flags (as argparse does).

Bad input at start-up ends in one ``exiting: <reason>`` log line naming the problem (the
kubeconfig file and what is wrong with it, the API server that never became healthy, the
address that cannot be served) and status 1 - never a traceback. A traceback is logged only
for a failure kcontrol does not know (a bug), or with ``-v=4`` and up. That line carries the
reason in its message (the event), not as a field: it is the one line an operator reads.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Sequence

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector

import kcontrol
from kcontrol import logging as kcontrol_logging
from kcontrol.client import ConfigError
from kcontrol.errors import ApiServerNotHealthy, KcontrolError
from kcontrol.leaderelection import LeadershipLost
from kcontrol.logging import get_logger
from kcontrol.manager._manager import COMPONENT, Manager
from kcontrol.manager._options import ManagerOptions, OptionsError, parse_args
from kcontrol.manager._registry import ControllerRegistry

__all__ = ["main", "new_metrics_registry"]

_log = get_logger(__name__)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def new_metrics_registry() -> CollectorRegistry:
    """A Prometheus registry with the process, platform and GC collectors, as the global
    registry has them; the manager serves it on ``/metrics``."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def main(
    argv: Sequence[str] | None = None,
    registry: ControllerRegistry | None = None,
) -> int:
    """Run ``kcontrol-manager`` with ``argv`` (default ``sys.argv[1:]``); return the exit status.

    ``registry`` holds the controllers that can be enabled; by default those installed
    packages declare in the ``kcontrol.controllers`` entry-point group.
    """
    controllers = registry if registry is not None else ControllerRegistry.from_entry_points()
    try:
        options, show_version = parse_args(argv, controllers.flags())
    except SystemExit as exit_:  # --help, or a flag argparse rejected (it printed why)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    if show_version:
        print(f"{COMPONENT} v{kcontrol.__version__}")
        return EXIT_OK
    try:
        options.validate()
        controllers.select(options.controllers)
    except OptionsError as error:
        print(f"{COMPONENT}: {error}", file=sys.stderr)
        return EXIT_USAGE
    kcontrol_logging.configure(log_format=options.log_format, verbosity=options.verbosity)
    return asyncio.run(_serve(options, controllers))


async def _serve(options: ManagerOptions, controllers: ControllerRegistry) -> int:
    manager = Manager(options, controllers, registry=new_metrics_registry())
    loop = asyncio.get_running_loop()
    stop_signals = (signal.SIGTERM, signal.SIGINT)
    for signum in stop_signals:
        loop.add_signal_handler(signum, _on_signal, manager, signum)
    try:
        await manager.run()
    except asyncio.CancelledError:
        if not manager.shutting_down:
            raise
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        _log.info("stopped cleanly")
        return EXIT_OK
    except LeadershipLost:
        _log.error("exiting: leader election lost")
        return EXIT_FAILED
    except ConfigError as error:
        _log.error(f"exiting: no usable client configuration: {error}")
        return EXIT_FAILED
    except ApiServerNotHealthy as error:
        _log.error(f"exiting: {error}")
        return EXIT_FAILED
    except (KcontrolError, OSError, ExceptionGroup) as error:
        _report_failure(error)
        return EXIT_FAILED
    finally:
        for signum in stop_signals:
            loop.remove_signal_handler(signum)
    _log.error("exiting: the manager stopped unexpectedly")
    return EXIT_FAILED


def _report_failure(error: BaseException) -> None:
    """Log why the manager failed: one line when every failure is one kcontrol expects (an
    API or OS error, e.g. the metrics port taken), with the traceback at debug level only;
    with the traceback otherwise."""
    leaves = _leaves(error)
    if all(isinstance(leaf, KcontrolError | OSError) for leaf in leaves):
        _log.error("exiting: the manager failed: " + "; ".join(str(leaf) for leaf in leaves))
        _log.debug("the failure in full", exc_info=error)
    else:
        _log.error("exiting: the manager failed", exc_info=error)


def _leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, or ``[error]``."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def _on_signal(manager: Manager, signum: int) -> None:
    _log.info("received a signal; shutting down", signal=signal.Signals(signum).name)
    manager.shutdown()
