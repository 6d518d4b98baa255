"""bench/jobs's workload: sizes, the Job manifest, when a Job counts as finished, nodes."""

from __future__ import annotations

import pytest

from bench.jobs._workload import Size, finished, job, job_names, node_count, succeeded_failed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("20x10x5", Size(20, 10, 5)),
        ("100X4x2", Size(100, 4, 2)),
        ("3x4", Size(3, 4, 4)),  # parallelism defaults to the completions
    ],
    ids=["n-m-p", "upper-case-x", "no-parallelism"],
)
def test_parse(text: str, expected: Size) -> None:
    size = Size.parse(text)
    assert size == expected
    assert Size.parse(size.label) == size


@pytest.mark.parametrize("text", ["20", "20x0x1", "1x2x3x4", "ax2"], ids=str)
def test_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        Size.parse(text)


def test_pods_and_names() -> None:
    size = Size(3, 4, 2)
    assert size.pods == 12
    assert job_names(size) == ["j-0000", "j-0001", "j-0002"]


def test_job_manifest() -> None:
    obj = job("j-0001", Size(5, 10, 3), 1.0)
    spec = obj["spec"]
    assert obj["metadata"]["name"] == "j-0001"
    assert (spec["completions"], spec["parallelism"]) == (10, 3)
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    # kwok's emulation: the sleep is the run time, then exit code 0
    assert pod["containers"][0]["command"] == ["sh", "-c", "sleep 1; exit 0"]
    assert job("j", Size(1, 1, 1), 2.5)["spec"]["template"]["spec"]["containers"][0]["command"][
        2
    ] == ("sleep 2.5; exit 0")


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([], None),
        ([{"type": "SuccessCriteriaMet", "status": "True"}], None),
        ([{"type": "Complete", "status": "False"}], None),
        (
            [
                {"type": "SuccessCriteriaMet", "status": "True"},
                {"type": "Complete", "status": "True"},
            ],
            "Complete",
        ),
        ([{"type": "FailureTarget", "status": "True"}], None),
        ([{"type": "Failed", "status": "True"}], "Failed"),
    ],
    ids=["none", "interim-success", "complete-false", "complete", "interim-failure", "failed"],
)
def test_finished(conditions: list[dict[str, str]], expected: str | None) -> None:
    assert finished({"status": {"conditions": conditions}}) == expected


def test_finished_without_status() -> None:
    assert finished({"metadata": {"name": "j"}}) is None


def test_succeeded_failed() -> None:
    assert succeeded_failed({"status": {"succeeded": 4, "failed": 1}}) == (4, 1)
    assert succeeded_failed({}) == (0, 0)


@pytest.mark.parametrize(
    ("size", "nodes"),
    [(Size(1, 1, 1), 2), (Size(11, 10, 5), 2), (Size(20, 10, 5), 3), (Size(100, 4, 2), 5)],
    ids=["one-pod", "exactly-one-node", "200-pods", "400-pods"],
)
def test_node_count(size: Size, nodes: int) -> None:
    assert node_count(size) == nodes
