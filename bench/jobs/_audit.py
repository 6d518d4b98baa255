"""Whose writes: the apiserver's audit log, attributed by user agent (as bench/rollout.py).

Both controller managers use the cluster's admin kubeconfig, as does the benchmark itself, so
the user cannot tell them apart; the user agent can. KCM's job controller sends
``kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/<commit>/job-controller`` (its
events too: its event sink uses the controller's own client), kcontrol-manager
``kcontrol-manager/<identity>/<component>`` (``job-controller`` is the only component that
writes in these runs). The cluster's own kube-controller-manager (garbage collector,
namespace controller, ...) has its job-controller switched off and writes under other
suffixes; kwok, kube-scheduler and the benchmark are "other writers".
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bench.rollout import AuditWrite, read_audit

__all__ = [
    "JOB_CONTROLLER",
    "KCM",
    "KCONTROL",
    "WindowWrites",
    "WriterTail",
    "is_job_controller",
    "writes_between",
]

KCM = "kcm"
KCONTROL = "kcontrol"
JOB_CONTROLLER = "job-controller"


def is_job_controller(impl: str, writer: str, controller: str = JOB_CONTROLLER) -> bool:
    """Whether a writer (:func:`bench.rollout.writer_of` of a user agent) is the job
    controller of the side under test (or the one whose KCM client is named ``controller``:
    bench/sets uses these helpers for its controllers)."""
    if impl == KCONTROL:
        return writer == "kcontrol-manager"
    return writer == f"kube-controller-manager/{controller}"


@dataclass
class WindowWrites:
    """The writes received in a window: the controller's by ``"VERB resource"``, its non-2xx
    answers by ``"VERB resource code"``, every other writer's by writer, and the total."""

    writes: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    others: Counter[str] = field(default_factory=Counter)
    total: int = 0


def writes_between(
    audit: Iterable[AuditWrite],
    impl: str,
    start: float,
    end: float,
    controller: str = JOB_CONTROLLER,
) -> WindowWrites:
    """Attribute the audit log's writes received in ``[start, end)``."""
    result = WindowWrites()
    for w in audit:
        if not start <= w.at < end:
            continue
        result.total += 1
        if is_job_controller(impl, w.writer, controller):
            result.writes[w.key] += 1
            if not 200 <= w.code < 300:
                result.errors[f"{w.key} {w.code}"] += 1
        else:
            result.others[w.writer] += 1
    return result


class WriterTail:
    """Follows the audit log from ``offset`` to tell when the controller under test has
    stopped writing (a line still being written waits for the next poll)."""

    def __init__(
        self, path: Path, offset: int, impl: str, controller: str = JOB_CONTROLLER
    ) -> None:
        self.path = path
        self.offset = offset
        self.impl = impl
        self.controller = controller
        self.last_write = 0.0  # wall-clock time its last write was received (0: none yet)

    def poll(self) -> None:
        with self.path.open("rb") as log:
            log.seek(self.offset)
            data = log.read()
        complete = data.rfind(b"\n") + 1
        if not complete:
            return
        for w in read_audit(self.path, self.offset, self.offset + complete):
            if is_job_controller(self.impl, w.writer, self.controller):
                self.last_write = max(self.last_write, w.at)
        self.offset += complete

    async def wait_quiet(self, quiet: float, longest: float) -> float:
        """Wait until the controller has written nothing for ``quiet`` seconds (at most
        ``longest``); the time of its last write."""
        since = time.time()
        deadline = since + longest
        while time.time() < deadline:
            self.poll()
            if time.time() - max(self.last_write, since) >= quiet:
                break
            await asyncio.sleep(0.25)
        return self.last_write
