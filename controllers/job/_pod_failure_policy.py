"""Matching a failed pod against the Job's ``podFailurePolicy``. A port of
``pod_failure_policy.go``.

Rules are tried in order; the first that matches decides:

- ``onExitCodes``: a terminated container (regular first, then init containers) with a
  non-zero exit code, of the named container if ``containerName`` is given, whose code is
  ``In`` / ``NotIn`` the listed values;
- ``onPodConditions``: a pod condition with the listed ``type`` and ``status`` (such as
  ``DisruptionTarget=True``).

Actions: ``FailJob`` fails the whole Job (with a message naming the container or condition),
``FailIndex`` fails the pod's index (with ``backoffLimitPerIndex``), ``Ignore`` does not count
the failure against any backoff limit, ``Count`` counts it as usual. No match counts it too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ._spec import meta

__all__ = [
    "COUNT",
    "FAIL_INDEX",
    "FAIL_JOB",
    "IGNORE",
    "PodFailurePolicyMatch",
    "match_pod_failure_policy",
]

FAIL_JOB: Final = "FailJob"
FAIL_INDEX: Final = "FailIndex"
IGNORE: Final = "Ignore"
COUNT: Final = "Count"


@dataclass(frozen=True, slots=True)
class PodFailurePolicyMatch:
    """What a failed pod means under the policy: ``job_failure_message`` is set when a
    ``FailJob`` rule matched; ``count_failed`` is false for an ``Ignore`` rule; ``action`` is
    the matched rule's action (``None``: no rule matched)."""

    job_failure_message: str | None = None
    count_failed: bool = True
    action: str | None = None


_NO_MATCH: Final = PodFailurePolicyMatch()


def _exit_code(container: Mapping[str, Any]) -> int:
    terminated = (container.get("state") or {}).get("terminated") or {}
    return int(terminated.get("exitCode") or 0)


def _matching_container(
    statuses: Sequence[Mapping[str, Any]], requirement: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    name = requirement.get("containerName")
    values = requirement.get("values") or ()
    operator = requirement.get("operator")
    for container in statuses:
        if (container.get("state") or {}).get("terminated") is None:
            continue  # still terminating: no exit code to match yet
        if name is not None and name != container.get("name"):
            continue
        code = _exit_code(container)
        if code == 0:
            continue
        if (operator == "In" and code in values) or (operator == "NotIn" and code not in values):
            return container
    return None


def _match_on_exit_codes(
    pod_status: Mapping[str, Any], requirement: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    found = _matching_container(pod_status.get("containerStatuses") or (), requirement)
    if found is not None:
        return found
    return _matching_container(pod_status.get("initContainerStatuses") or (), requirement)


def _match_on_pod_conditions(
    pod_status: Mapping[str, Any], patterns: Sequence[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    for condition in pod_status.get("conditions") or ():
        for pattern in patterns:
            if condition.get("type") == pattern.get("type") and condition.get(
                "status"
            ) == pattern.get("status"):
                return condition  # type: ignore[no-any-return]
    return None


def _decide(action: object, failure_message: str) -> PodFailurePolicyMatch | None:
    """The outcome of a matched rule; ``None`` for an action this controller does not know
    (the next rule is tried, as upstream's switch falls through)."""
    if action == IGNORE:
        return PodFailurePolicyMatch(None, False, IGNORE)
    if action == FAIL_INDEX:
        return PodFailurePolicyMatch(None, True, FAIL_INDEX)
    if action == COUNT:
        return PodFailurePolicyMatch(None, True, COUNT)
    if action == FAIL_JOB:
        return PodFailurePolicyMatch(failure_message, True, FAIL_JOB)
    return None


def match_pod_failure_policy(
    policy: Mapping[str, Any] | None, failed_pod: Mapping[str, Any]
) -> PodFailurePolicyMatch:
    """What ``failed_pod`` means under ``policy`` (``None``: no policy, the failure counts)."""
    if policy is None:
        return _NO_MATCH
    pod_status = failed_pod.get("status") or {}
    pod_meta = meta(failed_pod)
    pod_name = f"{pod_meta.get('namespace', '')}/{pod_meta.get('name', '')}"
    for index, rule in enumerate(policy.get("rules") or ()):
        action = rule.get("action")
        on_exit_codes = rule.get("onExitCodes")
        if on_exit_codes is not None:
            container = _match_on_exit_codes(pod_status, on_exit_codes)
            if container is None:
                continue
            message = (
                f"Container {container.get('name', '')} for pod {pod_name} failed with exit "
                f"code {_exit_code(container)} matching {action} rule at index {index}"
            )
        elif rule.get("onPodConditions") is not None:
            condition = _match_on_pod_conditions(pod_status, rule["onPodConditions"])
            if condition is None:
                continue
            message = (
                f"Pod {pod_name} has condition {condition.get('type')} matching {action} rule "
                f"at index {index}"
            )
        else:
            continue
        decided = _decide(action, message)
        if decided is not None:
            return decided
    return _NO_MATCH
