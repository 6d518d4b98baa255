"""Summarise py-spy's collapsed stacks (``--format raw``) of a kcontrol run: where its CPU went.

Each line of the input is ``frame;frame;...;frame count`` (outermost first). Every sample is
put in the first bucket of :data:`BUCKETS` whose pattern matches one of its frames, looking
from the innermost frame outwards, so a sample spent in aiohttp under the Deployment
controller counts as aiohttp, and one spent in the controller's own code as the controller.
Samples of an idle event loop (``select``/``epoll`` waits) are counted apart and left out of
the shares.

Usage::

    .venv/bin/python -m bench.profile bench/results/profiles/<run>.txt.gz [more ...]

prints, per file, the share of busy samples per bucket and the heaviest leaf frames.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

IDLE = re.compile(r"^(select|epoll_wait|poll) ")
"""Frames of a loop waiting for I/O (py-spy samples idle threads only with --idle)."""

BUCKETS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("event loop (native)", re.compile(r"^Runner\.run \(asyncio/runners\.py")),
    ("watch decode", re.compile(r"kcontrol/client/(_decode|_watch|_fields)\.py|orjson")),
    ("informer, cache", re.compile(r"kcontrol/informers/")),
    ("TLS, sockets", re.compile(r"\bssl\.py|sslproto|SSLObject|_ssl|uvloop/sslproto")),
    ("aiohttp", re.compile(r"aiohttp/|yarl/|multidict/")),
    ("HTTP/1.1 client (kcontrol)", re.compile(r"kcontrol/client/_http\.py")),
    ("client (kcontrol)", re.compile(r"kcontrol/client/")),
    ("events", re.compile(r"kcontrol/events/")),
    ("metrics", re.compile(r"prometheus_client/|kcontrol/workqueue/_metrics")),
    ("logging", re.compile(r"structlog/|logging/__init__")),
    ("workqueue, runner", re.compile(r"kcontrol/workqueue/|kcontrol/controller/_runner")),
    (
        "deployment controller",
        re.compile(r"kcontrol_controllers/deployment/|controllers/deployment/"),
    ),
    (
        "replicaset controller",
        re.compile(r"kcontrol_controllers/replicaset/|controllers/replicaset/"),
    ),
    ("job controller", re.compile(r"kcontrol_controllers/job/|controllers/job/")),
    ("controllers (shared)", re.compile(r"kcontrol_controllers/|controllers/")),
    ("kcontrol (other)", re.compile(r"kcontrol/")),
    ("asyncio, uvloop", re.compile(r"asyncio/|uvloop")),
)


@dataclass
class Summary:
    """The samples of one profile, by bucket and by leaf frame."""

    total: int = 0
    idle: int = 0
    buckets: Counter[str] = field(default_factory=Counter)
    leaves: Counter[str] = field(default_factory=Counter)

    @property
    def busy(self) -> int:
        return self.total - self.idle


def bucket_of(frames: list[str]) -> str:
    """The first bucket whose pattern matches a frame, innermost frame first. A sample whose
    innermost Python frame is the loop's ``run`` was in the loop's native code (uvloop's
    libuv, its TLS and socket calls, callbacks' scheduling)."""
    for frame in reversed(frames):
        for name, pattern in BUCKETS:
            if pattern.search(frame):
                return name
    return "other"


def summarise(lines: Iterable[str]) -> Summary:
    """Count the samples of py-spy's raw collapsed stacks."""
    summary = Summary()
    for line in lines:
        stack, _, count_text = line.rstrip("\n").rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        summary.total += count
        if IDLE.search(frames[-1]):
            summary.idle += count
            continue
        summary.buckets[bucket_of(frames)] += count
        summary.leaves[frames[-1]] += count
    return summary


def render(name: str, summary: Summary, leaves: int = 15) -> str:
    """A plain-text table of the busy samples' shares."""
    busy = max(summary.busy, 1)
    out = [f"# {name}: {summary.total} samples, {summary.idle} idle, {summary.busy} busy"]
    for bucket, count in summary.buckets.most_common():
        out.append(f"{100 * count / busy:6.1f} %  {bucket}")
    out.append(f"## heaviest leaf frames (of {summary.busy} busy samples)")
    for frame, count in summary.leaves.most_common(leaves):
        out.append(f"{100 * count / busy:6.1f} %  {frame}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profiles", nargs="+", type=Path)
    parser.add_argument("--leaves", type=int, default=15, help="leaf frames to list")
    args = parser.parse_args(argv)
    for path in args.profiles:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as lines:
            print(render(str(path), summarise(lines), args.leaves))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
