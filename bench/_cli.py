"""The command line the side-by-side suites share (``python -m bench.<suite>``).

A suite's ``__main__`` keeps what is its own - its sizes and sides, its ``measure``, its
tables and its results file's parameters - and takes the rest from here:

- the parser (:func:`suite_parser`) and the options every suite spells alike: the outputs
  (``--out``, ``--json``, ``--plot``, ``--dump``, ``--merge``: :func:`add_output_options`),
  the client limits (``--qps``: :func:`add_client_limits`), the pod timings (``--pod-ready-delay``:
  :func:`add_ready_delays`, :func:`ready_delays`) and the controller process under
  test (``--profile``, ``--keep-logs``, ``--kcm-gomaxprocs``: :func:`add_controller_options`);
- the runs (:func:`collect_runs`): those of the ``--merge`` files, then ``--runs`` measured
  ones, the list written to ``--dump`` after each (:func:`dump_after_each`);
- the outputs (:func:`publish`): the tables printed and written as Markdown (``--out``), the
  results file (``--json``, bench/_results.py's envelope) and the plot (``--plot``).

The raw runs' file format (``--dump``, ``--merge``) is bench/_results.py's
(:func:`bench._results.dump_runs`).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import json
import subprocess
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from bench._results import _finite, command_line, dump_runs, write_results

__all__ = [
    "Results",
    "add_client_limits",
    "add_controller_options",
    "add_keep_logs",
    "add_output_options",
    "add_ready_delays",
    "collect_runs",
    "dump_after_each",
    "publish",
    "ready_delays",
    "suite_parser",
]

ROOT = Path(__file__).resolve().parents[1]
GOMAXPROCS_HELP = "run kube-controller-manager with GOMAXPROCS set to this (0: every core)"

R = TypeVar("R")
Plot = Callable[[dict[str, Any], Path], Path]
"""A suite's plot: from the results document (as bench/report.py reads it) to the PNG written."""


