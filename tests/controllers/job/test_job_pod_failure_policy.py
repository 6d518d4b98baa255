"""Matching failed pods against a pod failure policy: upstream's pod_failure_policy_test.go
(with ``JobBackoffLimitPerIndex`` on, as in 1.36)."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol_controllers.job._pod_failure_policy import (
    PodFailurePolicyMatch,
    match_pod_failure_policy,
)

META = {"namespace": "default", "name": "mypod"}
DISRUPTION = [{"type": "DisruptionTarget", "status": "True"}]


def failed(*exit_codes: int, init: tuple[int, ...] = (), conditions: Any = None) -> dict[str, Any]:
    status: dict[str, Any] = {
        "phase": "Failed",
        "containerStatuses": [
            {"name": f"main-container-{i}", "state": {"terminated": {"exitCode": code}}}
            for i, code in enumerate(exit_codes)
        ],
    }
    if init:
        status["initContainerStatuses"] = [
            {"name": f"init-container-{i}", "state": {"terminated": {"exitCode": code}}}
            for i, code in enumerate(init)
        ]
    if conditions is not None:
        status["conditions"] = conditions
    return {"metadata": META, "status": status}


def on_codes(action: str, operator: str, *values: int, container: str | None = None) -> Any:
    requirement: dict[str, Any] = {"operator": operator, "values": list(values)}
    if container is not None:
        requirement["containerName"] = container
    return {"action": action, "onExitCodes": requirement}


def on_conditions(action: str, condition: str = "DisruptionTarget", status: str = "True") -> Any:
    return {"action": action, "onPodConditions": [{"type": condition, "status": status}]}


def policy(*rules: Any) -> dict[str, Any]:
    return {"rules": list(rules)}


COUNT = PodFailurePolicyMatch(None, True, "Count")
IGNORE = PodFailurePolicyMatch(None, False, "Ignore")
FAIL_INDEX = PodFailurePolicyMatch(None, True, "FailIndex")
NO_MATCH = PodFailurePolicyMatch(None, True, None)


@pytest.mark.parametrize(
    ("pod_failure_policy", "pod", "want"),
    [
        pytest.param(
            policy(
                {
                    "action": "UnknownAction",
                    "onExitCodes": {"operator": "In", "values": [1, 2]},
                    "onPodConditions": DISRUPTION,
                },
                on_codes("Count", "In", 2, 3),
            ),
            failed(2),
            COUNT,
            id="unknown action for rule matching by exit codes - skip rule with unknown action",
        ),
        pytest.param(
            policy(
                {"action": "UnknownAction", "onPodConditions": DISRUPTION},
                on_conditions("Count"),
            ),
            failed(conditions=DISRUPTION),
            COUNT,
            id="unknown action for rule matching by pod conditions - skip rule with unknown action",
        ),
        pytest.param(
            policy(
                {"action": "FailJob", "onExitCodes": {"operator": "Unknown", "values": [1, 2]}},
                on_codes("Count", "In", 1, 2),
            ),
            failed(1),
            COUNT,
            id="unknown operator - rule with unknown action is skipped for onExitCodes",
        ),
        pytest.param(policy(), failed(2), NO_MATCH, id="no policy rules"),
        pytest.param(None, failed(2), NO_MATCH, id="no policy"),
        pytest.param(
            policy(on_codes("Ignore", "In", 1, 2, 3), on_codes("FailJob", "In", 5, 6, 7)),
            failed(2),
            IGNORE,
            id="ignore rule matched for exit codes",
        ),
        pytest.param(
            policy(on_codes("Ignore", "In", -1, -2, -3)),
            failed(-2),
            IGNORE,
            id="ignore rule matched on negative exit codes - needed for Windows support",
        ),
        pytest.param(
            policy(on_codes("FailJob", "In", 1, 2, 3)),
            failed(2),
            PodFailurePolicyMatch(
                "Container main-container-0 for pod default/mypod failed with exit code 2 "
                "matching FailJob rule at index 0",
                True,
                "FailJob",
            ),
            id="FailJob rule matched for exit codes",
        ),
        pytest.param(
            policy(on_codes("FailJob", "NotIn", 111)),
            failed(111, 0, init=(0,)),
            NO_MATCH,
            id="successful containers are skipped by the rules",
        ),
        pytest.param(
            policy(on_codes("FailIndex", "In", 1, 2, 3)),
            failed(2),
            FAIL_INDEX,
            id="FailIndex rule matched for exit codes; JobBackoffLimitPerIndex enabled",
        ),
        pytest.param(
            policy(on_codes("FailJob", "NotIn", 0)),
            failed(1),
            PodFailurePolicyMatch(
                "Container main-container-0 for pod default/mypod failed with exit code 1 "
                "matching FailJob rule at index 0",
                True,
                "FailJob",
            ),
            id="pod failure policy with NotIn operator and value 0",
        ),
        pytest.param(
            policy(on_codes("Ignore", "In", 1, 2, 3), on_codes("FailJob", "In", 4, 5, 6)),
            failed(6),
            PodFailurePolicyMatch(
                "Container main-container-0 for pod default/mypod failed with exit code 6 "
                "matching FailJob rule at index 1",
                True,
                "FailJob",
            ),
            id="second jobfail rule matched for exit codes",
        ),
        pytest.param(
            policy(on_codes("Count", "NotIn", 0)),
            failed(3),
            COUNT,
            id="count rule matched for exit codes",
        ),
        pytest.param(
            policy(on_codes("FailJob", "In", 42, container="init-container-0")),
            failed(0, init=(42,)),
            PodFailurePolicyMatch(
                "Container init-container-0 for pod default/mypod failed with exit code 42 "
                "matching FailJob rule at index 0",
                True,
                "FailJob",
            ),
            id="init container exit code, by container name",
        ),
        pytest.param(
            policy(on_codes("FailJob", "In", 42, container="other")),
            failed(42),
            NO_MATCH,
            id="container name must match",
        ),
        pytest.param(
            policy(on_conditions("FailIndex")),
            failed(conditions=DISRUPTION),
            FAIL_INDEX,
            id="FailIndex rule matched for pod conditions; JobBackoffLimitPerIndex enabled",
        ),
        pytest.param(
            policy(on_conditions("Ignore")),
            failed(conditions=DISRUPTION),
            IGNORE,
            id="ignore rule matched for pod conditions",
        ),
        pytest.param(
            policy(on_conditions("Ignore", status="False")),
            failed(conditions=[{"type": "DisruptionTarget", "status": "False"}]),
            IGNORE,
            id="ignore rule matches by the status=False",
        ),
        pytest.param(
            policy(on_conditions("Ignore", status="Unknown")),
            failed(conditions=[{"type": "DisruptionTarget", "status": "Unknown"}]),
            IGNORE,
            id="ignore rule matches by the status=Unknown",
        ),
        pytest.param(
            policy(on_conditions("Ignore", status="False")),
            failed(conditions=DISRUPTION),
            NO_MATCH,
            id="ignore rule does not match when status for pattern is False, but actual True",
        ),
        pytest.param(
            policy(on_conditions("Ignore")),
            failed(conditions=[{"type": "DisruptionTarget", "status": "False"}]),
            NO_MATCH,
            id="ignore rule does not match when status for pattern is True, but actual False",
        ),
        pytest.param(
            policy(on_conditions("FailJob")),
            failed(conditions=DISRUPTION),
            PodFailurePolicyMatch(
                "Pod default/mypod has condition DisruptionTarget matching FailJob rule at index 0",
                True,
                "FailJob",
            ),
            id="job fail rule matched for pod conditions",
        ),
        pytest.param(
            policy(on_conditions("Count")),
            failed(conditions=DISRUPTION),
            COUNT,
            id="count rule matched for pod conditions",
        ),
        pytest.param(
            policy(on_codes("Count", "In", 1, 2, 3), on_conditions("Count")),
            failed(32),
            NO_MATCH,
            id="no rule matched",
        ),
    ],
)
def test_match_pod_failure_policy(
    pod_failure_policy: dict[str, Any] | None, pod: dict[str, Any], want: PodFailurePolicyMatch
) -> None:
    assert match_pod_failure_policy(pod_failure_policy, pod) == want


def test_still_terminating_containers_have_no_exit_code() -> None:
    pod = {
        "metadata": META,
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"name": "c", "state": {"running": {}}}],
        },
    }
    assert match_pod_failure_policy(policy(on_codes("FailJob", "NotIn", 0)), pod) == NO_MATCH
