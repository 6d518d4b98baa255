"""The rollout view's frame: a pure function from a :class:`Snapshot` to a rich renderable.

Layout, top to bottom: the header lines (if any); the Deployment (generation, replica
counts, strategy, ``kubectl rollout status``'s verdict); one progress bar per ReplicaSet
(ready / desired, marked new or old, with revision and images); the conditions; the latest
events; the notice line (if any). Nothing here reads a clock or a terminal: the same snapshot
always renders the same frame.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from kcontrol.client import Object
from kcontrol.metatime import parse_time
from kcontrol.rollout._snapshot import (
    Snapshot,
    event_time,
    is_new_replicaset,
    revision,
    rollout_status,
)

__all__ = ["format_age", "render"]

BAR_WIDTH = 24


def render(snapshot: Snapshot) -> RenderableType:
    """The whole frame for ``snapshot``."""
    parts: list[RenderableType] = []
    if snapshot.header:
        parts.append(Text("\n".join(snapshot.header), style="dim"))
    target = f"{snapshot.namespace}/{snapshot.name}"
    deployment = snapshot.deployment
    if not snapshot.synced:
        body: RenderableType = Text(f"syncing informers for {target}...", style="yellow")
    elif deployment is None:
        body = Text(f"waiting for {target} (no such Deployment yet)", style="yellow")
    else:
        body = Group(
            _deployment_summary(deployment),
            Text(""),
            _replicasets(deployment, snapshot.replicasets),
            _conditions(deployment, snapshot.now),
            _events(snapshot.events, snapshot.now),
        )
    parts.append(
        Panel(body, title=f"deployment {target}", title_align="left", box=box.ROUNDED, expand=True)
    )
    if snapshot.notice:
        parts.append(Text(snapshot.notice, style="bold cyan"))
    return Group(*parts)


def format_age(seconds: float) -> str:
    """kubectl's short durations: ``7s``, ``2m10s``, ``45m``, ``3h12m``, ``5d``."""
    total = max(0, int(seconds))
    if total < 120:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 10:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours, mins = divmod(minutes, 60)
    if hours < 8:
        return f"{hours}h{mins}m" if mins else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    return f"{hours // 24}d"


# -- sections ------------------------------------------------------------------------------


def _deployment_summary(deployment: Object) -> RenderableType:
    metadata = deployment["metadata"]
    spec = deployment.get("spec") or {}
    status = deployment.get("status") or {}
    counts = Text()
    counts.append(f"generation {metadata.get('generation', 0)}")
    counts.append(f" (observed {status.get('observedGeneration', 0)})", style="dim")
    for label, value in (
        ("replicas", f"{status.get('replicas', 0)}/{spec.get('replicas', 1)}"),
        ("updated", status.get("updatedReplicas", 0)),
        ("ready", status.get("readyReplicas", 0)),
        ("available", status.get("availableReplicas", 0)),
    ):
        counts.append("  ")
        counts.append(f"{label} ")
        counts.append(str(value), style="bold")
    if status.get("unavailableReplicas"):
        counts.append("  unavailable ")
        counts.append(str(status["unavailableReplicas"]), style="bold red")
    strategy = Text(_strategy(spec), style="dim")
    if spec.get("paused"):
        strategy.append("  PAUSED", style="bold yellow")
    done, message = rollout_status(deployment)
    verdict = Text(message, style="bold green" if done else "yellow")
    return Group(counts, strategy, verdict)


def _strategy(spec: dict[str, Any]) -> str:
    strategy = spec.get("strategy") or {}
    kind = strategy.get("type", "RollingUpdate")
    if kind != "RollingUpdate":
        return f"strategy {kind}"
    rolling = strategy.get("rollingUpdate") or {}
    return (
        f"strategy RollingUpdate (maxSurge {rolling.get('maxSurge', '25%')}, "
        f"maxUnavailable {rolling.get('maxUnavailable', '25%')})"
    )


def _replicasets(deployment: Object, replicasets: tuple[Object, ...]) -> RenderableType:
    table = Table(box=box.SIMPLE_HEAD, expand=False, pad_edge=False, show_edge=False)
    table.add_column("")
    table.add_column("REPLICASET", no_wrap=True)
    table.add_column("READY / DESIRED", no_wrap=True)
    table.add_column("", justify="right", no_wrap=True)
    table.add_column("PODS", justify="right")
    table.add_column("REV", justify="right")
    table.add_column("IMAGE", no_wrap=True, overflow="ellipsis", min_width=12)
    if not replicasets:
        table.add_row("", Text("no ReplicaSet yet", style="dim"), "", "", "", "", "")
    for replicaset in replicasets:
        spec = replicaset.get("spec") or {}
        status = replicaset.get("status") or {}
        desired = int(spec.get("replicas", 1))
        ready = int(status.get("readyReplicas", 0))
        new = is_new_replicaset(deployment, replicaset)
        bar = ProgressBar(
            total=max(desired, ready, 1),
            completed=ready,
            width=BAR_WIDTH,
            complete_style="green" if new else "blue",
            finished_style="bold green" if new else "blue",
        )
        table.add_row(
            Text("new", style="bold green") if new else Text("old", style="dim"),
            replicaset["metadata"]["name"],
            bar,
            Text(f"{ready}/{desired}", style="bold" if new else ""),
            str(status.get("replicas", 0)),
            str(revision(replicaset) or "-"),
            ", ".join(_images(replicaset)),
        )
    return table


def _images(replicaset: Object) -> list[str]:
    pod_spec = ((replicaset.get("spec") or {}).get("template") or {}).get("spec") or {}
    return [c.get("image", "?") for c in pod_spec.get("containers") or []]


def _conditions(deployment: Object, now: datetime) -> RenderableType:
    table = Table(box=box.SIMPLE_HEAD, expand=False, pad_edge=False, show_edge=False)
    for name in ("CONDITION", "STATUS", "REASON", "UPDATED", "MESSAGE"):
        table.add_column(name, no_wrap=name != "MESSAGE", overflow="fold")
    conditions = (deployment.get("status") or {}).get("conditions") or []
    if not conditions:
        table.add_row(Text("none yet", style="dim"), "", "", "", "")
    for condition in conditions:
        value = condition.get("status", "Unknown")
        style = {"True": "green", "False": "red"}.get(value, "yellow")
        updated = parse_time(condition.get("lastUpdateTime"))
        table.add_row(
            condition.get("type", "?"),
            Text(value, style=style),
            condition.get("reason", ""),
            format_age((now - updated).total_seconds()) if updated else "",
            condition.get("message", ""),
        )
    return Padding(table, (1, 0, 0, 0))


def _events(events: tuple[Object, ...], now: datetime) -> RenderableType:
    table = Table(box=box.SIMPLE_HEAD, expand=False, pad_edge=False, show_edge=False)
    for name in ("AGE", "TYPE", "REASON", "OBJECT", "MESSAGE"):
        table.add_column(name, no_wrap=name != "MESSAGE", overflow="fold")
    if not events:
        table.add_row("", "", Text("no events yet", style="dim"), "", "")
    for event in events:
        involved = event.get("involvedObject") or {}
        kind = event.get("type", "Normal")
        count = event.get("count") or 1
        age = format_age((now - event_time(event)).total_seconds())
        table.add_row(
            f"{age} (x{count})" if count > 1 else age,
            Text(kind, style="yellow" if kind == "Warning" else ""),
            event.get("reason", ""),
            f"{involved.get('kind', '?')}/{involved.get('name', '?')}".lower(),
            event.get("message") or event.get("note") or "",
        )
    return Padding(table, (1, 0, 0, 0))
