"""Replica maths (upstream deployment_util_test.go: ResolveFenceposts, MaxUnavailable,
MinAvailable, NewRSNewReplicas, GetReplicaSetFraction / proportions)."""

from __future__ import annotations

import pytest
from deployment_fixtures import new_deployment, new_replica_set
from hypothesis import given
from hypothesis import strategies as st

from kcontrol_controllers.deployment._replicas import (
    IntOrPercentError,
    max_surge,
    max_unavailable,
    min_available,
    new_rs_new_replicas,
    proportional_sizes,
    replica_set_fraction,
    replica_set_proportion,
    resolve_fenceposts,
    scaled_value_from_int_or_percent,
)


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        pytest.param("0%", "0%", 0, (0, 1), id="both zero resolve to unavailable 1"),
        pytest.param("39%", "39%", 10, (4, 3), id="surge rounds up, unavailable down"),
        pytest.param(None, "39%", 10, (0, 3), id="nil surge is 0"),
        pytest.param("39%", None, 10, (4, 0), id="nil unavailable is 0"),
        pytest.param(None, None, 10, (0, 1), id="both nil"),
        pytest.param(2, 3, 10, (2, 3), id="integers as is"),
        pytest.param("100%", "100%", 7, (7, 7), id="whole"),
        pytest.param("1%", "99%", 10, (1, 9), id="tiny surge rounds up to one"),
    ],
)
def test_resolve_fenceposts(
    surge: int | str | None, unavailable: int | str | None, desired: int, expected: tuple[int, int]
) -> None:
    assert resolve_fenceposts(surge, unavailable, desired) == expected


@pytest.mark.parametrize(
    ("surge", "unavailable"),
    [
        pytest.param("oops", "39%", id="surge not a percentage"),
        pytest.param("55%", "urg", id="unavailable not a percentage"),
        pytest.param("x%", "1%", id="percentage not a number"),
        pytest.param("9" * 5000 + "%", "1%", id="percentage of 5000 digits"),
    ],
)
def test_resolve_fenceposts_errors(surge: str, unavailable: str) -> None:
    with pytest.raises(IntOrPercentError):
        resolve_fenceposts(surge, unavailable, 10)


def test_a_malformed_surge_of_any_length_counts_as_zero() -> None:
    d = new_deployment("foo", 10, max_surge="9" * 5000 + "%", max_unavailable=1)
    assert max_surge(d) == 0  # Go's Atoi fails: ResolveFenceposts' error is ignored here


def test_scaled_value_of_nil_is_an_error() -> None:
    with pytest.raises(IntOrPercentError):
        scaled_value_from_int_or_percent(None, 10, round_up=True)


@pytest.mark.parametrize(
    ("replicas", "unavailable", "expected"),
    [
        pytest.param(10, 5, 5, id="less than replicas"),
        pytest.param(10, 10, 10, id="equal to replicas"),
        pytest.param(5, 10, 5, id="greater than replicas is capped"),
        pytest.param(0, 10, 0, id="zero replicas"),
        pytest.param(10, "50%", 5, id="percent less than replicas"),
        pytest.param(10, "100%", 10, id="percent equal"),
        pytest.param(5, "100%", 5, id="percent of five"),
    ],
)
def test_max_unavailable(replicas: int, unavailable: int | str, expected: int) -> None:
    d = new_deployment("foo", replicas, max_surge=1, max_unavailable=unavailable)
    assert max_unavailable(d) == expected


def test_max_unavailable_and_surge_are_zero_for_recreate() -> None:
    d = new_deployment("foo", 10, strategy="Recreate")
    assert max_unavailable(d) == 0
    assert max_surge(d) == 0
    assert min_available(d) == 0


@pytest.mark.parametrize(
    ("replicas", "unavailable", "expected"),
    [
        pytest.param(10, 5, 5, id="replicas greater than maxUnavailable"),
        pytest.param(10, 10, 0, id="replicas equal maxUnavailable"),
        pytest.param(5, 10, 0, id="replicas less than maxUnavailable"),
        pytest.param(0, 10, 0, id="replicas is 0"),
        pytest.param(10, "60%", 4, id="percent"),
        pytest.param(10, "100%", 0, id="percent equal"),
        pytest.param(5, "100%", 0, id="percent greater"),
    ],
)
def test_min_available(replicas: int, unavailable: int | str, expected: int) -> None:
    d = new_deployment("foo", replicas, max_surge=1, max_unavailable=unavailable)
    assert min_available(d) == expected


@pytest.mark.parametrize(
    ("strategy", "dep_replicas", "new_rs_replicas", "surge", "expected"),
    [
        pytest.param("RollingUpdate", 1, 5, 1, 5, id="can not scale up - to newRSReplicas"),
        pytest.param("RollingUpdate", 6, 2, 10, 6, id="scale up - to depReplicas"),
        pytest.param("Recreate", 3, 1, 1, 3, id="recreate - to depReplicas"),
        pytest.param("RollingUpdate", 10, 0, 2, 7, id="room left is the limit"),
    ],
)
def test_new_rs_new_replicas(
    strategy: str, dep_replicas: int, new_rs_replicas: int, surge: int, expected: int
) -> None:
    d = new_deployment("nginx", dep_replicas, max_surge=surge, max_unavailable=1)
    d["spec"]["strategy"]["type"] = strategy
    rs5 = new_replica_set(d, "rs5", 5)
    new_rs = new_replica_set(d, "new", new_rs_replicas)
    assert new_rs_new_replicas(d, [rs5], new_rs) == expected


