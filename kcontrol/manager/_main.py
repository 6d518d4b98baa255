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

import sys
from collections.abc import Sequence

import kcontrol
from kcontrol import logging as kcontrol_logging
from kcontrol.logging import get_logger
from kcontrol.manager._manager import COMPONENT, Manager, new_metrics_registry
from kcontrol.manager._options import OptionsError
from kcontrol.manager._process import EXIT_OK, EXIT_USAGE, run_on_loop, serve
from kcontrol.manager._registry import ControllerRegistry
from kcontrol.manager.flags import parse_args

__all__ = ["main", "new_metrics_registry"]

_log = get_logger(__name__)


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
        options, show_version = parse_args(
            argv,
            controllers.flags(),
            known_controllers={spec.name: spec.enabled_by_default for spec in controllers},
        )
    except SystemExit as exit_:  # --help, or a flag argparse rejected (it printed why)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    if show_version:
        print(f"{COMPONENT} v{kcontrol.__version__}")
        return EXIT_OK
    try:
        options.validate()
        controllers.select(options.controllers, shards=options.election.shards)
    except OptionsError as error:
        print(f"{COMPONENT}: {error}", file=sys.stderr)
        return EXIT_USAGE
    kcontrol_logging.configure(log_format=options.log_format, verbosity=options.verbosity)
    manager = Manager(options, controllers, registry=new_metrics_registry())
    return run_on_loop(serve(manager), options.event_loop)
