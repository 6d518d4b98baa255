"""deploy/prometheus/rules.yaml: valid for promtool, its unit tests (rules_test.yaml) pass
with a firing and a not-firing case for every alert, and every alert carries what an
operator reads - a summary, a description, a severity and a runbook section that exists."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring.monitoring_helpers import (
    RULES_TEST,
    RUNBOOKS,
    alerts,
    promtool,
    rule_groups,
)

ALERTS = [rule["alert"] for rule in alerts()]


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    """The rule groups as a plain rules file, with the unit tests beside it."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule_groups()}))
    shutil.copy(RULES_TEST, tmp_path / RULES_TEST.name)
    return tmp_path


def run_promtool(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(promtool()), *args],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_promtool_check_rules(rules_dir: Path) -> None:
    done = run_promtool(rules_dir, "check", "rules", "rules.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in done.stdout


def test_promtool_check_rules_rejects_a_broken_rule(rules_dir: Path) -> None:
    """promtool does check: a rule whose expression does not parse fails."""
    groups = rule_groups()
    groups[0]["rules"][0]["expr"] = "sum by (job (up)"
    (rules_dir / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    done = run_promtool(rules_dir, "check", "rules", "rules.yaml")
    assert done.returncode != 0
    assert "FAILED" in done.stdout + done.stderr


def test_promtool_test_rules(rules_dir: Path) -> None:
    done = run_promtool(rules_dir, "test", "rules", RULES_TEST.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_promtool_test_rules_fails_on_a_wrong_expectation(rules_dir: Path) -> None:
    """The unit tests do compare: expecting a firing alert to stay silent fails."""
    tests = yaml.safe_load(RULES_TEST.read_text())
    for case in tests["tests"]:
        for check in case["alert_rule_test"]:
            check["exp_alerts"] = []
    (rules_dir / RULES_TEST.name).write_text(yaml.safe_dump(tests))
    done = run_promtool(rules_dir, "test", "rules", RULES_TEST.name)
    assert done.returncode != 0
    assert "FAILED" in done.stdout + done.stderr


@pytest.mark.parametrize("alert", ALERTS)
def test_every_alert_has_a_firing_and_a_silent_case(alert: str) -> None:
    tests = yaml.safe_load(RULES_TEST.read_text())
    checks = [
        check
        for case in tests["tests"]
        for check in case["alert_rule_test"]
        if check["alertname"] == alert
    ]
    assert any(check["exp_alerts"] for check in checks), f"{alert} never fires in a test"
    assert any(not check["exp_alerts"] for check in checks), f"{alert} is never silent"


def runbook_anchors() -> set[str]:
    """The anchors of the runbook page's sections (mkdocs's: the title lower-cased)."""
    return {
        match.group(1).lower()
        for match in re.finditer(r"^## (\w+)$", RUNBOOKS.read_text(), re.MULTILINE)
    }


@pytest.mark.parametrize("rule", alerts(), ids=ALERTS)
def test_every_alert_says_what_an_operator_needs(rule: dict[str, Any]) -> None:
    alert = rule["alert"]
    assert set(rule["labels"]) == {"severity"}
    assert rule["labels"]["severity"] in {"critical", "warning"}
    annotations = rule["annotations"]
    assert set(annotations) == {"summary", "description", "runbook_url"}
    assert annotations["runbook_url"] == f"docs/manager/runbooks.md#{alert.lower()}"
    assert alert.lower() in runbook_anchors()
    assert re.fullmatch(r"\d+m", rule["for"])
    # Each names what it is about: the labels it keeps (controller, queue, instance, pod).
    grouping = re.findall(r"\b(?:by|on) \(([^)]*)\)", rule["expr"])
    if grouping:
        labels = {label.strip() for label in grouping[0].split(",")}
        named = set(re.findall(r"\$labels\.(\w+)", annotations["description"]))
        assert named, f"{alert}'s description names none of {labels}"
        assert named <= labels


def test_every_runbook_section_has_its_alert() -> None:
    assert runbook_anchors() == {alert.lower() for alert in ALERTS}
    text = RUNBOOKS.read_text()
    for section in text.split("\n## ")[1:]:
        for part in ("**Meaning.**", "**Look at.**", "**Do.**"):
            assert part in section, f"{section.splitlines()[0]}: no {part}"


def test_workqueue_and_reconcile_alerts_name_the_controller() -> None:
    by_name = {rule["alert"]: rule for rule in alerts()}
    for alert, label in [
        ("KcontrolManagerWorkQueueGrowing", "name"),
        ("KcontrolManagerWorkQueueStuck", "name"),
        ("KcontrolManagerReconcileErrors", "controller"),
    ]:
        assert f"{{{{ $labels.{label} }}}}" in by_name[alert]["annotations"]["description"]
