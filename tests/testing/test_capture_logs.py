"""kcontrol.testing.capture_logs: every stdlib record of the block, as structlog shapes them."""

from __future__ import annotations

import logging

from kcontrol.logging import get_logger
from kcontrol.testing import capture_logs


def test_entries_hold_the_event_level_logger_and_context() -> None:
    root = logging.getLogger()
    before = root.level
    log = get_logger("kcontrol.captured", controller="demo")
    with capture_logs() as logs:
        assert root.level == logging.DEBUG
        log.debug("queued", key="ns/a")
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("sync failed", key="ns/a", retries=0)
        logging.getLogger("elsewhere").warning("plain %s", "line")
    assert root.level == before
    log.info("after the block")
    queued, failed, plain = logs
    assert queued == {
        "controller": "demo",
        "key": "ns/a",
        "event": "queued",
        "log_level": "debug",
        "logger": "kcontrol.captured",
    }
    assert failed["event"] == "sync failed"
    assert failed["log_level"] == "error"
    assert (failed["key"], failed["retries"]) == ("ns/a", 0)
    assert failed["exc_info"][0] is ValueError
    assert plain == {"event": "plain line", "log_level": "warning", "logger": "elsewhere"}


def test_a_level_filters_what_is_captured() -> None:
    with capture_logs(logging.WARNING) as logs:
        get_logger("kcontrol.captured").info("skipped")
        get_logger("kcontrol.captured").warning("kept")
    assert [entry["event"] for entry in logs] == ["kept"]
