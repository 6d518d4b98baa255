"""Request: the queue key round trip, for namespaced and cluster-scoped objects."""

from __future__ import annotations

import pytest

from kcontrol.builder import Request


@pytest.mark.parametrize(
    ("request_", "key"),
    [(Request("ns", "web"), "ns/web"), (Request("", "node-1"), "node-1")],
    ids=["namespaced", "cluster-scoped"],
)
def test_key_round_trip(request_: Request, key: str) -> None:
    assert request_.key == key
    assert str(request_) == key
    assert Request.from_key(key) == request_


def test_requests_are_values() -> None:
    assert {Request("ns", "a"), Request("ns", "a")} == {Request("ns", "a")}
    assert sorted([Request("ns", "b"), Request("a", "z")]) == [
        Request("a", "z"),
        Request("ns", "b"),
    ]
