"""bench/operator's audit log reading: whose writes, in which window, what the watches say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from bench.operator._audit import AuditLog, audit_policy, parse_event, writes_between


def line(
    verb: str,
    resource: str,
    *,
    user: str = "alice",
    agent: str = "kopf/1.45.2",
    group: str = "",
    subresource: str = "",
    code: int = 200,
    at: str = "2026-11-25T10:00:01.000000Z",
    stage: str = "ResponseComplete",
) -> str:
    ref: dict[str, Any] = {"resource": resource, "namespace": "ns", "apiVersion": "v1"}
    if group:
        ref["apiGroup"] = group
    if subresource:
        ref["subresource"] = subresource
    event = {
        "kind": "Event",
        "level": "Metadata",
        "stage": stage,
        "verb": verb,
        "user": {"username": user, "groups": ["system:authenticated"]},
        "userAgent": agent,
        "objectRef": ref,
        "responseStatus": {"metadata": {}, "code": code},
        "requestReceivedTimestamp": at,
    }
    return json.dumps(event)


def test_parse_write() -> None:
    event = parse_event(line("patch", "websites", group="demo.example.com", subresource="status"))
    assert event is not None
    assert (event.user, event.verb, event.key, event.resource, event.code) == (
        "alice",
        "patch",
        "PATCH demo.example.com/websites/status",
        "demo.example.com/websites",
        200,
    )
    assert event.at == 1795600801.0


def test_parse_skips_other_stages_and_verbs() -> None:
    assert parse_event(line("create", "services", stage="ResponseStarted")) is None
    assert parse_event(line("get", "services")) is None
    assert parse_event(line("watch", "services", stage="ResponseComplete")) is None
    watch = parse_event(line("watch", "deployments", group="apps", stage="ResponseStarted"))
    assert watch is not None and watch.resource == "apps/deployments"


def test_writes_between_attributes_by_user_and_window() -> None:
    events = [
        parse_event(text)
        for text in (
            line("create", "deployments", group="apps", at="2026-11-25T10:00:00.500000Z"),
            line("create", "deployments", group="apps", agent="OpenAPI-Generator/37.0.2/python"),
            line("create", "services", code=409),
            line("delete", "services", user="admin", agent="kcontrol-bench-operator"),
            line("create", "ipaddresses", user="system:apiserver", agent="kube-apiserver/v1 (x)"),
            line("watch", "services", stage="ResponseStarted"),
            line("patch", "websites", at="2026-11-25T10:00:02.000000Z"),  # at the end: out
        )
    ]
    start = 1795600800.5  # 10:00:00.5, inclusive
    end = 1795600802.0  # 10:00:02, exclusive
    result = writes_between([e for e in events if e], "alice", start, end)
    assert result.writes == {"POST apps/deployments": 2, "POST services": 1}
    assert result.errors == {"POST services 409": 1}
    assert result.others == {"kcontrol-bench-operator": 1, "kube-apiserver/v1": 1}


def test_audit_log_follows_the_file(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.write_text(line("create", "services", at="2026-11-25T09:00:00Z") + "\n")
    log = AuditLog(path)  # from the current end: the line above is not read
    with path.open("a") as out:
        out.write(line("watch", "websites", group="demo.example.com", stage="ResponseStarted"))
        out.write("\n" + line("patch", "deployments", group="apps") + "\n")
        out.write(line("create", "services")[:40])  # a line still being written
    log.poll()
    assert log.watched("alice") == {"demo.example.com/websites"}
    assert log.watched("bob") == set()
    assert log.last_write("alice") == 1795600801.0
    assert [e.key for e in log.events] == [
        "WATCH demo.example.com/websites",
        "PATCH apps/deployments",
    ]
    with path.open("a") as out:
        out.write(line("create", "services")[40:] + "\n")
        out.write(
            line("update", "leases", group="coordination.k8s.io", at="2026-11-25T10:00:09Z") + "\n"
        )
    log.poll()
    assert [e.key for e in log.events][-2:] == ["POST services", "PUT coordination.k8s.io/leases"]
    assert log.last_write("alice") == 1795600801.0  # a Lease renewal is not work


def test_audit_policy_logs_writes_and_the_operator_watches() -> None:
    policy = yaml.safe_load(audit_policy("alice"))
    assert policy["kind"] == "Policy"
    writes, watches, rest = policy["rules"]
    assert set(writes["verbs"]) >= {"create", "update", "patch", "delete"}
    assert "users" not in writes  # the benchmark's own writes are logged too
    assert (watches["verbs"], watches["users"]) == (["watch"], ["alice"])
    assert rest == {"level": "None"}
