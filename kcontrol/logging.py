"""How kcontrol logs, and the log set-up of kcontrol processes.

One style everywhere, in kcontrol and in the controllers built on it: a :class:`BoundLogger`
from :func:`get_logger`, called structlog's way - an event and its context as key-value
pairs, never formatted into the message::

    _log = get_logger(__name__)
    log = _log.bind(controller="replicaset")  # context for every later line
    log.error("sync failed", key="default/web", retries=3, exc_info=error)

Where the lines go - the promise to library users: **through the standard library's**
:mod:`logging` **and nothing else**, to the logger named after the module (``kcontrol.*``,
``kcontrol_controllers.*``). An application that only sets up stdlib logging sees kcontrol's
lines with its own levels, handlers and filters, and nothing is printed that stdlib logging does
not let through; structlog's global configuration is neither needed nor touched. A record's
message is a :class:`LogMessage`, whose ``str`` - what ``%(message)s`` shows - is the event
followed by the context as ``key=value`` pairs::

    sync failed controller=replicaset key=default/web retries=3

and a formatter that wants the fields reads ``record.msg.event`` and ``record.msg.context``.

:func:`configure` is the set-up of a kcontrol process (``kcontrol-manager --log-format
json|console``): it renders every stdlib record, kcontrol's with their context as fields
(JSON keys, or ``key=value`` on the console), and lines logged through structlog, to one
stream. A library user who never calls it keeps their own logging set-up.

Verbosity follows klog's ``-v`` convention as kube-controller-manager uses it: ``0`` (the
default) to ``3`` log at INFO and above, ``4`` and more also log DEBUG (klog's "debug level").
Chatty libraries (aiohttp, asyncio, kubernetes_asyncio) log WARNING and above unless ``-v``
is 6 or more.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Literal, TextIO

if TYPE_CHECKING:
    from structlog.types import Processor

__all__ = [
    "LOG_FORMATS",
    "BoundLogger",
    "LogFormat",
    "LogMessage",
    "configure",
    "configure_unless_configured",
    "get_logger",
    "level_for_verbosity",
]

LogFormat = Literal["json", "console"]
"""A log format: ``json`` or ``console`` (:data:`LOG_FORMATS`)."""
LOG_FORMATS: tuple[LogFormat, ...] = ("json", "console")
"""``--log-format``'s values: one JSON object per line (for a log collector) or aligned text."""

_HANDLER_NAME = "kcontrol"
_DEBUG_VERBOSITY = 4
_LIBRARY_DEBUG_VERBOSITY = 6
# Libraries whose INFO/DEBUG lines are noise at normal verbosity.
_CHATTY_LIBRARIES = ("aiohttp", "asyncio", "kubernetes_asyncio", "urllib3")


# -- logging ---------------------------------------------------------------------------------


class LogMessage:
    """The message of a record logged through a :class:`BoundLogger`.

    ``event`` says what happened; ``context`` holds the key-value pairs (bound and per call,
    in that order). ``str()`` renders both as one line: ``event key=value ...``, values
    that are empty or hold spaces, quotes or ``=`` JSON-quoted.
    """

    __slots__ = ("context", "event")

    def __init__(self, event: str, context: Mapping[str, object]) -> None:
        self.event = event
        self.context = context

    def __str__(self) -> str:
        if not self.context:
            return self.event
        pairs = (f"{key}={_format_value(value)}" for key, value in self.context.items())
        return " ".join((self.event, *pairs))

    def __repr__(self) -> str:
        return f"LogMessage({self.event!r}, {dict(self.context)!r})"


def _format_value(value: object) -> str:
    text = str(value)
    if not text or any(c.isspace() or c in '"=' for c in text):
        return json.dumps(text, ensure_ascii=False)
    return text


