"""A reflector whose resource is not served yet (a CRD not installed): one INFO line, a LIST
every ``not_served_retry_period`` seconds - fixed, not the growing backoff - and one INFO
line when the resource appears, at the next LIST."""

from __future__ import annotations

import itertools
import logging
from typing import Any

import pytest
from informers_fakes import RecordingStore, advance, running, until

from kcontrol.client import Object, Resource
from kcontrol.clock import FakeClock
from kcontrol.errors import NotFound
from kcontrol.informers import Reflector, ReflectorOptions
from kcontrol.testing import Action, FakeClient, capture_logs

WEBSITES = Resource("demo.example.com", "v1", "websites", "Website")
NOT_SERVED_LINE = "resource not served yet, checking again"
SERVED_LINE = "resource served now, synced"


def website(name: str) -> Object:
    return {
        "apiVersion": "demo.example.com/v1",
        "kind": "Website",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"image": "nginx"},
    }


class Crd:
    """The CRD, installed or not: while it is not, LISTs and watches of its resource answer
    404 as the apiserver does. Records the clock time of every LIST."""

    def __init__(self, client: FakeClient, clock: FakeClock) -> None:
        self.installed = False
        self.lists: list[float] = []
        self._clock = clock
        client.prepend_reactor("list", WEBSITES, self._on_list)
        client.prepend_reactor("watch", WEBSITES, self._on_watch)

    def _on_list(self, action: Action) -> None:
        self.lists.append(self._clock.now())
        self._on_watch(action)

    def _on_watch(self, _: Action) -> None:
        if not self.installed:
            raise NotFound("the server could not find the requested resource")


def setup(**options: Any) -> tuple[FakeClock, FakeClient, Crd, Reflector, RecordingStore]:
    clock = FakeClock()
    client = FakeClient([website("home")], resources=[WEBSITES], clock=clock)
    crd = Crd(client, clock)
    store = RecordingStore()
    reflector = Reflector(client, WEBSITES, store, clock=clock, options=ReflectorOptions(**options))
    return clock, client, crd, reflector, store


def lines(logs: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] == event]


def gaps(times: list[float]) -> list[float]:
    return [round(b - a, 6) for a, b in itertools.pairwise(times)]


async def test_lists_at_a_fixed_period_logs_once_then_syncs_at_the_next_check() -> None:
    clock, _, crd, reflector, store = setup()
    with capture_logs(logging.DEBUG) as logs:
        async with running(reflector.run()):
            await until(lambda: len(crd.lists) == 1)
            for _ in range(6):  # 12 s: the exponential backoff would be at 25 s+ by now
                await advance(clock, 1.99)
                await advance(clock, 0.01)
            assert gaps(crd.lists) == [2.0] * 6, "a fixed period, not a growing backoff"
            assert reflector.watching_since is None

            crd.installed = True
            await advance(clock, 1.99)
            assert store.ops == [], "not before the period is over"
            await advance(clock, 0.01)
            await until(lambda: reflector.watching_since is not None)
            assert store.ops == [("replace", ["team/home"], store.ops[0][2])]

    [not_served] = lines(logs, NOT_SERVED_LINE)
    assert not_served["log_level"] == "info"
    assert (not_served["group"], not_served["version"], not_served["resource"]) == (
        "demo.example.com",
        "v1",
        "websites",
    )
    assert not_served["every_seconds"] == 2.0
    [served] = lines(logs, SERVED_LINE)
    assert served["log_level"] == "info"
    assert (served["group"], served["version"], served["resource"]) == (
        "demo.example.com",
        "v1",
        "websites",
    )
    assert not [e for e in logs if e["log_level"] in ("warning", "error")], logs
    assert [e["event"] for e in logs if e["log_level"] == "info"] == [NOT_SERVED_LINE, SERVED_LINE]


async def test_the_period_is_an_option() -> None:
    clock, _, crd, reflector, _ = setup(not_served_retry_period=5.0)
    with capture_logs(logging.INFO) as logs:
        async with running(reflector.run()):
            await until(lambda: len(crd.lists) == 1)
            for _ in range(3):
                await advance(clock, 4.99)
                await advance(clock, 0.01)
    assert gaps(crd.lists) == [5.0] * 3
    assert lines(logs, NOT_SERVED_LINE)[0]["every_seconds"] == 5.0


async def test_a_crd_deleted_later_is_reported_once_more() -> None:
    clock, client, crd, reflector, _ = setup()
    crd.installed = True
    errors: list[Exception] = []
    reflector = Reflector(
        client, WEBSITES, RecordingStore(), clock=clock, watch_error_handler=errors.append
    )
    with capture_logs(logging.INFO) as logs:
        async with running(reflector.run()):
            await until(lambda: reflector.watching_since is not None)
            crd.installed = False
            client.close_watches(WEBSITES)  # the apiserver ends the watches of a deleted CRD
            for _ in range(10):
                await advance(clock, 1.0)
            crd.installed = True
            for _ in range(3):
                await advance(clock, 1.0)
            await until(lambda: reflector.watching_since is not None)
    assert len(lines(logs, NOT_SERVED_LINE)) == 1
    assert len(lines(logs, SERVED_LINE)) == 1
    assert errors and all(isinstance(e, NotFound) for e in errors), errors


async def test_a_streaming_list_answered_404_takes_the_same_path_without_warnings() -> None:
    clock, _, crd, reflector, _ = setup(use_watch_list=True)
    with capture_logs(logging.INFO) as logs:
        async with running(reflector.run()):
            await until(lambda: len(crd.lists) == 1)
            for _ in range(3):
                await advance(clock, 2.0)
            crd.installed = True
            await advance(clock, 2.0)
            await until(lambda: reflector.watching_since is not None)
    assert gaps(crd.lists[:4]) == [2.0] * 3
    assert [e["event"] for e in logs if e["log_level"] != "debug"] == [NOT_SERVED_LINE, SERVED_LINE]


def test_the_period_must_be_positive() -> None:
    with pytest.raises(ValueError, match="not_served_retry_period"):
        ReflectorOptions(not_served_retry_period=0)
