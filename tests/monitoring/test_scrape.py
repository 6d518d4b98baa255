"""A real kcontrol-manager, running the deployment and replicaset controllers on the test
cluster, serves every metric that deploy/prometheus/'s rules and dashboard read: a metric
renamed in the code, or misspelt in a rule or panel, fails here. Also the label values the
dashboard's variables and the alerts' descriptions rely on."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import aiohttp
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from kcontrol.client import DEPLOYMENTS
from kcontrol.envtest.cluster import Cluster
from tests.controllers.cluster_helpers import WITHIN, deployment, wait_complete
from tests.integration.helpers import new_client, poll
from tests.monitoring.monitoring_helpers import (
    DASHBOARD,
    EXTERNAL_METRICS,
    RULES,
    dashboard_expressions,
    metric_names,
    served_names,
    variable_metric_names,
)
from tests.processes import LoggedProcess, free_port

pytestmark = pytest.mark.slow

CONTROLLERS = ("deployment-controller", "replicaset-controller")
LEASE = "kcontrol-manager"


def names_used() -> dict[str, set[str]]:
    """Metric name -> where it is read (alert names, dashboard panel titles, variables)."""
    used: dict[str, set[str]] = {}
    rule = yaml.safe_load(RULES.read_text())
    for group in rule["spec"]["groups"]:
        for entry in group["rules"]:
            for name in metric_names(entry["expr"]):
                used.setdefault(name, set()).add(f"alert {entry['alert']}")
    dashboard = json.loads(DASHBOARD.read_text())
    for title, expr in dashboard_expressions(dashboard):
        for name in metric_names(expr):
            used.setdefault(name, set()).add(f"panel {title!r}")
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            for name in variable_metric_names(variable["definition"]):
                used.setdefault(name, set()).add(f"variable ${variable['name']}")
    return used


async def scrape(port: int) -> str:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session,
        session.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        assert response.status == 200
        return await response.text()


def samples(page: str, family: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples of ``family`` (its name without ``_total``), by their sorted labels."""
    found = {}
    for metric in text_string_to_metric_families(page):
        if metric.name == family:
            for sample in metric.samples:
                if sample.name.endswith("_created"):
                    continue
                found[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def label_values(page: str, family: str, label: str) -> set[str]:
    return {dict(labels)[label] for labels in samples(page, family) if label in dict(labels)}


async def test_every_metric_the_rules_and_dashboard_read_is_served(
    cluster: Cluster, cluster_namespace: str, tmp_path: Path
) -> None:
    port = free_port()
    manager = LoggedProcess(
        [
            str(Path(sys.executable).with_name("kcontrol-manager")),
            f"--kubeconfig={cluster.kubeconfig_path}",
            f"--controllers={','.join(CONTROLLERS)}",
            # Its own Lease, in the test's namespace: leader_election_master_status is served.
            f"--leader-elect-resource-namespace={cluster_namespace}",
            f"--leader-elect-resource-name={LEASE}",
            "--secure-port=0",
            "--metrics-bind-address=127.0.0.1",
            f"--metrics-port={port}",
            "--log-format=json",
        ],
        tmp_path / "kcontrol-manager.log",
    )
    try:
        async with new_client(cluster) as client:
            # A rollout, so that the controllers sync, write and record events.
            await client.create(DEPLOYMENTS, deployment("web", 2), namespace=cluster_namespace)
            await wait_complete(client, cluster_namespace, "web")

        page = ""

        async def leading() -> bool:
            nonlocal page
            assert manager.running(), manager.log()[-3000:]
            page = await scrape(port)
            status = samples(page, "leader_election_master_status")
            return status.get((("name", LEASE),)) == 1.0

        await poll(leading, within=WITHIN, message=lambda: page[-2000:])

        served = served_names(page)
        used = names_used()
        missing = {
            name: sorted(where)
            for name, where in used.items()
            if name not in served and name not in EXTERNAL_METRICS
        }
        assert not missing, f"read by the rules or dashboard, not served: {missing}"
        assert set(EXTERNAL_METRICS) <= set(used), "an external metric no longer read"
        assert not set(EXTERNAL_METRICS) & served, "now served: drop it from EXTERNAL_METRICS"

        # The dashboard's $controller: the queue names KCM serves too, and the same values
        # in controller_runtime_*'s `controller` label.
        queues = label_values(page, "workqueue_adds", "name")
        assert queues == {"deployment", "replicaset"}
        assert label_values(page, "controller_runtime_reconcile", "controller") == queues
        reconciled = samples(page, "controller_runtime_reconcile")
        assert reconciled[(("controller", "deployment"), ("result", "success"))] > 0
        assert label_values(page, "rest_client_requests", "code") >= {"200", "201"}
        assert label_values(page, "kcontrol_events_written", "component") & set(CONTROLLERS)

        manager.signal(signal.SIGTERM)
        assert await manager.wait(60) == 0, manager.log()[-3000:]
    finally:
        manager.stop()
