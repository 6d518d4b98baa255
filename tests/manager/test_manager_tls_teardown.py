"""kcontrol-manager's loop exception handler: uvloop's report of a TLS connection closed here
while the peer was still sending ("Fatal error on SSL protocol ... the handler is closed", seen
when a start-up failure cancels a request mid-flight) is a debug line, not an error with a
traceback; every other report goes to the loop's default handler as before."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kcontrol.manager._process import quiet_tls_teardown
from kcontrol.testing import capture_logs

CLOSED = RuntimeError(
    "unable to perform operation on <TCPTransport closed=True reading=False 0x1>; "
    "the handler is closed"
)


class Recorder(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        super().__init__()
        self.defaults: list[dict[str, Any]] = []

    def default_exception_handler(self, context: dict[str, Any]) -> None:
        self.defaults.append(context)


def test_uvloops_closed_tls_transport_report_is_a_debug_line() -> None:
    loop = Recorder()
    try:
        with capture_logs(logging.DEBUG) as logs:
            quiet_tls_teardown(
                loop, {"message": "Fatal error on SSL protocol\nprotocol: x", "exception": CLOSED}
            )
        assert loop.defaults == []
        (line,) = [e for e in logs if "TLS connection" in e["event"]]
        assert line["log_level"] == "debug"
        assert "exc_info" not in line
    finally:
        loop.close()


def test_every_other_report_goes_to_the_default_handler() -> None:
    loop = Recorder()
    try:
        others = [
            {"message": "Fatal error on SSL protocol", "exception": ValueError("other")},
            {"message": "Task exception was never retrieved", "exception": CLOSED},
            {"message": "Fatal error on SSL protocol"},
        ]
        for context in others:
            quiet_tls_teardown(loop, context)
        assert loop.defaults == others
    finally:
        loop.close()
