"""bench/webhooks/_histogram.py: the API server's histograms read from /metrics text, and the
quantiles Prometheus's histogram_quantile would give."""

from __future__ import annotations

import math

import pytest

from bench.webhooks._histogram import Histogram, counter_by, delta, parse_histogram, quantile

INF = math.inf
METRIC = "apiserver_admission_webhook_admission_duration_seconds"

TEXT = f"""\
# HELP {METRIC} [STABLE] Admission webhook latency
# TYPE {METRIC} histogram
{METRIC}_bucket{{name="m",operation="CREATE",rejected="false",type="admit",le="0.005"}} 1
{METRIC}_bucket{{name="m",operation="CREATE",rejected="false",type="admit",le="0.025"}} 3
{METRIC}_bucket{{name="m",operation="CREATE",rejected="false",type="admit",le="+Inf"}} 4
{METRIC}_sum{{name="m",operation="CREATE",rejected="false",type="admit"}} 0.1
{METRIC}_count{{name="m",operation="CREATE",rejected="false",type="admit"}} 4
{METRIC}_bucket{{name="v",operation="CREATE",rejected="true",type="validating",le="0.005"}} 0
{METRIC}_bucket{{name="v",operation="CREATE",rejected="true",type="validating",le="0.025"}} 2
{METRIC}_bucket{{name="v",operation="CREATE",rejected="true",type="validating",le="+Inf"}} 2
{METRIC}_sum{{name="v",operation="CREATE",rejected="true",type="validating"}} 0.03
{METRIC}_count{{name="v",operation="CREATE",rejected="true",type="validating"}} 2
{METRIC}_bucket{{name="v",operation="CREATE",rejected="false",type="validating",le="0.005"}} 2
{METRIC}_bucket{{name="v",operation="CREATE",rejected="false",type="validating",le="0.025"}} 2
{METRIC}_bucket{{name="v",operation="CREATE",rejected="false",type="validating",le="+Inf"}} 2
{METRIC}_sum{{name="v",operation="CREATE",rejected="false",type="validating"}} 0.004
{METRIC}_count{{name="v",operation="CREATE",rejected="false",type="validating"}} 2
apiserver_request_total{{code="201",resource="configmaps",verb="POST"}} 1
apiserver_request_total{{code="409",resource="configmaps",verb="POST"}} 4
apiserver_request_total{{code="200",resource="configmaps",verb="PATCH"}} 7
apiserver_request_total{{code="200",resource="secrets",verb="PATCH"}} 9
"""


def test_parse_sums_the_series_of_each_type() -> None:
    by_type = parse_histogram(TEXT, METRIC, "type")
    assert by_type["admit"] == Histogram({0.005: 1, 0.025: 3, INF: 4}, 0.1, 4)
    validating = by_type["validating"]
    assert validating.buckets == {0.005: 2, 0.025: 4, INF: 4}
    assert validating.count == 4
    assert validating.mean == pytest.approx(0.034 / 4)


def test_delta_is_the_growth_between_two_scrapes() -> None:
    before = Histogram({0.005: 1, 0.025: 1, INF: 1}, 0.001, 1)
    after = Histogram({0.005: 1, 0.025: 5, INF: 6}, 0.101, 6)
    grown = delta(after, before)
    assert grown.buckets == {0.005: 0, 0.025: 4, INF: 5}
    assert grown.sum == pytest.approx(0.1)
    assert grown.count == 5
    assert delta(after, None) == after


def test_counter_by_filters_and_groups() -> None:
    found = counter_by(TEXT, "apiserver_request_total", "verb", "code", resource="configmaps")
    assert found == {("POST", "201"): 1, ("POST", "409"): 4, ("PATCH", "200"): 7}


BUCKETS = {0.1: 50.0, 0.5: 90.0, 1.0: 100.0, INF: 100.0}


@pytest.mark.parametrize(
    ("name", "q", "buckets", "want"),
    [
        ("median inside the first bucket, from 0", 0.5, BUCKETS, 0.1),
        ("a quarter: half the first bucket", 0.25, BUCKETS, 0.05),
        ("p70: half way through the second", 0.7, BUCKETS, 0.3),
        ("p99: inside the third", 0.99, BUCKETS, 0.95),
        ("in +Inf: the highest finite bound", 0.99, {0.1: 10.0, 0.5: 20.0, INF: 100.0}, 0.5),
        ("nothing observed", 0.5, {0.1: 0.0, INF: 0.0}, math.nan),
        ("no +Inf bucket", 0.5, {0.1: 5.0}, math.nan),
        ("no buckets", 0.5, {}, math.nan),
    ],
)
def test_quantile_as_histogram_quantile(
    name: str, q: float, buckets: dict[float, float], want: float
) -> None:
    got = quantile(q, Histogram(buckets))
    if math.isnan(want):
        assert math.isnan(got), name
    else:
        assert got == pytest.approx(want), name
