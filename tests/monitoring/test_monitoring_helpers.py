"""The helpers the scrape test relies on: which metric names a PromQL expression reads, and
which names a /metrics page serves."""

from __future__ import annotations

import pytest

from tests.monitoring.monitoring_helpers import metric_names, served_names, variable_metric_names


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        pytest.param("up", {"up"}, id="bare"),
        pytest.param('absent(up{job="kcontrol-manager"} == 1)', {"up"}, id="function"),
        pytest.param(
            'sum by (job, name) (rate(workqueue_adds_total{job=~"$job"}[$__rate_interval]))',
            {"workqueue_adds_total"},
            id="grouping-and-grafana-variables",
        ),
        pytest.param(
            "histogram_quantile(0.99, sum(rate(x_seconds_bucket[5m])) by (le, verb))",
            {"x_seconds_bucket"},
            id="trailing-grouping",
        ),
        pytest.param(
            'a / on (namespace, pod) group_left (node) max by (namespace, pod) (b{c="d"}) > 0.9',
            {"a", "b"},
            id="matching",
        ),
        pytest.param(
            'x{code=~"5..|<error>", le="+Inf"} offset 5m and bool y unless z',
            {"x", "y", "z"},
            id="keywords-and-strings",
        ),
        pytest.param("deriv(q[15m]) > 0 and q > 1e3", {"q"}, id="numbers"),
    ],
)
def test_metric_names(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("label_values(leader_election_master_status, job)", {"leader_election_master_status"}),
        ('label_values(workqueue_adds_total{job=~"$job"}, name)', {"workqueue_adds_total"}),
        ("sum(up)", {"up"}),
    ],
)
def test_variable_metric_names(query: str, names: set[str]) -> None:
    assert variable_metric_names(query) == names


def test_served_names() -> None:
    page = "\n".join(
        [
            "# HELP a_total A.",
            "# TYPE a_total counter",
            'a_total{x="1"} 3.0',
            "# HELP kcontrol_events_dropped_total Not yet.",
            "# TYPE kcontrol_events_dropped_total counter",
            "# HELP h_seconds H.",
            "# TYPE h_seconds histogram",
            "# HELP g G.",
            "# TYPE g gauge",
            "g 1",
        ]
    )
    assert served_names(page) == {
        "a_total",
        "a_total_created",
        "kcontrol_events_dropped_total",
        "kcontrol_events_dropped_total_created",
        "h_seconds",
        "h_seconds_bucket",
        "h_seconds_sum",
        "h_seconds_count",
        "h_seconds_created",
        "g",
    }
