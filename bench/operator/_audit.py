"""The apiserver's audit log, read for one user: the operator under test.

Each operator runs under a user of its own (the benchmark binds it to ``cluster-admin``), so
its requests are told apart from the benchmark's by the authenticated user, whatever user
agents its clients send (kopf's own session says ``kopf/<version>``, the ``kubernetes``
client it calls ``OpenAPI-Generator/...``, kcontrol its own). The policy logs, at level
``Metadata`` (no bodies), every write by anyone and the operator's watches; nothing else.
The watches tell when the operator is up: it has opened a watch on every kind it serves.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bench.rollout import AUDIT_VERBS, resource_key

__all__ = [
    "PERIODIC",
    "AuditEvent",
    "AuditLog",
    "Writes",
    "audit_policy",
    "parse_event",
    "writes_between",
]

PERIODIC = frozenset({"coordination.k8s.io/leases"})
"""Resources an operator may write on a timer whatever it has to do (a leader-election Lease):
counted as its writes, but never a sign that it is still busy (:meth:`AuditLog.wait_quiet`)."""


def audit_policy(operator_user: str) -> str:
    """The audit policy (YAML): writes by everyone, watches by ``operator_user``."""
    return f"""\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: Metadata
  verbs: ["watch"]
  users: ["{operator_user}"]
- level: None
"""


@dataclass(frozen=True)
class AuditEvent:
    at: float  # requestReceivedTimestamp, seconds since the epoch
    user: str
    user_agent: str
    verb: str  # the audit verb: create, patch, watch, ...
    key: str  # "POST apps/deployments", "PATCH demo.example.com/websites/status", ...
    resource: str  # "apps/deployments" (no subresource)
    code: int  # the response's status code (0 for a watch still open)
    stage: str


def _timestamp(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def parse_event(line: bytes | str) -> AuditEvent | None:
    """One line of a JSON audit log; None for a stage or verb the benchmark does not use
    (writes count at ``ResponseComplete``, watches at ``ResponseStarted``)."""
    event = json.loads(line)
    verb = event.get("verb", "")
    stage = event.get("stage", "")
    if not (
        (verb in AUDIT_VERBS and stage == "ResponseComplete")
        or (verb == "watch" and stage == "ResponseStarted")
    ):
        return None
    ref = event.get("objectRef") or {}
    group, plural = ref.get("apiGroup", ""), ref.get("resource", "")
    method = AUDIT_VERBS.get(verb, "WATCH")
    return AuditEvent(
        at=_timestamp(event["requestReceivedTimestamp"]),
        user=(event.get("user") or {}).get("username", ""),
        user_agent=event.get("userAgent", ""),
        verb=verb,
        key=f"{method} {resource_key(group, plural, ref.get('subresource', ''))}",
        resource=resource_key(group, plural, ""),
        code=int((event.get("responseStatus") or {}).get("code", 0)),
        stage=stage,
    )


@dataclass
class Writes:
    """One user's writes in a window, by ``"VERB resource"``; ``errors`` are the non-2xx
    answers among them (by ``"VERB resource code"``); ``others`` every other writer's, by
    user agent."""

    writes: Counter[str]
    errors: Counter[str]
    others: Counter[str]


def writes_between(events: Iterable[AuditEvent], user: str, start: float, end: float) -> Writes:
    """The writes received in ``[start, end)``: ``user``'s by key, the others' by agent."""
    result = Writes(Counter(), Counter(), Counter())
    for event in events:
        if event.verb == "watch" or not start <= event.at < end:
            continue
        if event.user == user:
            result.writes[event.key] += 1
            if not 200 <= event.code < 300:
                result.errors[f"{event.key} {event.code}"] += 1
        else:
            result.others[event.user_agent.split(" ", 1)[0] or event.user] += 1
    return result


class AuditLog:
    """Follows an audit log file from its current end; :meth:`poll` reads what was added."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0
        self.events: list[AuditEvent] = []
        self._last_write: dict[str, float] = {}  # by user

    def poll(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as log:
            log.seek(self.offset)
            data = log.read()
        complete = data.rfind(b"\n") + 1  # a line still being written waits for next time
        self.offset += complete
        for line in data[:complete].splitlines():
            if line.strip() and (event := parse_event(line)) is not None:
                self.events.append(event)
                if event.verb != "watch" and event.resource not in PERIODIC:
                    self._last_write[event.user] = max(
                        self._last_write.get(event.user, 0), event.at
                    )

    def watched(self, user: str) -> set[str]:
        """The resources ``user`` has opened a watch on."""
        return {e.resource for e in self.events if e.verb == "watch" and e.user == user}

    def last_write(self, user: str) -> float:
        """When the last write by ``user`` read so far was received (0: none), writes to
        :data:`PERIODIC` resources left out."""
        return self._last_write.get(user, 0.0)

    async def wait_watching(self, user: str, resources: set[str], longest: float) -> bool:
        """Wait (at most ``longest`` seconds) until ``user`` watches every one of
        ``resources``; whether it does."""
        deadline = time.monotonic() + longest
        while time.monotonic() < deadline:
            self.poll()
            if resources <= self.watched(user):
                return True
            await asyncio.sleep(0.1)
        return False

    async def wait_quiet(self, user: str, quiet: float, longest: float) -> float:
        """Wait until ``user`` has written nothing for ``quiet`` seconds (at most ``longest``
        seconds), :data:`PERIODIC` resources aside; the time of its last write."""
        since = time.time()
        deadline = since + longest
        while time.time() < deadline:
            self.poll()
            if time.time() - max(self.last_write(user), since) >= quiet:
                break
            await asyncio.sleep(0.25)
        return self.last_write(user)
