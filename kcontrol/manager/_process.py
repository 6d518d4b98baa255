"""The process around a :class:`~kcontrol.manager.Manager`: signals, exit status, failure lines.

Shared by ``kcontrol-manager`` (:func:`kcontrol.manager.main`) and an operator's
:meth:`Manager.main <kcontrol.manager.Manager.main>`. Exit status: 0 after a clean stop
(SIGTERM/SIGINT: syncs drained, lease released), 1 when leadership was lost or the manager
failed, 2 for invalid flags (as argparse does). Failures kcontrol expects (an unusable
kubeconfig, an API server that never answered, a port taken) end in one ``exiting: <reason>``
line, never a traceback.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

import kcontrol
from kcontrol import logging as kcontrol_logging
from kcontrol.client import ConfigError
from kcontrol.errors import ApiServerNotHealthy, KcontrolError
from kcontrol.leaderelection import LeadershipLost
from kcontrol.logging import get_logger
from kcontrol.manager._options import OptionsError, uvloop_installed
from kcontrol.manager.flags import parse_args

if TYPE_CHECKING:
    from kcontrol.manager._manager import Manager

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "quiet_tls_teardown",
    "run_manager",
    "run_on_loop",
    "serve",
]

_log = get_logger(__name__)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def run_manager(manager: Manager, argv: Sequence[str] | None = None) -> int:
    """:meth:`Manager.main`: ``argv`` parsed over ``manager``'s options, then as :func:`main`.

    Logging is set up from the flags unless the application configured it already."""
    prog = manager.component
    try:
        options, show_version = parse_args(
            argv,
            manager._controllers.flags(),
            defaults=manager.options,
            prog=prog,
            known_controllers={s.name: s.enabled_by_default for s in manager._controllers},
        )
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    if show_version:
        print(f"{manager.component} (kcontrol v{kcontrol.__version__})")
        return EXIT_OK
    try:
        manager._configure(options)
    except OptionsError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return EXIT_USAGE
    kcontrol_logging.configure_unless_configured(
        log_format=options.log_format, verbosity=options.verbosity
    )
    return run_on_loop(serve(manager), options.event_loop)


def run_on_loop(main: Coroutine[Any, Any, int], event_loop: str) -> int:
    """``asyncio.run(main)`` on the loop ``--event-loop`` names: uvloop's for ``uvloop``, and
    for ``auto`` when uvloop is importable; asyncio's own otherwise. The choice is logged."""
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    if event_loop == "uvloop" or (event_loop == "auto" and uvloop_installed()):
        import uvloop  # noqa: PLC0415 - an optional dependency, imported when chosen

        loop_factory = uvloop.new_event_loop
    _log.info("event loop", loop="uvloop" if loop_factory is not None else "asyncio")
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(main)


async def serve(manager: Manager) -> int:
    """Run ``manager`` until SIGTERM/SIGINT (a graceful stop) or failure; the exit status."""
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(quiet_tls_teardown)
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


def quiet_tls_teardown(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's exception handler: as the default one, except for one report of uvloop's
    TLS transport (MagicStack/uvloop#471 and kin) - "Fatal error on SSL protocol" with "the
    handler is closed" - which comes when a connection this process closed on purpose (a
    cancelled request, a stop) still had bytes from the peer to process. Nothing failed: it
    is logged at debug level, without a traceback, instead of as an error."""
    error = context.get("exception")
    if (
        str(context.get("message", "")).startswith("Fatal error on SSL protocol")
        and isinstance(error, RuntimeError)
        and "the handler is closed" in str(error)
    ):
        _log.debug("a TLS connection closed here was still receiving", error=str(error))
        return
    loop.default_exception_handler(context)


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
