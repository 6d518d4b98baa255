"""kcontrol.logging: one style (a bound logger, key-value context) that always logs through
the standard library, so an application that only sets up stdlib logging sees every line;
and kcontrol's process set-up, which renders the context as fields."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from kcontrol import logging as kcontrol_logging
from kcontrol.logging import LogMessage, get_logger

CHATTY = ("aiohttp", "asyncio", "kubernetes_asyncio", "urllib3")


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in CHATTY}
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        for name, old in levels.items():
            logging.getLogger(name).setLevel(old)
        structlog.reset_defaults()


@pytest.fixture
def stdlib_only() -> Iterator[io.StringIO]:
    """What a library user does: plain stdlib logging, structlog never configured."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(funcName)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        root.removeHandler(handler)


def test_a_stdlib_only_user_sees_every_line_with_its_context(
    stdlib_only: io.StringIO, capsys: pytest.CaptureFixture[str]
) -> None:
    log = get_logger("kcontrol.test").bind(controller="demo")
    log.info("sync failed", key="default/web", retries=3)
    log.debug("not at this level", key="x")
    log.warning("odd value", reason="a b", empty="", quote='say "hi"', n=None)

    def call_site() -> None:
        log.error("from here")

    call_site()
    lines = stdlib_only.getvalue().splitlines()
    assert lines == [
        "INFO kcontrol.test test_a_stdlib_only_user_sees_every_line_with_its_context: "
        "sync failed controller=demo key=default/web retries=3",
        "WARNING kcontrol.test test_a_stdlib_only_user_sees_every_line_with_its_context: "
        'odd value controller=demo reason="a b" empty="" quote="say \\"hi\\"" n=None',
        "ERROR kcontrol.test call_site: from here controller=demo",
    ]
    out, err = capsys.readouterr()
    assert (out, err) == ("", ""), "nothing printed outside stdlib logging"


def test_stdlib_levels_decide_what_is_logged(stdlib_only: io.StringIO) -> None:
    logging.getLogger("kcontrol.quiet").setLevel(logging.ERROR)
    try:
        log = get_logger("kcontrol.quiet")
        assert not log.is_enabled_for(logging.WARNING)
        log.warning("dropped")
        log.error("kept")
    finally:
        logging.getLogger("kcontrol.quiet").setLevel(logging.NOTSET)
    assert stdlib_only.getvalue().splitlines() == [
        "ERROR kcontrol.quiet test_stdlib_levels_decide_what_is_logged: kept"
    ]


def test_records_carry_the_event_and_context_apart() -> None:
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("kcontrol.fields")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        log = get_logger("kcontrol.fields", reflector="pods")
        assert log.name == "kcontrol.fields"
        assert log.context == {"reflector": "pods"}
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("list failed", rv="5")
        log.bind(reflector="nodes").debug("relisting", stack_info=True)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    first, second = records
    assert isinstance(first.msg, LogMessage)
    assert first.msg.event == "list failed"
    assert first.msg.context == {"reflector": "pods", "rv": "5"}
    assert first.levelno == logging.ERROR
    assert first.exc_info is not None and first.exc_info[0] is ValueError
    assert isinstance(second.msg, LogMessage)
    assert second.msg.context == {"reflector": "nodes"}, "bind replaces a key"
    assert second.stack_info
    assert first.funcName == "test_records_carry_the_event_and_context_apart"


def test_configure_renders_the_context_as_json_fields() -> None:
    stream = io.StringIO()
    kcontrol_logging.configure(log_format="json", stream=stream)
    log = get_logger("kcontrol.test", controller="widgets")
    log.info("synced", key="ns/a", retries=2)
    try:
        raise ValueError("boom")
    except ValueError as error:
        log.error("sync failed", key="ns/b", exc_info=error)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["event"] == "synced"
    assert (first["controller"], first["key"], first["retries"]) == ("widgets", "ns/a", 2)
    assert first["level"] == "info"
    assert first["logger"] == "kcontrol.test"
    assert second["level"] == "error"
    assert second["key"] == "ns/b"
    assert "ValueError: boom" in second["exception"]


def test_configure_console_shows_the_context_as_pairs() -> None:
    stream = io.StringIO()
    kcontrol_logging.configure(log_format="console", stream=stream)
    get_logger("kcontrol.test").info("caches are synced", controller="widgets")
    out = stream.getvalue()
    assert "caches are synced" in out
    assert "controller=widgets" in out
    assert out.count("controller=widgets") == 1, "the pairs are fields, not also in the event"


@pytest.mark.parametrize("log_format", kcontrol_logging.LOG_FORMATS)
def test_tracebacks_never_show_local_variables(log_format: kcontrol_logging.LogFormat) -> None:
    """A frame's locals may hold a Secret's data (a transform failing on it): the traceback
    names the frames and the exception, never the values (structlog's console renderer shows
    them by default when rich or better-exceptions is installed)."""
    canary = "canary-3e9b51-password"
    stream = io.StringIO()
    kcontrol_logging.configure(log_format=log_format, stream=stream)

    def transform(secret: dict[str, dict[str, str]]) -> None:
        data = dict(secret["data"])  # noqa: F841 - a local holding the value
        raise KeyError("checksum")

    try:
        transform({"data": {"password": canary}})
    except KeyError as error:
        get_logger("kcontrol.test").error("transform failed", exc_info=error)
    out = stream.getvalue()
    assert "transform failed" in out and "KeyError" in out
    assert "in transform" in out, "the frames are shown"
    assert canary not in out
