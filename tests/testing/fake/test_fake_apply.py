"""What only the fake has to get right about server-side apply and field ownership: seeds,
its clock, its record of actions, its options, and the pieces underneath (field paths,
merges). The behaviour it shares with the real server is in test_apiserver_parity.py."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol.client import CONFIGMAPS, DEPLOYMENTS, FieldsV1, Object, PatchType, Resource
from kcontrol.clock import FakeClock
from kcontrol.errors import BadRequest, Conflict, Invalid
from kcontrol.testing import FakeClient
from kcontrol.testing.fake._ssa._fieldpath import (
    decode_fields_v1,
    describe,
    encode_fields_v1,
    key_element,
    value_element,
)
from kcontrol.testing.fake._ssa._shape import BuiltinShape, SchemaShape
from kcontrol.testing.fake._ssa._typed import compare, field_set, merge, remove_fields

APPLY = PatchType.APPLY
WIDGETS = Resource("example.com", "v1", "widgets", "Widget")


def cm_config(**data: str) -> Object:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": data}


async def apply(client: FakeClient, config: Any, manager: str = "one", **options: Any) -> Object:
    return await client.patch(
        CONFIGMAPS,
        "a",
        config,
        namespace="default",
        patch_type=APPLY,
        field_manager=manager,
        **options,
    )


def owners(obj: Object) -> dict[str, Any]:
    return {e["manager"]: e["fieldsV1"].to_dict() for e in obj["metadata"].get("managedFields", [])}


# -- the fake client -------------------------------------------------------------------------


async def test_apply_takes_yaml_text_and_is_recorded_with_its_options() -> None:
    client = FakeClient()
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n"
    created = await apply(client, body, force=True)
    assert created["data"] == {"k": "v"}
    [action] = client.actions
    assert (action.verb, action.patch_type, action.options) == (
        "patch",
        APPLY,
        {"field_manager": "one", "force": True},
    )


async def test_entries_are_stamped_by_the_clients_clock() -> None:
    clock = FakeClock()
    client = FakeClient(clock=clock)
    first = await apply(client, cm_config(k="1"))
    clock.step(3600)
    shared = await apply(client, cm_config(k="1"), "two")  # changes nothing: no new time
    changed = await apply(client, cm_config(k="2", j="1"), "two", force=True)
    times = {e["manager"]: e.get("time") for e in changed["metadata"]["managedFields"]}
    assert first["metadata"]["managedFields"][0]["time"] == "2026-01-01T00:00:00Z"
    assert [e.get("time") for e in shared["metadata"]["managedFields"]] == [
        None,  # "two": the object did not change (and an entry without time sorts first)
        "2026-01-01T00:00:00Z",
    ]
    assert times == {"two": "2026-01-01T01:00:00Z"}  # "one" lost its only field


async def test_seeds_without_managed_fields_were_written_before_the_first_apply() -> None:
    client = FakeClient(
        [{**cm_config(k="seeded"), "metadata": {"name": "a", "namespace": "default"}}]
    )
    with pytest.raises(Conflict, match=r'"before-first-apply" using v1: \.data\.k'):
        await apply(client, cm_config(k="mine"))
    forced = await apply(client, cm_config(k="mine"), force=True)
    assert forced["data"] == {"k": "mine"}
    assert owners(forced) == {
        "before-first-apply": {"f:data": {}},  # the map itself, which "one" did not take
        "one": {"f:data": {"f:k": {}}},
    }


async def test_seeded_managed_fields_are_honoured_and_kept_as_given() -> None:
    entry = {
        "manager": "helm",
        "operation": "Update",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:k": {}}},  # decoded, as a test writes it
    }
    seed = {**cm_config(k="1", j="1"), "metadata": {"name": "a", "namespace": "default"}}
    seed["metadata"]["managedFields"] = [entry]
    client = FakeClient([seed])
    stored = client.tracker.get(CONFIGMAPS, "a", namespace="default")
    same = await client.update(CONFIGMAPS, stored)
    assert same == stored  # a write that changes nothing rewrites nothing, entries included
    with pytest.raises(Conflict, match=r'conflict with "helm" using v1: \.data\.k'):
        await apply(client, cm_config(k="2"))
    taken = await apply(client, cm_config(j="2"))  # j is nobody's: no conflict
    assert owners(taken) == {"helm": {"f:data": {"f:k": {}}}, "one": {"f:data": {"f:j": {}}}}


async def test_field_manager_of_ordinary_writes_is_the_clients() -> None:
    client = FakeClient(field_manager="my-operator")
    created = await client.create(
        CONFIGMAPS, {**cm_config(k="1"), "metadata": {"name": "a", "namespace": "default"}}
    )
    assert list(owners(created)) == ["my-operator"]


async def test_status_subresources_are_configurable() -> None:
    client = FakeClient(status_subresources=[WIDGETS])
    assert client.tracker.has_status_subresource(WIDGETS)
    assert not client.tracker.has_status_subresource(DEPLOYMENTS)
    client.add_status_subresource(DEPLOYMENTS)
    assert client.tracker.has_status_subresource(DEPLOYMENTS)
    default = FakeClient()
    assert default.tracker.has_status_subresource(DEPLOYMENTS)
    assert not default.tracker.has_status_subresource(WIDGETS)
    default.add_status_subresource(WIDGETS)  # registers it too
    assert default.tracker.resource_for("example.com/v1", "Widget") == WIDGETS


@pytest.mark.parametrize(
    ("config", "error", "match"),
    [
        pytest.param([1], BadRequest, "must be an object", id="not-an-object"),
        pytest.param("a: [", BadRequest, "neither JSON nor YAML", id="not-yaml"),
        pytest.param({**cm_config(), "kind": "Secret"}, BadRequest, "is a Secret", id="kind"),
        pytest.param(
            {**cm_config(), "metadata": {"name": "b"}}, BadRequest, "does not match", id="name"
        ),
        pytest.param(
            {**cm_config(), "metadata": {"name": "a", "namespace": "other"}},
            BadRequest,
            "namespace",
            id="namespace",
        ),
        pytest.param(
            {**cm_config(), "metadata": {"name": "a", "managedFields": []}},
            BadRequest,
            "managedFields must be nil",
            id="managed-fields",
        ),
        pytest.param(
            {**cm_config(), "metadata": {"name": "a", "resourceVersion": "1"}},
            BadRequest,
            "resourceVersion should not be set",
            id="create-with-resource-version",
        ),
    ],
)
async def test_apply_refuses(config: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        await apply(FakeClient(), config)


async def test_apply_checks_preconditions() -> None:
    client = FakeClient()
    created = await apply(client, cm_config(k="1"))
    stale = cm_config(k="2")
    stale["metadata"]["resourceVersion"] = "1" + created["metadata"]["resourceVersion"]
    with pytest.raises(Conflict, match="has been modified"):
        await apply(client, stale)


# -- field paths and values ---------------------------------------------------------------


def test_field_sets_encode_in_the_servers_order() -> None:
    paths = [
        ("f:spec", "f:b"),
        ("f:spec", "f:a", "f:x"),
        ("f:spec", "f:a"),
        ("f:list", key_element({"port": 80, "name": "x"})),
        ("f:list", key_element({"port": 9, "name": "x"})),
        ("f:set", value_element("b")),
        ("f:set", value_element(10)),
        ("f:set", value_element("a")),
    ]
    assert encode_fields_v1(paths) == FieldsV1(
        b'{"f:list":{"k:{\\"name\\":\\"x\\",\\"port\\":9}":{},'
        b'"k:{\\"name\\":\\"x\\",\\"port\\":80}":{}},'
        b'"f:set":{"v:10":{},"v:\\"a\\"":{},"v:\\"b\\"":{}},'
        b'"f:spec":{"f:a":{".":{},"f:x":{}},"f:b":{}}}'
    )
    assert decode_fields_v1(encode_fields_v1(paths)) == frozenset(paths)


def test_decoding_normalizes_keys_and_skips_unknown_elements() -> None:
    raw = {"f:l": {'k:{"port":1,"name":"x"}': {}, "i:0": {}, "z:?": {}}, "f:m": {".": {}}}
    assert decode_fields_v1(raw) == {
        ("f:l", 'k:{"name":"x","port":1}'),
        ("f:l", "i:0"),
        ("f:m",),
    }
    with pytest.raises(ValueError):
        decode_fields_v1(b"[]")


def test_paths_print_as_the_server_prints_them() -> None:
    path = ("f:spec", "f:containers", key_element({"name": "web"}), "f:ports")
    assert describe(path) == '.spec.containers[name="web"].ports'
    assert describe(("f:finalizers", value_element("a/b"))) == '.finalizers[="a/b"]'
    assert describe(("f:l", key_element({"port": 80, "on": True}), "i:2")) == (
        ".l[on=true,port=80][2]"
    )


def test_keyed_items_need_their_keys() -> None:
    with pytest.raises(Invalid, match='omits key field "name"'):
        field_set({"spec": {"containers": [{"image": "x"}]}}, BuiltinShape())
    with pytest.raises(Invalid, match="duplicate entries"):
        merge({}, {"env": [{"name": "A"}, {"name": "A"}]}, BuiltinShape())


def test_merge_of_an_empty_keyed_list_keeps_the_live_items() -> None:
    live = {"metadata": {"finalizers": ["a"]}, "args": ["x"]}
    merged = merge(live, {"metadata": {"finalizers": []}, "args": []}, BuiltinShape())
    assert merged == {"metadata": {"finalizers": ["a"]}, "args": []}


def test_compare_names_containers_added_and_leaves_changed() -> None:
    old = {"spec": {"replicas": 1, "tags": ["a"]}}
    new = {"spec": {"replicas": 2, "tags": ["a"], "selector": {"a": "b"}}, "data": {"k": "v"}}
    changes = compare(old, new, BuiltinShape())
    assert changes.modified == {("f:spec", "f:replicas")}
    assert changes.added == {("f:spec", "f:selector"), ("f:data",), ("f:data", "f:k")}
    assert changes.removed == set()


def test_remove_fields_drops_what_it_empties() -> None:
    obj = {"spec": {"a": {"b": 1}, "c": 2}, "metadata": {"name": "x"}}
    assert remove_fields(obj, [("f:spec", "f:a", "f:b")], BuiltinShape()) == {
        "spec": {"c": 2},
        "metadata": {"name": "x"},
    }


def test_schema_shape_reads_list_types_and_key_defaults() -> None:
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name", "proto"],
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "proto": {"default": "TCP"}},
                },
            },
            "set": {"type": "array", "x-kubernetes-list-type": "set"},
            "labels": {"type": "object", "x-kubernetes-map-type": "atomic"},
        },
    }
    config = {"items": [{"name": "a"}], "set": ["x"], "labels": {"a": "b"}}
    assert field_set(config, SchemaShape(schema)) == {
        ("f:items", 'k:{"name":"a","proto":"TCP"}'),
        ("f:items", 'k:{"name":"a","proto":"TCP"}', "f:name"),
        ("f:set", 'v:"x"'),
        ("f:labels",),
    }