class BoundLogger:
    """A stdlib :class:`logging.Logger` with key-value context bound to it.

    ``debug``/``info``/``warning``/``error``/``critical(event, **context)`` log ``event``
    with the bound context plus ``context``; two keys are not context but passed to stdlib
    logging: ``exc_info`` (an exception, or True inside ``except``) and ``stack_info``.
    :meth:`exception` is :meth:`error` with ``exc_info=True``. Disabled levels cost one
    ``isEnabledFor`` check. Immutable: :meth:`bind` returns a new logger.
    """

    __slots__ = ("_context", "_logger")

    def __init__(self, logger: logging.Logger, context: Mapping[str, object] | None = None) -> None:
        self._logger = logger
        self._context: Mapping[str, object] = dict(context or {})

    @property
    def name(self) -> str:
        """The stdlib logger's name."""
        return self._logger.name

    @property
    def context(self) -> Mapping[str, object]:
        """The bound key-value pairs."""
        return self._context

    def bind(self, **context: object) -> BoundLogger:
        """This logger with ``context`` added to (or replacing keys of) the bound pairs."""
        return BoundLogger(self._logger, {**self._context, **context})

    def is_enabled_for(self, level: int) -> bool:
        """Whether a line at ``level`` would be logged (stdlib's ``isEnabledFor``)."""
        return self._logger.isEnabledFor(level)

    def debug(self, event: str, /, **context: object) -> None:
        self._log(logging.DEBUG, event, context)

    def info(self, event: str, /, **context: object) -> None:
        self._log(logging.INFO, event, context)

    def warning(self, event: str, /, **context: object) -> None:
        self._log(logging.WARNING, event, context)

    def error(self, event: str, /, **context: object) -> None:
        self._log(logging.ERROR, event, context)

    def exception(self, event: str, /, **context: object) -> None:
        context.setdefault("exc_info", True)
        self._log(logging.ERROR, event, context)

    def critical(self, event: str, /, **context: object) -> None:
        self._log(logging.CRITICAL, event, context)

    def _log(self, level: int, event: str, context: dict[str, object]) -> None:
        logger = self._logger
        if not logger.isEnabledFor(level):
            return
        exc_info: Any = context.pop("exc_info", None)
        stack_info = bool(context.pop("stack_info", False))
        message = LogMessage(event, {**self._context, **context} if self._context else context)
        # stacklevel=3: the record names the caller of debug()/info()/..., not this module.
        logger.log(level, message, exc_info=exc_info, stack_info=stack_info, stacklevel=3)


def get_logger(name: str, **context: object) -> BoundLogger:
    """The :class:`BoundLogger` over stdlib's logger ``name`` (pass ``__name__``), with
    ``context`` bound."""
    return BoundLogger(logging.getLogger(name), context)


# -- set-up of a process ------------------------------------------------------------------------


def level_for_verbosity(verbosity: int) -> int:
    """The :mod:`logging` level of kcontrol's own loggers at klog verbosity ``verbosity``."""
    return logging.DEBUG if verbosity >= _DEBUG_VERBOSITY else logging.INFO


def _unpack_log_message(
    logger: object, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: a :class:`LogMessage` record's context becomes fields."""
    message = getattr(event_dict.get("_record"), "msg", None)
    if isinstance(message, LogMessage):
        event_dict.update(message.context)
        event_dict["event"] = message.event
    return event_dict


def configure(
    *,
    log_format: LogFormat = "json",
    verbosity: int = 0,
    stream: TextIO | None = None,
) -> None:
    """Render every stdlib record (kcontrol's included) and structlog's lines to ``stream``
    (default stderr), as JSON lines (``json``, for log collectors) or aligned
    human-readable lines (``console``). Exceptions are rendered as plain Python tracebacks,
    never with the values of local variables (they may hold secrets).

    Installs one handler on the root logger, sets the root level from ``verbosity`` and
    configures structlog to log through stdlib. Idempotent: calling it again replaces the
    handler it installed before, so tests and repeated ``main()`` calls do not duplicate
    lines. Raises ``ValueError`` for an unknown ``log_format``.

    structlog is imported here, not with this module: a library user who never calls
    :func:`configure` does not pay for it.
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r}; expected one of {LOG_FORMATS}")
    import structlog  # noqa: PLC0415 - see the docstring

    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    # Tracebacks never show the values of local variables, in either format: a frame's
    # locals may hold a Secret's data (structlog's console default, rich's or
    # better-exceptions' formatter when installed, prints them). Plain tracebacks only.
    renderer: Processor
    if log_format == "json":
        renderer = structlog.processors.JSONRenderer()
        shared.append(structlog.processors.format_exc_info)  # traceback.format_exception
    else:
        renderer = structlog.dev.ConsoleRenderer(
            colors=False, exception_formatter=structlog.dev.plain_traceback
        )

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
        foreign_pre_chain=[_unpack_log_message, *shared],
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


def configure_unless_configured(*, log_format: LogFormat = "console", verbosity: int = 0) -> bool:
    """:func:`configure` only when the application has not set up logging itself.

    "Set up" means the root logger has a handler (``logging.basicConfig``, a framework's
    config, or an earlier :func:`configure`). Returns whether it configured. This is what a
    :class:`~kcontrol.manager.Manager` does when it starts, so that an operator's log lines
    appear at INFO without a line of set-up, while an application's own logging wins.
    """
    if logging.getLogger().handlers:
        return False
    configure(log_format=log_format, verbosity=verbosity)
    return True
