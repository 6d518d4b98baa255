"""deploy/prometheus/dashboard.json: loads as a Grafana dashboard, asks for a data source and
a controller, every panel has a query on that data source, and the kustomization ships it."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest
import yaml

from kcontrol.envtest import find_binary
from tests.monitoring.monitoring_helpers import (
    DASHBOARD,
    PROMETHEUS,
    ROOT,
    dashboard_expressions,
    metric_names,
    panels_of,
)


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def variables(dashboard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {variable["name"]: variable for variable in dashboard["templating"]["list"]}


def test_it_loads_as_an_importable_dashboard(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] == "kcontrol-manager"
    assert dashboard["title"]
    assert isinstance(dashboard["schemaVersion"], int)
    assert "id" not in dashboard or dashboard["id"] is None, "an id ties it to one Grafana"
    assert "__inputs" not in dashboard, "the datasource variable replaces import inputs"


def test_datasource_and_controller_variables(dashboard: dict[str, Any]) -> None:
    found = variables(dashboard)
    assert found["datasource"]["type"] == "datasource"
    assert found["datasource"]["query"] == "prometheus"
    # The workqueue's `name` label, which kube-controller-manager shares ("deployment",
    # "replicaset"); kcontrol labels controller_runtime_* with the same value.
    controller = found["controller"]["definition"]
    assert re.fullmatch(r"label_values\(workqueue_\w+\{.*\}, name\)", controller)
    for name in ("job", "instance", "controller"):
        assert found[name]["type"] == "query"
        assert found[name]["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert found[name]["includeAll"] and found[name]["multi"]


def test_every_panel_has_a_query_on_the_datasource_variable(dashboard: dict[str, Any]) -> None:
    panels = list(panels_of(dashboard["panels"]))
    assert len(panels) >= 20
    for panel in panels:
        targets = panel.get("targets") or []
        assert targets, f"panel {panel['title']!r} has no query"
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        for target in targets:
            assert str(target.get("expr") or "").strip(), f"{panel['title']!r}: empty query"
            assert target["datasource"] == panel["datasource"]
        assert len({t["refId"] for t in targets}) == len(targets)
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_every_variable_a_query_uses_is_defined(dashboard: dict[str, Any]) -> None:
    defined = set(variables(dashboard)) | {"__rate_interval", "__interval", "__range"}
    queries = [expr for _, expr in dashboard_expressions(dashboard)]
    queries += [v["definition"] for v in variables(dashboard).values() if "definition" in v]
    for query in queries:
        used = set(re.findall(r"\$\{?(\w+)", query))
        assert used <= defined, f"{query}: {used - defined} undefined"


def test_every_query_filters_on_job_instance_and_controller(dashboard: dict[str, Any]) -> None:
    """So that kcontrol-manager and kube-controller-manager can be put side by side, one
    controller at a time."""
    for title, expr in dashboard_expressions(dashboard):
        for metric, selector in re.findall(r"\b(\w+)\{([^}]*)\}", expr):
            assert 'job=~"$job"' in selector, f"{title}: {expr}"
            assert 'instance=~"$instance"' in selector, f"{title}: {expr}"
            if metric.startswith("workqueue_"):
                assert 'name=~"$controller"' in selector, f"{title}: {expr}"
            if metric.startswith("controller_runtime_"):
                assert 'controller=~"$controller"' in selector, f"{title}: {expr}"


# The panels the issue asks for, by the metrics they read.
REQUIRED = {
    "reconcile rate": "controller_runtime_reconcile_total",
    "reconcile errors": "controller_runtime_reconcile_errors_total",
    "reconcile latency": "controller_runtime_reconcile_time_seconds_bucket",
    "active workers": "controller_runtime_active_workers",
    "workqueue depth": "workqueue_depth",
    "workqueue adds": "workqueue_adds_total",
    "queue latency": "workqueue_queue_duration_seconds_bucket",
    "retries": "workqueue_retries_total",
    "requests by code and verb": "rest_client_requests_total",
    "request latency": "rest_client_request_duration_seconds_bucket",
    "rate limiter wait": "rest_client_rate_limiter_duration_seconds_bucket",
    "leader status": "leader_election_master_status",
    "cpu": "process_cpu_seconds_total",
    "rss": "process_resident_memory_bytes",
    "open fds": "process_open_fds",
}


def test_it_has_the_panels_operators_expect(dashboard: dict[str, Any]) -> None:
    read = set().union(*(metric_names(expr) for _, expr in dashboard_expressions(dashboard)))
    missing = {what: name for what, name in REQUIRED.items() if name not in read}
    assert not missing
    latency = [e for _, e in dashboard_expressions(dashboard) if "reconcile_time" in e]
    assert any("histogram_quantile(0.5," in e for e in latency)
    assert any("histogram_quantile(0.99," in e for e in latency)
    code_and_verb = [e for _, e in dashboard_expressions(dashboard) if "rest_client_requests" in e]
    assert any("code)" in e for e in code_and_verb) and any("method)" in e for e in code_and_verb)


def test_the_kustomization_ships_it_and_the_rules() -> None:
    """``kubectl kustomize deploy/prometheus/``: the dashboard as a ConfigMap for Grafana's
    sidecar, byte for byte, and the PrometheusRule beside the ServiceMonitor."""
    done = subprocess.run(
        [str(find_binary("kubectl")), "kustomize", str(PROMETHEUS)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rendered = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(done.stdout)}
    configmap = rendered["ConfigMap", "kcontrol-manager-dashboard"]
    assert configmap["metadata"]["namespace"] == "kcontrol-system"
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["data"] == {"kcontrol-manager.json": DASHBOARD.read_text()}
    rule = rendered["PrometheusRule", "kcontrol-manager"]
    monitor = rendered["ServiceMonitor", "kcontrol-manager"]
    assert rule["metadata"]["namespace"] == monitor["metadata"]["namespace"]
    # The rules select job="kcontrol-manager": the value of the Service label named jobLabel.
    service = next(
        d
        for d in yaml.safe_load_all((ROOT / "deploy" / "deployment.yaml").read_text())
        if d and d["kind"] == "Service" and d["metadata"]["name"] == "kcontrol-manager-metrics"
    )
    assert service["metadata"]["labels"][monitor["spec"]["jobLabel"]] == "kcontrol-manager"
    assert 'job="kcontrol-manager"' in yaml.safe_dump(rule)