def suite_parser(suite: ModuleType) -> argparse.ArgumentParser:
    """The parser of ``python -m <suite>``, the package's docstring as its description."""
    return argparse.ArgumentParser(
        prog=f"python -m {suite.__name__}",
        description=suite.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def add_client_limits(p: argparse.ArgumentParser, default: str) -> None:
    """``--qps``: the client limits both sides run at (bench/rollout.py's ``Limit``)."""
    p.add_argument(
        "--qps",
        default=default,
        help="comma-separated client limits: QPS:BURST or unthrottled (both sides alike)",
    )


def add_ready_delays(p: argparse.ArgumentParser, default: str = "1") -> None:
    """``--pod-ready-delay``: kwok's seconds from a pod's start to Ready, comma-separated;
    each is a cell of the suite's matrix, on a cluster of its own (:func:`ready_delays`)."""
    p.add_argument(
        "--pod-ready-delay",
        default=default,
        help="comma-separated seconds from a pod's start to Ready (kwok), each a cell of the "
        "matrix with a cluster of its own: 1,0 measures pods Ready 1 s after they start and "
        "at once",
    )


def ready_delays(text: str) -> list[float]:
    """``--pod-ready-delay``'s seconds, in the order given, each once."""
    delays = list(dict.fromkeys(float(d) for d in text.split(",") if d.strip()))
    if not delays or any(d < 0 for d in delays):
        raise SystemExit(f"--pod-ready-delay {text!r}: seconds, comma-separated, none negative")
    return delays


def add_output_options(p: argparse.ArgumentParser, *, plot: bool = False) -> None:
    """``--out``, ``--json``, ``--plot`` (when the suite draws one), ``--dump``, ``--merge``:
    what :func:`collect_runs` and :func:`publish` read."""
    p.add_argument("--out", help="write the tables (Markdown) here")
    p.add_argument("--json", help="write the results (bench/_results.py's format) here")
    if plot:
        p.add_argument("--plot", help="write the plot (PNG) here")
    p.add_argument("--dump", help="write the raw runs (JSON) here after every run")
    p.add_argument("--merge", action="append", help="earlier --dump files to include")


def add_keep_logs(p: argparse.ArgumentParser, directory: str) -> None:
    """``--keep-logs``: keep ``directory`` (``"each run's"``, ``"the cluster's"``) afterwards."""
    p.add_argument("--keep-logs", action="store_true", help=f"keep {directory} directory")


def add_controller_options(
    p: argparse.ArgumentParser, *, directory: str, gomaxprocs_help: str = GOMAXPROCS_HELP
) -> None:
    """``--profile``, ``--keep-logs`` (of ``directory``) and ``--kcm-gomaxprocs``: the
    suites that run a controller manager against kube-controller-manager on a cluster."""
    p.add_argument(
        "--profile",
        help="directory for py-spy's collapsed stacks of each kcontrol run (figures of such "
        "runs are not for quoting: the sampler shares the cores)",
    )
    add_keep_logs(p, directory)
    p.add_argument("--kcm-gomaxprocs", type=int, default=0, help=gomaxprocs_help)


def dump_after_each(path: str | None, runs: list[Any]) -> Callable[[object], None]:
    """A callback for each finished run: all of ``runs`` so far to ``path`` (``--dump``), when
    one is given."""

    def on_run(_: object) -> None:
        if path:
            dump_runs(path, runs)

    return on_run


def collect_runs(
    args: argparse.Namespace,
    load: Callable[[str], list[R]],
    measure: Callable[[list[R]], Coroutine[Any, Any, None]],
) -> list[R]:
    """The runs of the ``--merge`` files (read by ``load``), then, when ``--runs`` is above
    zero, those ``measure`` appends to the same list."""
    runs: list[R] = []
    for path in args.merge or []:
        runs.extend(load(path))
    if args.runs > 0:
        asyncio.run(measure(runs))
    return runs


@dataclass
class Results:
    """A suite's results file beyond the envelope :func:`publish` fills in (times, command):
    ``write_results``'s arguments, ``extra`` its suite-specific keys in order."""

    machine: dict[str, Any]
    parameters: dict[str, Any]
    points: list[dict[str, Any]]
    extra: dict[str, Any] = field(default_factory=dict)


def publish(
    args: argparse.Namespace,
    *,
    suite: str,
    title: str,
    started: datetime.datetime,
    tables: str,
    raw: str,
    runs: list[Any],
    results: Callable[[], Results],
    plot: Plot | None = None,
) -> None:
    """Print the tables and the raw runs, then write what the options ask for: ``--out`` (the
    Markdown under ``# {title} (generated)``), ``--json`` (the envelope, ``results()``, then
    the raw ``runs``) and ``--plot`` (``plot`` of the same document as bench/report.py reads
    it). ``results`` is called only when a file needs it."""
    print(tables)
    print(raw)
    command = command_line(f"bench.{suite}")
    if args.out:
        write_tables(args.out, title, command, f"bench/{suite}/__init__.py", tables, raw)
    plot_path = getattr(args, "plot", None) if plot is not None else None
    if not args.json and not plot_path:
        return
    document = results()
    finished = datetime.datetime.now(datetime.UTC)
    if args.json:
        write_results(
            args.json,
            suite,
            started=started,
            finished=finished,
            machine=document.machine,
            command=command,
            parameters=document.parameters,
            points=document.points,
            **document.extra,
            runs=[dataclasses.asdict(r) for r in runs],
        )
    if plot is not None and plot_path:
        figures = {
            "started": started,
            "finished": finished,
            "machine": document.machine,
            "command": command,
            "parameters": document.parameters,
            "points": document.points,
        }
        # as bench/report.py reads it: NaN (not measured) as None
        doc = json.loads(json.dumps(_finite(figures), default=str))
        doc["measured"] = {"date": f"{started:%Y-%m-%d}"}
        print(plot(doc, Path(plot_path)))


def write_tables(path: str, title: str, command: str, method: str, tables: str, raw: str) -> None:
    """The Markdown file of ``--out``: a header (command, time, commit, method), the tables,
    the raw runs."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(
        f"# {title} (generated)\n\n"
        f"- Command: `{command}`\n"
        f"- Finished {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC at commit "
        f"{commit} (and the working tree of the time); method: `{method}`\n\n"
        + tables
        + "\n\n## Raw runs\n\n"
        + raw
        + "\n"
    )
