"""kcontrol.logging: structlog and stdlib logs through one renderer, klog-style verbosity."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from kcontrol import logging as kcontrol_logging

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


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_lines_from_structlog_and_stdlib() -> None:
    stream = io.StringIO()
    kcontrol_logging.configure(log_format="json", verbosity=0, stream=stream)
    structlog.get_logger("kcontrol.test").info("synced", key="ns/a", retries=2)
    logging.getLogger("kcontrol.other").warning("plain %s", "message")
    try:
        raise ValueError("boom")
    except ValueError as error:
        structlog.get_logger("kcontrol.test").error("sync failed", key="ns/b", exc_info=error)
    first, second, third = lines(stream)
    assert first["event"] == "synced"
    assert first["key"] == "ns/a"
    assert first["retries"] == 2
    assert first["level"] == "info"
    assert first["logger"] == "kcontrol.test"
    assert str(first["timestamp"]).endswith("Z")
    assert second["event"] == "plain message"
    assert second["level"] == "warning"
    assert second["logger"] == "kcontrol.other"
    assert third["level"] == "error"
    assert "ValueError: boom" in str(third["exception"])


def test_console_format_is_one_readable_line() -> None:
    stream = io.StringIO()
    kcontrol_logging.configure(log_format="console", stream=stream)
    structlog.get_logger("kcontrol.test").info("caches are synced", controller="widgets")
    out = stream.getvalue()
    assert "caches are synced" in out
    assert "controller=widgets" in out
    assert "{" not in out


@pytest.mark.parametrize(
    ("verbosity", "debug_shown", "library_info_shown"),
    [(0, False, False), (3, False, False), (4, True, False), (6, True, True)],
)
def test_verbosity(verbosity: int, debug_shown: bool, library_info_shown: bool) -> None:
    stream = io.StringIO()
    kcontrol_logging.configure(verbosity=verbosity, stream=stream)
    structlog.get_logger("kcontrol.test").debug("debug line")
    logging.getLogger("kcontrol.test").info("info line")
    logging.getLogger("aiohttp.access").info("library line")
    events = [line["event"] for line in lines(stream)]
    assert "info line" in events
    assert ("debug line" in events) is debug_shown
    assert ("library line" in events) is library_info_shown
    assert kcontrol_logging.level_for_verbosity(verbosity) == (
        logging.DEBUG if debug_shown else logging.INFO
    )


def test_configure_twice_does_not_duplicate_lines() -> None:
    first, second = io.StringIO(), io.StringIO()
    kcontrol_logging.configure(stream=first)
    kcontrol_logging.configure(stream=second)
    logging.getLogger("kcontrol.test").warning("once")
    assert first.getvalue() == ""
    assert [line["event"] for line in lines(second)] == ["once"]


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown log format"):
        kcontrol_logging.configure(log_format="xml")  # type: ignore[arg-type]
