"""What the monitoring tests share: deploy/prometheus/'s rules and dashboard, the metric names
a PromQL expression reads, the names a /metrics page serves, and promtool."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kcontrol.envtest import ControlPlaneError, find_binary

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy" / "prometheus"
RULES = PROMETHEUS / "rules.yaml"
DASHBOARD = PROMETHEUS / "dashboard.json"
RULES_TEST = Path(__file__).with_name("rules_test.yaml")
RUNBOOKS = ROOT / "docs" / "manager" / "runbooks.md"

EXTERNAL_METRICS = {
    "up": "Prometheus's own, one per target",
    "kube_pod_container_resource_limits": "kube-state-metrics', the memory limit",
}
"""Metrics the rules and the dashboard read that kcontrol-manager does not serve."""


def rule_groups() -> list[dict[str, Any]]:
    """The ``spec.groups`` of the PrometheusRule, the form ``promtool`` reads."""
    rule = yaml.safe_load(RULES.read_text())
    assert rule["kind"] == "PrometheusRule"
    groups: list[dict[str, Any]] = rule["spec"]["groups"]
    return groups


def alerts() -> list[dict[str, Any]]:
    return [rule for group in rule_groups() for rule in group["rules"] if "alert" in rule]


def promtool() -> Path:
    """promtool, built by ``hack/build-k8s.sh promtool`` (``make assets``)."""
    try:
        return find_binary("promtool")
    except ControlPlaneError as error:
        pytest.fail(f"{error} (hack/build-k8s.sh promtool)")


def dashboard_expressions(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``(panel title, expr)`` of every query of every panel, rows' nested panels included."""
    for panel in panels_of(dashboard["panels"]):
        for target in panel.get("targets") or ():
            yield panel["title"], str(target.get("expr") or "")


def panels_of(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        if panel.get("type") == "row":
            yield from panels_of(panel.get("panels") or [])
        else:
            yield panel


# -- metric names in PromQL -------------------------------------------------------------------

_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "atan2", "inf", "nan",
}  # fmt: skip
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_BRACES = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\[\]]*\]")
# A label list after a grouping or matching keyword: by (a, b), on(a), group_left (c) ...
_LABEL_LIST = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_NUMBER_OR_DURATION = re.compile(r"\b\d[\w.]*")


def metric_names(expr: str) -> set[str]:
    """The names of the metrics ``expr`` selects: every identifier that is not a function
    call, a keyword, a label in a matcher or a grouping list, a duration or a number.
    Grafana's ``$variables`` are dropped first."""
    text = _STRING.sub('""', expr)
    text = re.sub(r"\$\{?\w+(?::\w+)?\}?", "", text)
    text = _BRACES.sub(" ", text)
    text = _RANGE.sub(" ", text)
    text = _LABEL_LIST.sub(" ", text)
    text = _NUMBER_OR_DURATION.sub(" ", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        rest = text[match.end() :].lstrip()
        if rest.startswith("("):
            continue  # a function (or an aggregation without a grouping clause yet)
        name = match.group()
        if name.lower() not in _KEYWORDS:
            names.add(name)
    return names


def variable_metric_names(query: str) -> set[str]:
    """The metric names a Grafana variable's query reads: ``label_values(<selector>, label)``
    (the selector's), or a plain PromQL expression."""
    match = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", query, re.DOTALL)
    return metric_names(match.group(1) if match else query)


# -- names on a /metrics page -----------------------------------------------------------------

_SUFFIXES = {
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("_sum", "_count", "_created"),
    "counter": ("_created",),
}


def served_names(exposition: str) -> set[str]:
    """Every series name a Prometheus scrape of ``exposition`` (the text format) can hold:
    the samples' names, and those of each ``# TYPE``'d family even while it has no sample yet
    (a labelled counter such as ``kcontrol_events_dropped_total`` before its first event)."""
    names = set()
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(maxsplit=3)
            names.add(name)
            names.update(name + suffix for suffix in _SUFFIXES.get(kind.strip(), ()))
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{\s]", line, maxsplit=1)[0])
    return names
