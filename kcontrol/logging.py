"""Log set-up for kcontrol processes: structlog and the standard library, one output.

kcontrol's modules log through :mod:`structlog` or :mod:`logging`; :func:`configure` routes
both through the same processors to one stream, as JSON lines (``json``, for log collectors)
or aligned human-readable lines (``console``). A library user who never calls it keeps their
own logging set-up.

Verbosity follows klog's ``-v`` convention as kube-controller-manager uses it: ``0`` (the
default) to ``3`` log at INFO and above, ``4`` and more also log DEBUG (klog's "debug level").
Chatty libraries (aiohttp, asyncio, kubernetes_asyncio) log WARNING and above unless ``-v``
is 6 or more.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

import structlog

__all__ = ["LOG_FORMATS", "LogFormat", "configure", "level_for_verbosity"]

LogFormat = Literal["json", "console"]
LOG_FORMATS: tuple[LogFormat, ...] = ("json", "console")

_HANDLER_NAME = "kcontrol"
_DEBUG_VERBOSITY = 4
_LIBRARY_DEBUG_VERBOSITY = 6
# Libraries whose INFO/DEBUG lines are noise at normal verbosity.
_CHATTY_LIBRARIES = ("aiohttp", "asyncio", "kubernetes_asyncio", "urllib3")


def level_for_verbosity(verbosity: int) -> int:
    """The :mod:`logging` level of kcontrol's own loggers at klog verbosity ``verbosity``."""
    return logging.DEBUG if verbosity >= _DEBUG_VERBOSITY else logging.INFO


def configure(
    *,
    log_format: LogFormat = "json",
    verbosity: int = 0,
    stream: TextIO | None = None,
) -> None:
    """Send structlog and standard-library logs to ``stream`` (default stderr).

    Idempotent: calling it again replaces the handler it installed before, so tests and
    repeated ``main()`` calls do not duplicate lines.
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r}; expected one of {LOG_FORMATS}")
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: structlog.types.Processor
    if log_format == "json":
        renderer = structlog.processors.JSONRenderer()
        shared.append(structlog.processors.format_exc_info)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    )
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(formatter)

    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    own_level = level_for_verbosity(verbosity)
    root.setLevel(own_level)
    library_level = logging.NOTSET if verbosity >= _LIBRARY_DEBUG_VERBOSITY else logging.WARNING
    for name in _CHATTY_LIBRARIES:
        logging.getLogger(name).setLevel(library_level)
