"""Workqueue metrics as a Prometheus scrape sees them, after client-go's metrics_test.go."""

from __future__ import annotations

import asyncio
import gc
import itertools

import pytest
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest

from kcontrol.clock import FakeClock
from kcontrol.workqueue import DURATION_BUCKETS, Queue, RateLimitingQueue

FAMILIES = {
    "workqueue_depth": ("gauge", "Current depth of workqueue"),
    "workqueue_adds_total": ("counter", "Total number of adds handled by workqueue"),
    "workqueue_retries_total": ("counter", "Total number of retries handled by workqueue"),
    "workqueue_queue_duration_seconds": (
        "histogram",
        "How long in seconds an item stays in workqueue before being requested.",
    ),
    "workqueue_work_duration_seconds": (
        "histogram",
        "How long in seconds processing an item from workqueue takes.",
    ),
    "workqueue_unfinished_work_seconds": (
        "gauge",
        "How many seconds of work has done that is in progress and hasn't been observed by "
        "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
        "threads by observing the rate at which this increases.",
    ),
    "workqueue_longest_running_processor_seconds": (
        "gauge",
        "How many seconds has the longest running processor for workqueue been running.",
    ),
}


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


def value(registry: CollectorRegistry, sample: str, name: str = "test", **labels: str) -> float:
    got = registry.get_sample_value(sample, {"name": name, **labels})
    assert got is not None, f"no sample {sample} for queue {name!r}"
    return got


