"""One table, two servers: the status subresource, generations and server-side apply, each
case written once and run against :class:`~kcontrol.testing.FakeClient` and against the real
kube-apiserver, asserting the same answers - object contents, resourceVersion and
generation changes, conflicts raised or not, fields removed, managedFields byte for byte.
A case the fake gets wrong fails on its ``fake`` run; one that misreads the server fails
on ``real``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from parity_fixtures import (
    GADGETS,
    WIDGETS,
    Server,
    backend,
    fields_of,
    generation,
    ownership,
    rv,
    server,
)

from kcontrol.client import CONFIGMAPS, DEPLOYMENTS, SECRETS, Object, PatchType, Resource
from kcontrol.errors import BadRequest, Conflict, Invalid, NotFound

__all__ = ["backend", "server"]  # the fixtures, imported for the tests below

APPLY = PatchType.APPLY


def configmap(name: str, namespace: str, data: dict[str, str] | None = None) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data if data is not None else {"k": "v"},
    }


def deployment(name: str, namespace: str, replicas: int = 1) -> Object:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx:1"}]},
            },
        },
    }


def widget(name: str, namespace: str, replicas: int = 1) -> Object:
    return {
        "apiVersion": WIDGETS.api_version,
        "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"image": "nginx:1", "replicas": replicas},
    }


def applied(resource: Resource, name: str, **fields: Any) -> Object:
    """An apply configuration: identity plus ``fields``."""
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": name},
        **fields,
    }


async def apply(
    server: Server,
    resource: Resource,
    config: Object,
    manager: str,
    *,
    force: bool | None = None,
    subresource: str | None = None,
) -> Object:
    return await server.client.patch(
        resource,
        config["metadata"]["name"],
        config,
        namespace=server.namespace,
        patch_type=APPLY,
        field_manager=manager,
        force=force,
        subresource=subresource,
    )


# -- the status subresource -----------------------------------------------------------------


@pytest.mark.parametrize("make", [deployment, widget], ids=["deployment", "widget"])
async def test_update_status_changes_only_status(server: Server, make: Any) -> None:
    resource = DEPLOYMENTS if make is deployment else WIDGETS
    created = await server.client.create(resource, make("a", server.namespace))
    edited = {**created, "spec": {**created["spec"], "replicas": 5}, "status": {"replicas": 3}}
    if resource is WIDGETS:
        edited["status"] = {"phase": "Ready", "readyReplicas": 3}
    updated = await server.client.update_status(resource, edited)
    assert updated["status"] == edited["status"]
    assert updated["spec"]["replicas"] == 1
    assert rv(updated) > rv(created)
    assert generation(updated) == generation(created) == 1


@pytest.mark.parametrize("make", [deployment, widget], ids=["deployment", "widget"])
async def test_status_patch_changes_only_status(server: Server, make: Any) -> None:
    resource = DEPLOYMENTS if make is deployment else WIDGETS
    created = await server.client.create(resource, make("a", server.namespace))
    status = {"replicas": 2} if resource is DEPLOYMENTS else {"readyReplicas": 2}
    patched = await server.client.patch(
        resource,
        "a",
        {"spec": {"replicas": 7}, "status": status},
        namespace=server.namespace,
        subresource="status",
    )
    assert patched["status"] == status
    assert patched["spec"]["replicas"] == 1
    assert generation(patched) == 1
    assert rv(patched) > rv(created)


@pytest.mark.parametrize("make", [deployment, widget], ids=["deployment", "widget"])
async def test_main_resource_writes_leave_status_alone(server: Server, make: Any) -> None:
    resource = DEPLOYMENTS if make is deployment else WIDGETS
    created = await server.client.create(resource, make("a", server.namespace))
    status = {"replicas": 2} if resource is DEPLOYMENTS else {"readyReplicas": 2}
    with_status = await server.client.patch(
        resource, "a", {"status": status}, namespace=server.namespace, subresource="status"
    )
    # A status change through the main resource is dropped: nothing is written at all.
    same = await server.client.update(resource, {**with_status, "status": {}})
    assert same["status"] == status
    assert rv(same) == rv(with_status)
    # A spec change goes through, the status stays as stored.
    changed = await server.client.patch(
        resource,
        "a",
        {"spec": {"replicas": 4}, "status": None},
        namespace=server.namespace,
    )
    assert changed["spec"]["replicas"] == 4
    assert changed["status"] == status
    assert generation(changed) == 2
    assert rv(changed) > rv(with_status)
    assert created["metadata"]["uid"] == changed["metadata"]["uid"]


async def test_status_subresource_only_where_served(server: Server) -> None:
    created = await server.client.create(CONFIGMAPS, configmap("a", server.namespace))
    with pytest.raises(NotFound):
        await server.client.update_status(CONFIGMAPS, created)
    with pytest.raises(NotFound):
        await server.client.patch(
            CONFIGMAPS, "a", {"data": {"k": "x"}}, namespace=server.namespace, subresource="status"
        )


@pytest.mark.parametrize(
    ("resource", "change", "bumped"),
    [
        pytest.param(DEPLOYMENTS, {"spec": {"replicas": 3}}, True, id="deployment-spec"),
        pytest.param(DEPLOYMENTS, {"metadata": {"labels": {"x": "y"}}}, False, id="deploy-labels"),
        pytest.param(DEPLOYMENTS, {"metadata": {"annotations": {"x": "y"}}}, True, id="deploy-ann"),
        pytest.param(WIDGETS, {"spec": {"replicas": 3}}, True, id="widget-spec"),
        pytest.param(WIDGETS, {"metadata": {"annotations": {"x": "y"}}}, False, id="widget-ann"),
        pytest.param(GADGETS, {"spec": {"size": 3}}, True, id="gadget-spec"),
        # without a status subresource the status is part of what generation counts
        pytest.param(GADGETS, {"status": {"phase": "x"}}, True, id="gadget-status"),
        pytest.param(GADGETS, {"metadata": {"labels": {"x": "y"}}}, False, id="gadget-labels"),
    ],
)
async def test_generation_counts_spec_changes(
    server: Server, resource: Resource, change: Object, bumped: bool
) -> None:
    if resource is DEPLOYMENTS:
        obj = deployment("a", server.namespace)
    else:
        obj = applied(resource, "a", spec={"replicas": 1})
        obj["metadata"]["namespace"] = server.namespace
    created = await server.client.create(resource, obj)
    patched = await server.client.patch(resource, "a", change, namespace=server.namespace)
    assert rv(patched) > rv(created)
    assert generation(patched) == (2 if bumped else 1)


@pytest.mark.parametrize("resource", [CONFIGMAPS, SECRETS], ids=["configmap", "secret"])
async def test_kinds_without_generation(server: Server, resource: Resource) -> None:
    obj = {"apiVersion": "v1", "kind": resource.kind, "metadata": {"name": "a"}, "data": {}}
    created = await server.client.create(resource, obj, namespace=server.namespace)
    patched = await server.client.patch(
        resource, "a", {"data": {"k": "dg=="}}, namespace=server.namespace
    )
    assert "generation" not in created["metadata"]
    assert "generation" not in patched["metadata"]


# -- ownership of ordinary writes ----------------------------------------------------------


async def test_create_and_update_record_their_fields(server: Server) -> None:
    cm = configmap("a", server.namespace)
    cm["metadata"]["labels"] = {"team": "a"}
    created = await server.client.create(CONFIGMAPS, cm)
    assert ownership(created) == [
        (
            "kcontrol",
            "Update",
            "v1",
            "",
            b'{"f:data":{".":{},"f:k":{}},"f:metadata":{"f:labels":{".":{},"f:team":{}}}}',
        )
    ]
    created["data"] = {"k": "v", "k2": "v2"}
    updated = await server.client.update(CONFIGMAPS, created)
    assert fields_of(updated, "kcontrol", "Update") == {
        "f:data": {".": {}, "f:k": {}, "f:k2": {}},
        "f:metadata": {"f:labels": {".": {}, "f:team": {}}},
    }
    patched = await server.client.patch(
        CONFIGMAPS, "a", {"data": {"k3": "v3"}}, namespace=server.namespace, field_manager="tool"
    )
    assert ownership(patched) == [
        (
            "kcontrol",
            "Update",
            "v1",
            "",
            b'{"f:data":{".":{},"f:k":{},"f:k2":{}},"f:metadata":{"f:labels":{".":{},"f:team":{}}}}',
        ),
        ("tool", "Update", "v1", "", b'{"f:data":{"f:k3":{}}}'),
    ]


async def test_status_writes_record_under_the_status_subresource(server: Server) -> None:
    created = await server.client.create(WIDGETS, widget("a", server.namespace))
    updated = await server.client.update_status(WIDGETS, {**created, "status": {"phase": "Up"}})
    assert (
        "kcontrol",
        "Update",
        WIDGETS.api_version,
        "status",
        b'{"f:status":{".":{},"f:phase":{}}}',
    ) in (ownership(updated))


# -- server-side apply ---------------------------------------------------------------------


async def test_apply_creates_and_records_the_applied_fields(server: Server) -> None:
    config = applied(
        CONFIGMAPS,
        "a",
        data={"k": "v"},
        metadata={"name": "a", "labels": {"x": "1"}, "finalizers": ["example.com/f"]},
    )
    created = await apply(server, CONFIGMAPS, config, "ctl")
    assert created["data"] == {"k": "v"}
    assert created["metadata"]["labels"] == {"x": "1"}
    assert created["metadata"]["finalizers"] == ["example.com/f"]
    assert ownership(created) == [
        (
            "ctl",
            "Apply",
            "v1",
            "",
            b'{"f:data":{"f:k":{}},"f:metadata":{"f:finalizers":{"v:\\"example.com/f\\"":{}},'
            b'"f:labels":{"f:x":{}}}}',
        )
    ]
    again = await apply(server, CONFIGMAPS, config, "ctl")
    assert rv(again) == rv(created)  # nothing changed: nothing written
    await server.client.patch(
        CONFIGMAPS, "a", {"metadata": {"finalizers": None}}, namespace=server.namespace
    )


async def test_apply_conflicts_with_another_managers_field(server: Server) -> None:
    await apply(server, CONFIGMAPS, applied(CONFIGMAPS, "a", data={"k": "1", "o": "x"}), "one")
    # the same value is no conflict: both own the field
    shared = await apply(server, CONFIGMAPS, applied(CONFIGMAPS, "a", data={"k": "1"}), "two")
    assert fields_of(shared, "one") == {"f:data": {"f:k": {}, "f:o": {}}}
    assert fields_of(shared, "two") == {"f:data": {"f:k": {}}}
    # "two" changed nothing in the object: its entry has no time
    times = {e["manager"]: e.get("time") for e in shared["metadata"]["managedFields"]}
    assert times["two"] is None and times["one"] is not None
    with pytest.raises(Conflict) as raised:
        await apply(server, CONFIGMAPS, applied(CONFIGMAPS, "a", data={"k": "2"}), "two")
    assert raised.value.message == 'Apply failed with 1 conflict: conflict with "one": .data.k'
    assert raised.value.details["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "one"', "field": ".data.k"}
    ]
    unchanged = await server.client.get(CONFIGMAPS, "a", namespace=server.namespace)
    assert unchanged["data"] == {"k": "1", "o": "x"}
    forced = await apply(
        server, CONFIGMAPS, applied(CONFIGMAPS, "a", data={"k": "2"}), "two", force=True
    )
    assert forced["data"] == {"k": "2", "o": "x"}
    assert fields_of(forced, "one") == {"f:data": {"f:o": {}}}
    assert fields_of(forced, "two") == {"f:data": {"f:k": {}}}


async def test_apply_conflicts_list_every_field_by_manager(server: Server) -> None:
    cm = configmap("a", server.namespace, {"k": "1", "u": "1"})
    cm["metadata"]["labels"] = {"x": "1"}
    await server.client.create(CONFIGMAPS, cm)
    await apply(server, CONFIGMAPS, applied(CONFIGMAPS, "a", data={"k": "2"}), "one", force=True)
    config = applied(CONFIGMAPS, "a", data={"k": "3", "u": "3"})
    config["metadata"]["labels"] = {"x": "3"}
    with pytest.raises(Conflict) as raised:
        await apply(server, CONFIGMAPS, config, "two")
    assert raised.value.message == (
        'Apply failed with 3 conflicts: conflicts with "kcontrol" using v1:\n'
        "- .data.u\n"
        "- .metadata.labels.x\n"
        'conflicts with "one":\n'
        "- .data.k"
    )
    assert sorted(c["field"] for c in raised.value.details["causes"]) == [
        ".data.k",
        ".data.u",
        ".metadata.labels.x",
    ]


async def test_apply_removes_what_the_manager_stopped_applying(server: Server) -> None:
    config = applied(CONFIGMAPS, "a", data={"keep": "1", "drop": "1", "shared": "1"})
    config["metadata"]["labels"] = {"gone": "1"}
    await apply(server, CONFIGMAPS, config, "one")
    await apply(server, CONFIGMAPS, applied(CONFIGMAPS, "a", data={"shared": "1"}), "two")
    after = await apply(server, CONFIGMAPS, applied(CONFIGMAPS, "a", data={"keep": "1"}), "one")
    assert after["data"] == {"keep": "1", "shared": "1"}  # "shared" is two's as well
    assert "labels" not in after["metadata"]
    assert fields_of(after, "one") == {"f:data": {"f:keep": {}}}
    assert fields_of(after, "two") == {"f:data": {"f:shared": {}}}


async def test_an_update_takes_fields_from_an_applier(server: Server) -> None:
    await apply(server, CONFIGMAPS, applied(CONFIGMAPS, "a", data={"k": "1", "j": "1"}), "one")
    current = await server.client.get(CONFIGMAPS, "a", namespace=server.namespace)
    current["data"]["k"] = "2"  # an Update never conflicts: the field changes hands
    updated = await server.client.update(CONFIGMAPS, current)
    assert fields_of(updated, "one") == {"f:data": {"f:j": {}}}
    assert fields_of(updated, "kcontrol", "Update") == {"f:data": {"f:k": {}}}
    with pytest.raises(Conflict, match=r'conflict with "kcontrol" using v1: \.data\.k'):
        await apply(server, CONFIGMAPS, applied(CONFIGMAPS, "a", data={"k": "1", "j": "1"}), "one")


async def test_apply_merges_keyed_lists_and_replaces_atomic_ones(server: Server) -> None:
    first = deployment("a", server.namespace)
    container = first["spec"]["template"]["spec"]["containers"][0]
    container["ports"] = [{"containerPort": 80}]
    await apply(server, DEPLOYMENTS, first, "one")
    sidecar = applied(
        DEPLOYMENTS,
        "a",
        spec={
            "template": {
                "spec": {
                    "containers": [{"name": "sidecar", "image": "busybox", "args": ["sleep", "1"]}]
                }
            }
        },
    )
    merged = await apply(server, DEPLOYMENTS, sidecar, "two")
    containers = merged["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [
        ("web", "nginx:1"),
        ("sidecar", "busybox"),
    ]
    assert fields_of(merged, "two") == {
        "f:spec": {
            "f:template": {
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"sidecar"}': {".": {}, "f:args": {}, "f:image": {}, "f:name": {}}
                    }
                }
            }
        }
    }
    assert fields_of(merged, "one")["f:spec"]["f:template"]["f:spec"]["f:containers"] == {
        'k:{"name":"web"}': {
            ".": {},
            "f:image": {},
            "f:name": {},
            "f:ports": {
                'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}
            },
        }
    }
    assert fields_of(merged, "one")["f:spec"]["f:selector"] == {}  # an atomic map
    sidecar["spec"]["template"]["spec"]["containers"][0]["args"] = ["sleep", "2"]
    replaced = await apply(server, DEPLOYMENTS, sidecar, "two")
    assert replaced["spec"]["template"]["spec"]["containers"][1]["args"] == ["sleep", "2"]
    assert generation(replaced) == 3


async def test_apply_to_a_custom_resource_follows_its_schema(server: Server) -> None:
    config = applied(
        WIDGETS,
        "a",
        spec={"image": "x", "tags": ["a", "b"], "ports": [{"name": "http", "port": 80}]},
    )
    await apply(server, WIDGETS, config, "one")
    other = applied(WIDGETS, "a", spec={"ports": [{"name": "metrics", "port": 9090}]})
    merged = await apply(server, WIDGETS, other, "two")
    assert merged["spec"]["ports"] == [
        {"name": "http", "port": 80},
        {"name": "metrics", "port": 9090},
    ]
    assert fields_of(merged, "one") == {
        "f:spec": {
            "f:image": {},
            "f:ports": {'k:{"name":"http"}': {".": {}, "f:name": {}, "f:port": {}}},
            "f:tags": {},
        }
    }
    with pytest.raises(Conflict, match=r"\.spec\.tags"):
        await apply(server, WIDGETS, applied(WIDGETS, "a", spec={"tags": ["c"]}), "two")


async def test_apply_to_free_form_fields(server: Server) -> None:
    config = applied(GADGETS, "a", spec={"config": {"a": {"b": 1}}, "size": 1})
    created = await apply(server, GADGETS, config, "one")
    assert created["spec"] == {"config": {"a": {"b": 1}}, "size": 1}
    assert fields_of(created, "one") == {
        "f:spec": {"f:config": {".": {}, "f:a": {".": {}, "f:b": {}}}, "f:size": {}}
    }


async def test_status_apply(server: Server) -> None:
    await server.client.create(WIDGETS, widget("a", server.namespace))
    ready = applied(
        WIDGETS,
        "a",
        spec={"replicas": 9},
        status={"phase": "Up", "conditions": [{"type": "Ready", "status": "True"}]},
    )
    first = await apply(server, WIDGETS, ready, "ctrl", subresource="status")
    assert first["spec"]["replicas"] == 1
    assert generation(first) == 1
    assert (
        "ctrl",
        "Apply",
        WIDGETS.api_version,
        "status",
        b'{"f:status":{"f:conditions":{"k:{\\"type\\":\\"Ready\\"}":{".":{},"f:status":{},"f:type":{}}},"f:phase":{}}}',
    ) in ownership(first)
    synced = applied(WIDGETS, "a", status={"conditions": [{"type": "Synced", "status": "True"}]})
    both = await apply(server, WIDGETS, synced, "syncer", subresource="status")
    assert [c["type"] for c in both["status"]["conditions"]] == ["Ready", "Synced"]
    # the main resource neither takes nor owns status
    main = await apply(server, WIDGETS, applied(WIDGETS, "a", status={"phase": "Down"}), "other")
    assert main["status"]["phase"] == "Up"
    assert fields_of(main, "other") is None
    assert rv(main) == rv(both)


async def test_apply_refusals(server: Server) -> None:
    with pytest.raises(BadRequest, match="invalid object type: apps/v2, Kind=Deployment"):
        await apply(
            server,
            DEPLOYMENTS,
            {**deployment("a", server.namespace), "apiVersion": "apps/v2"},
            "one",
        )
    with pytest.raises(ValueError, match="field_manager"):
        await server.client.patch(
            CONFIGMAPS, "a", applied(CONFIGMAPS, "a"), namespace=server.namespace, patch_type=APPLY
        )
    await server.client.create(CONFIGMAPS, configmap("a", server.namespace))
    with pytest.raises(Invalid, match="force"):
        await server.client.patch(
            CONFIGMAPS, "a", {"data": {"k": "x"}}, namespace=server.namespace, force=True
        )
    with pytest.raises(NotFound):
        await apply(server, CONFIGMAPS, applied(CONFIGMAPS, "a"), "one", subresource="status")
    with pytest.raises(NotFound):
        await apply(
            server, WIDGETS, applied(WIDGETS, "none", status={}), "one", subresource="status"
        )


async def test_a_removal_takes_the_field_from_every_owner(server: Server) -> None:
    config = applied(CONFIGMAPS, "a", data={"k": "1", "j": "1"})
    await apply(server, CONFIGMAPS, config, "one")
    await apply(server, CONFIGMAPS, applied(CONFIGMAPS, "a", data={"j": "1"}), "two")
    current = await server.client.get(CONFIGMAPS, "a", namespace=server.namespace)
    del current["data"]["j"]
    updated = await server.client.update(CONFIGMAPS, current)
    assert fields_of(updated, "one") == {"f:data": {"f:k": {}}}
    assert fields_of(updated, "two") is None  # it owned nothing else: its entry is gone
    assert fields_of(updated, "kcontrol", "Update") is None  # a removal owns nothing


@pytest.mark.parametrize("reset", [[], [{}]], ids=["empty", "one-empty-entry"])
async def test_writing_empty_managed_fields_clears_them(server: Server, reset: Any) -> None:
    await apply(server, CONFIGMAPS, applied(CONFIGMAPS, "a", data={"k": "1"}), "one")
    current = await server.client.get(CONFIGMAPS, "a", namespace=server.namespace)
    cleared = await server.client.update(
        CONFIGMAPS, {**current, "metadata": {**current["metadata"], "managedFields": reset}}
    )
    assert "managedFields" not in cleared["metadata"]
    assert rv(cleared) > rv(current)
    # the next apply finds no owners: the server records the object as it was first
    with pytest.raises(Conflict, match=r'conflict with "before-first-apply" using v1: \.data\.k'):
        await apply(server, CONFIGMAPS, applied(CONFIGMAPS, "a", data={"k": "2"}), "two")
    taken = await apply(server, CONFIGMAPS, applied(CONFIGMAPS, "a", data={"k": "1"}), "two")
    assert ownership(taken) == [
        ("before-first-apply", "Update", "v1", "", b'{"f:data":{".":{},"f:k":{}}}'),
        ("two", "Apply", "v1", "", b'{"f:data":{"f:k":{}}}'),
    ]


async def test_keyed_list_items_keep_their_place(server: Server) -> None:
    ports = [{"name": n, "port": p} for n, p in (("a", 1), ("b", 2), ("c", 3))]
    await apply(server, WIDGETS, applied(WIDGETS, "w", spec={"ports": ports}), "one")
    later = [{"name": "d", "port": 4}, {"name": "b", "port": 2}, {"name": "e", "port": 5}]
    merged = await apply(server, WIDGETS, applied(WIDGETS, "w", spec={"ports": later}), "two")
    assert [p["name"] for p in merged["spec"]["ports"]] == ["a", "d", "b", "c", "e"]


async def test_entries_carry_the_time_of_their_last_change(server: Server) -> None:
    created = await apply(server, CONFIGMAPS, applied(CONFIGMAPS, "a", data={"k": "1"}), "one")
    [entry] = created["metadata"]["managedFields"]
    assert list(entry) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entry["time"])


# -- deletion with finalizers -------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "generation_after"),
    [
        pytest.param(DEPLOYMENTS, 2, id="deployment"),
        pytest.param(WIDGETS, 2, id="widget"),
        pytest.param(CONFIGMAPS, None, id="configmap-no-generation"),
    ],
)
async def test_marking_for_deletion_bumps_the_generation(
    server: Server, resource: Resource, generation_after: int | None
) -> None:
    """BeforeDelete: an object kept by a finalizer gets a deletionTimestamp and, for a kind
    with a generation, the next one - so a generation_changed() predicate lets the deletion
    through, on the fake as on the server."""
    if resource is DEPLOYMENTS:
        obj = deployment("a", server.namespace)
    elif resource is CONFIGMAPS:
        obj = configmap("a", server.namespace)
    else:
        obj = widget("a", server.namespace)
    obj["metadata"]["finalizers"] = ["example.com/hold"]
    created = await server.client.create(resource, obj)
    await server.client.delete(resource, "a", namespace=server.namespace)
    marked = await server.client.get(resource, "a", namespace=server.namespace)
    assert marked["metadata"]["deletionTimestamp"]
    assert rv(marked) > rv(created)
    assert marked["metadata"].get("generation") == generation_after
    await server.client.patch(
        resource, "a", {"metadata": {"finalizers": None}}, namespace=server.namespace
    )
    with pytest.raises(NotFound):
        await server.client.get(resource, "a", namespace=server.namespace)
