"""What one workload's patch holds: the restart decision, table-driven."""

from __future__ import annotations

import json

import pytest

from kcontrol_controllers.configrestart import KCONTROL, XING, plan
from kcontrol_controllers.configrestart._plan import parse_checksums, patch_body, stored_checksums

C = "configmap/ns/app"
S = "secret/ns/db"


def own(value: str) -> bool:
    return value.startswith("own-")


# name, references, stored, current, baselines, expected checksums, restart_for, adopted
CASES = [
    ("nothing referenced", set(), {}, {}, {}, {}, (), ()),
    ("first sight: store, no restart", {C}, {}, {C: "own-1"}, {C: "own-1"}, {C: "own-1"}, (), ()),
    ("unchanged", {C}, {C: "own-1"}, {C: "own-1"}, {}, {C: "own-1"}, (), ()),
    ("known config changed: restart", {C}, {C: "own-1"}, {C: "own-2"}, {}, {C: "own-2"}, (C,), ()),
    (
        "newly referenced, changed again before stored: restart",
        {C},
        {},
        {C: "own-2"},
        {C: "own-1"},
        {C: "own-2"},
        (C,),
        (),
    ),
    ("pending config keeps its stored checksum", {C}, {C: "own-1"}, {}, {}, {C: "own-1"}, (), ()),
    ("pending, nothing stored", {C}, {}, {}, {}, {}, (), ()),
    (
        "unreferenced checksums dropped",
        {C},
        {C: "own-1", S: "own-9"},
        {C: "own-1"},
        {},
        {C: "own-1"},
        (),
        (),
    ),
    (
        "foreign checksum adopted, no restart",
        {C},
        {C: "189832cc316e7594"},
        {C: "own-2"},
        {},
        {C: "own-2"},
        (),
        (C,),
    ),
    (
        "two configs, one changed",
        {C, S},
        {C: "own-1", S: "own-5"},
        {C: "own-1", S: "own-6"},
        {},
        {C: "own-1", S: "own-6"},
        (S,),
        (),
    ),
]


@pytest.mark.parametrize(
    ("references", "stored", "current", "baselines", "checksums", "restart_for", "adopted"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_plan(
    references: set[str],
    stored: dict[str, str],
    current: dict[str, str],
    baselines: dict[str, str],
    checksums: dict[str, str],
    restart_for: tuple[str, ...],
    adopted: tuple[str, ...],
) -> None:
    decision = plan(frozenset(references), stored, current.get, baselines, own)
    assert decision.checksums == checksums
    assert decision.restart_for == restart_for
    assert decision.restart == bool(restart_for)
    assert decision.adopted == adopted


def test_stored_checksums_families() -> None:
    value = json.dumps({C: "own-1"})
    assert stored_checksums({KCONTROL.checksums: value}, KCONTROL) == ({C: "own-1"}, True)
    assert stored_checksums({XING.checksums: value}, KCONTROL) == ({C: "own-1"}, False)
    assert stored_checksums({XING.checksums: value}, XING) == ({C: "own-1"}, True)
    assert stored_checksums({KCONTROL.checksums: "not json"}, KCONTROL) == ({}, False)
    assert stored_checksums({KCONTROL.checksums: "[1]"}, KCONTROL) == ({}, False)
    assert stored_checksums(None, KCONTROL) == ({}, False)


DEEP = 100_000

# name, annotation text, parsed (None: malformed)
PARSE_CASES = [
    ("empty object", "{}", {}),
    ("compact", f'{{"{C}":"a","{S}":"b"}}', {C: "a", S: "b"}),
    ("whitespace and escapes", f' {{ "{C}" : "\\u00e9\\n" }}\n', {C: "\u00e9\n"}),
    ("brackets inside a string", f'{{"{C}":"[[[{{"}}', {C: "[[[{"}),
    ("repeated key: the last wins", '{"k":"1","k":"2"}', {"k": "2"}),
    ("absent", None, None),
    ("not json", "not json", None),
    ("an array", "[1]", None),
    ("a number value", f'{{"{C}":1}}', None),
    ("an object value", f'{{"{C}":{{"x":"y"}}}}', None),
    ("trailing comma", f'{{"{C}":"a",}}', None),
    ("extra data", '{"k":"v"}{}', None),
    ("unterminated", '{"k":"v"', None),
    ("deeply nested arrays", "[" * DEEP + "]" * DEEP, None),
    ("deeply nested objects", '{"a":' * DEEP + '"x"' + "}" * DEEP, None),
    ("deeply nested value", f'{{"{C}":' + "[" * DEEP + "]" * DEEP + "}", None),
]


@pytest.mark.parametrize(
    ("text", "parsed"), [case[1:] for case in PARSE_CASES], ids=[case[0] for case in PARSE_CASES]
)
def test_parse_checksums(text: str | None, parsed: dict[str, str] | None) -> None:
    """Exactly a flat JSON object of strings; anything else is malformed (None), and no
    input raises - a nesting deep enough to exhaust a recursive parser's stack included."""
    assert parse_checksums(text) == parsed


def test_a_deeply_nested_annotation_is_malformed_like_any_other() -> None:
    nested = "[" * DEEP + "]" * DEEP
    assert stored_checksums({KCONTROL.checksums: nested}, KCONTROL) == ({}, False)


def test_patch_touches_only_the_two_annotations() -> None:
    body = patch_body(KCONTROL, {S: "b", C: "a"}, resource_version="42", restart_at=None)
    assert body == {
        "metadata": {
            "resourceVersion": "42",
            "annotations": {KCONTROL.checksums: f'{{"{C}":"a","{S}":"b"}}'},
        }
    }
    body = patch_body(XING, {}, resource_version=None, restart_at="2026-01-01T00:00:00Z")
    assert body == {
        "metadata": {"annotations": {XING.checksums: "{}"}},
        "spec": {
            "template": {"metadata": {"annotations": {XING.timestamp: "2026-01-01T00:00:00Z"}}}
        },
    }