def exposition(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode()


def test_families_names_types_help_and_label(registry: CollectorRegistry) -> None:
    RateLimitingQueue(name="test", registry=registry)
    text = exposition(registry)
    for family, (kind, help_text) in FAMILIES.items():
        assert f"# TYPE {family} {kind}\n" in text
        assert f"# HELP {family} {help_text}\n" in text
    sample_names = {s.name for m in registry.collect() for s in m.samples}
    assert sample_names == {
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_retries_total",
        "workqueue_queue_duration_seconds_bucket",
        "workqueue_queue_duration_seconds_count",
        "workqueue_queue_duration_seconds_sum",
        "workqueue_work_duration_seconds_bucket",
        "workqueue_work_duration_seconds_count",
        "workqueue_work_duration_seconds_sum",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
    }
    label_names = {frozenset(s.labels) - {"le"} for m in registry.collect() for s in m.samples}
    assert label_names == {frozenset({"name"})}


def test_histogram_buckets_are_component_base_buckets(registry: CollectorRegistry) -> None:
    # ExponentialBuckets(10e-9, 10, 10), computed by repeated multiplication as in Go.
    assert DURATION_BUCKETS[0] == 1e-8
    assert DURATION_BUCKETS[-1] == 10.0
    assert len(DURATION_BUCKETS) == 10
    assert all(b / a == pytest.approx(10) for a, b in itertools.pairwise(DURATION_BUCKETS))
    Queue(name="test", registry=registry)
    for family in ("workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"):
        les = [
            s.labels["le"]
            for m in registry.collect()
            for s in m.samples
            if s.name == f"{family}_bucket"
        ]
        assert les == [
            "1e-08",
            "1e-07",
            "1e-06",
            "9.999999999999999e-06",
            "9.999999999999999e-05",
            "0.001",
            "0.01",
            "0.1",
            "1.0",
            "10.0",
            "+Inf",
        ]


async def test_metrics(registry: CollectorRegistry) -> None:
    clock = FakeClock(start=0.0)
    q: Queue[str] = Queue(name="test", clock=clock, registry=registry)

    q.add("foo")
    assert value(registry, "workqueue_adds_total") == 1
    assert value(registry, "workqueue_depth") == 1

    clock.step(50e-6)
    item = await q.get()
    assert item == "foo"
    assert value(registry, "workqueue_queue_duration_seconds_sum") == pytest.approx(50e-6)
    assert value(registry, "workqueue_queue_duration_seconds_count") == 1
    # 50 us falls in the 1e-4 bucket: cumulative counts are 0 below it and 1 from it on.
    le = "9.999999999999999e-05"
    assert value(registry, "workqueue_queue_duration_seconds_bucket", le=le) == 1
    assert (
        value(registry, "workqueue_queue_duration_seconds_bucket", le="9.999999999999999e-06") == 0
    )

    # Re-adds while processing collapse into one add.
    for _ in range(5):
        q.add(item)
    assert value(registry, "workqueue_adds_total") == 2
    assert value(registry, "workqueue_depth") == 1

    clock.step(25e-6)
    q.done(item)
    assert value(registry, "workqueue_work_duration_seconds_sum") == pytest.approx(25e-6)
    assert value(registry, "workqueue_work_duration_seconds_count") == 1
    assert value(registry, "workqueue_depth") == 1

    item = await q.get()
    assert item == "foo"
    assert value(registry, "workqueue_queue_duration_seconds_count") == 2
    assert value(registry, "workqueue_queue_duration_seconds_sum") == pytest.approx(75e-6)

    clock.step(0.001)
    assert value(registry, "workqueue_unfinished_work_seconds") == pytest.approx(0.001)
    assert value(registry, "workqueue_longest_running_processor_seconds") == pytest.approx(0.001)

    q.done(item)
    assert value(registry, "workqueue_work_duration_seconds_count") == 2
    assert value(registry, "workqueue_work_duration_seconds_sum") == pytest.approx(25e-6 + 0.001)
    assert value(registry, "workqueue_unfinished_work_seconds") == 0
    assert value(registry, "workqueue_longest_running_processor_seconds") == 0
    assert value(registry, "workqueue_depth") == 0


async def test_unfinished_work_sums_ages_and_longest_takes_the_oldest(
    registry: CollectorRegistry,
) -> None:
    clock = FakeClock(start=0.0)
    q: Queue[str] = Queue(name="test", clock=clock, registry=registry)
    q.add("a")
    q.add("b")
    await q.get()
    clock.step(2)
    await q.get()
    clock.step(1)
    assert value(registry, "workqueue_unfinished_work_seconds") == pytest.approx(3 + 1)
    assert value(registry, "workqueue_longest_running_processor_seconds") == pytest.approx(3)


async def test_retries_count_every_add_after(registry: CollectorRegistry) -> None:
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(name="test", clock=clock, registry=registry)
    q.add_after("a", 1)
    q.add_after("a", 2)  # collapsed into the earlier wait, still a retry
    q.add_after("b", 0)  # immediate, still a retry
    q.add_rate_limited("c")
    assert value(registry, "workqueue_retries_total") == 4
    q.shutdown()
    q.add_after("d", 1)  # ignored while shutting down: not counted
    assert value(registry, "workqueue_retries_total") == 4


async def test_unnamed_queue_records_nothing(registry: CollectorRegistry) -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue(registry=registry)
    q.add("a")
    q.add_after("b", 0)
    await q.get()
    assert list(registry.collect()) == []
    assert Queue(name="", registry=registry).name is None
    assert list(registry.collect()) == []


def test_many_queues_share_families_and_sum_per_name(registry: CollectorRegistry) -> None:
    queues = [Queue(name="shared", registry=registry) for _ in range(3)]
    other = Queue(name="other", registry=registry)
    for i, q in enumerate(queues):
        q.add(f"item-{i}")
    other.add("x")
    assert value(registry, "workqueue_adds_total", name="shared") == 3
    assert value(registry, "workqueue_depth", name="shared") == 3
    assert value(registry, "workqueue_adds_total", name="other") == 1


def test_counters_survive_garbage_collected_queues(registry: CollectorRegistry) -> None:
    q: Queue[str] = Queue(name="test", registry=registry)
    q.add("a")
    q.add("b")
    assert value(registry, "workqueue_depth") == 2
    del q
    gc.collect()
    # Counters stay monotonic; the gone queue's depth no longer counts.
    assert value(registry, "workqueue_adds_total") == 2
    assert value(registry, "workqueue_depth") == 0
    fresh: Queue[str] = Queue(name="test", registry=registry)
    fresh.add("c")
    assert value(registry, "workqueue_adds_total") == 3
    assert value(registry, "workqueue_depth") == 1


def test_default_registry_is_the_global_one() -> None:
    name = "kcontrol-test-default-registry"
    first: Queue[str] = Queue(name=name)
    second: Queue[str] = Queue(name=name)  # same name twice on one registry must not raise
    first.add("a")
    second.add("a")
    assert REGISTRY.get_sample_value("workqueue_adds_total", {"name": name}) == 2


async def test_scrape_from_another_thread(registry: CollectorRegistry) -> None:
    q: Queue[int] = Queue(name="test", registry=registry)
    for i in range(100):
        q.add(i)
    text = await asyncio.to_thread(exposition, registry)
    assert 'workqueue_depth{name="test"} 100.0' in text