def test_new_rs_new_replicas_unknown_strategy() -> None:
    d = new_deployment("nginx", 3, strategy="Canary")
    with pytest.raises(ValueError, match="isn't supported"):
        new_rs_new_replicas(d, [], new_replica_set(d, "new", 0))


@pytest.mark.parametrize(
    ("dep_replicas", "status_replicas", "surge", "rs_replicas", "max_annotation", "expected"),
    [
        pytest.param(0, 0, 0, 10, None, -10, id="empty deployment always scales to 0"),
        pytest.param(10, 0, 0, 5, None, 0, id="unsynced without max-replicas does not scale"),
        pytest.param(10, 0, 0, 5, "0", 0, id="unsynced with max-replicas 0 does not scale"),
        pytest.param(120, 100, 0, 50, None, 10, id="missing annotation falls back to status"),
        pytest.param(120, 100, 0, 50, "0", 10, id="zero annotation falls back to status"),
        pytest.param(120, 0, 0, 50, "100", 10, id="scale up by 1/5"),
        pytest.param(120, 0, 10, 50, "110", 9, id="scale up with maxSurge"),
        pytest.param(10, 0, 0, 6, "12", -1, id="scale down by 1/6"),
        pytest.param(100, 0, 10, 50, "130", -8, id="scale down with maxSurge"),
        pytest.param(5, 0, 0, 1, "2", 2, id="half rounds away from zero (2.5 -> 3)"),
    ],
)
def test_replica_set_fraction(
    dep_replicas: int,
    status_replicas: int,
    surge: int,
    rs_replicas: int,
    max_annotation: str | None,
    expected: int,
) -> None:
    d = new_deployment("nginx", dep_replicas, max_surge=surge, max_unavailable=1)
    d["status"]["replicas"] = status_replicas
    rs = new_replica_set(d, "rs", rs_replicas)
    if max_annotation is not None:
        rs["metadata"]["annotations"] = {"deployment.kubernetes.io/max-replicas": max_annotation}
    assert replica_set_fraction(rs, d) == expected


@pytest.mark.parametrize(
    ("dep_replicas", "rs_replicas", "to_add", "added", "expected"),
    [
        pytest.param(20, 0, 5, 0, 0, id="empty replica set never grows"),
        pytest.param(20, 5, 0, 0, 0, id="nothing to add"),
        pytest.param(20, 5, 4, 4, 0, id="everything handed out"),
        pytest.param(20, 5, 1, 0, 1, id="scaling up bounded by what is left"),
        pytest.param(20, 5, 10, 0, 5, id="scaling up by the fraction (doubling)"),
        pytest.param(5, 4, -1, 0, -1, id="scaling down bounded by what is left"),
        pytest.param(5, 4, -10, 0, -2, id="scaling down by the fraction (halving)"),
    ],
)
def test_replica_set_proportion(
    dep_replicas: int, rs_replicas: int, to_add: int, added: int, expected: int
) -> None:
    # The Deployment was sized 10 (the max-replicas annotation) and is now dep_replicas.
    d = new_deployment("nginx", dep_replicas, max_surge=0, max_unavailable=1)
    rs = new_replica_set(d, "rs", rs_replicas)
    rs["metadata"]["annotations"] = {"deployment.kubernetes.io/max-replicas": "10"}
    assert replica_set_proportion(rs, d, to_add, added) == expected
    assert replica_set_proportion(None, d, to_add, added) == 0


@given(
    sizes=st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=5),
    new_replicas=st.integers(min_value=0, max_value=200),
    surge=st.integers(min_value=0, max_value=10),
    annotated=st.booleans(),
)
def test_proportional_sizes_share_exactly_the_difference(
    sizes: list[int], new_replicas: int, surge: int, annotated: bool
) -> None:
    """Properties of proportional scaling: growing never shrinks a ReplicaSet and shrinking
    never grows one, nothing goes below 0, and the new total is ``replicas + maxSurge``
    unless the first (largest) ReplicaSet had to stop at 0."""
    d = new_deployment("d", new_replicas, max_surge=surge, max_unavailable=1)
    d["status"]["replicas"] = sum(sizes)
    rss = []
    for i, size in enumerate(sorted(sizes, reverse=True)):
        rs = new_replica_set(d, f"rs-{i}", size)
        if annotated:
            rs["metadata"]["annotations"] = {
                "deployment.kubernetes.io/max-replicas": str(sum(sizes))
            }
        rss.append(rs)
    allowed = new_replicas + surge if new_replicas > 0 else 0
    to_add = allowed - sum(sizes)

    result = proportional_sizes(rss, d, to_add)

    assert all(size >= 0 for size in result)
    if to_add >= 0:
        assert all(new >= old for new, old in zip(result, sorted(sizes, reverse=True), strict=True))
    else:
        assert all(new <= old for new, old in zip(result, sorted(sizes, reverse=True), strict=True))
    assert sum(result) == allowed or result[0] == 0
