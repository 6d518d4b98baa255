"""The semantic revision comparison (StatefulSetSemanticRevisionComparison; upstream
stateful_set_compatibility_test's scenario: a set last revised by kube-controller-manager 1.33
must not roll when a later controller syncs it) and the pod template defaults it applies."""

from __future__ import annotations

import json
from typing import Any

import pytest
from statefulset_fixtures import COMPAT_DATA_1_33, COMPAT_NAME_1_33, compat_set, new_stateful_set

from kcontrol.client import Object, deep_copy
from kcontrol_controllers import history
from kcontrol_controllers.statefulset._defaults import default_pod_template, image_pull_policy
from kcontrol_controllers.statefulset._revisions import new_revision
from kcontrol_controllers.statefulset._semantic import (
    RevisionEqualityCache,
    normalized,
    set_matches_latest_revision,
)


def stored_revision(data: Any, resource_version: str = "234", revision: int = 1) -> Object:
    """A ControllerRevision as the API server returns it."""
    return {
        "metadata": {
            "name": COMPAT_NAME_1_33,
            "namespace": "test",
            "resourceVersion": resource_version,
        },
        "data": data,
        "revision": revision,
    }


def test_a_1_33_revision_matches_the_set_served_by_1_34() -> None:
    set_ = compat_set(creation_timestamp_null=False)
    latest = stored_revision(json.loads(COMPAT_DATA_1_33))
    proposed = new_revision(set_, 2, 0)
    assert not history.equal_revision(proposed, latest), "the data differ as JSON"
    assert set_matches_latest_revision(set_, proposed, latest)


def test_a_revision_written_before_fields_were_defaulted_matches() -> None:
    set_ = compat_set(creation_timestamp_null=False)
    old = json.loads(COMPAT_DATA_1_33)
    template_spec = old["spec"]["template"]["spec"]
    for field in ("dnsPolicy", "schedulerName", "securityContext", "terminationGracePeriodSeconds"):
        del template_spec[field]
    container = template_spec["containers"][0]
    del container["imagePullPolicy"], container["terminationMessagePolicy"]
    assert set_matches_latest_revision(set_, new_revision(set_, 2, 0), stored_revision(old))


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda t: t["spec"]["containers"][0].update(image="test:2"), id="image"),
        pytest.param(
            lambda t: t["spec"]["containers"][0].update(env=[{"name": "A", "value": "1"}]),
            id="a field the user added",
        ),
        pytest.param(lambda t: t["spec"].update(dnsPolicy="Default"), id="a non-default value"),
        pytest.param(lambda t: t["metadata"]["labels"].update(tier="db"), id="a label"),
    ],
)
def test_a_real_change_does_not_match(change: Any) -> None:
    set_ = compat_set(creation_timestamp_null=False)
    change(set_["spec"]["template"])
    latest = stored_revision(json.loads(COMPAT_DATA_1_33))
    assert not set_matches_latest_revision(set_, new_revision(set_, 2, 0), latest)


def test_a_revision_missing_a_field_the_set_has_not_defaulted_does_not_match() -> None:
    set_ = compat_set(creation_timestamp_null=False)
    set_["spec"]["template"]["spec"]["dnsPolicy"] = "Default"  # the user's, not the default
    old = json.loads(COMPAT_DATA_1_33)
    del old["spec"]["template"]["spec"]["dnsPolicy"]  # defaulting gives ClusterFirst
    assert not set_matches_latest_revision(set_, new_revision(set_, 2, 0), stored_revision(old))


def test_the_comparison_modifies_nothing() -> None:
    set_ = compat_set(creation_timestamp_null=False)
    latest = stored_revision(json.loads(COMPAT_DATA_1_33))
    proposed = new_revision(set_, 2, 0)
    before = deep_copy((set_, latest, proposed))
    set_matches_latest_revision(set_, proposed, latest, RevisionEqualityCache())
    assert (set_, latest, proposed) == before


def test_unapplicable_data_does_not_match() -> None:
    set_ = compat_set(creation_timestamp_null=False)
    latest = stored_revision({"spec": {"$retainKeys": []}})
    assert not set_matches_latest_revision(set_, new_revision(set_, 2, 0), latest)


def test_a_match_is_cached_by_set_uid_generation_and_revision_resource_version() -> None:
    set_ = compat_set(creation_timestamp_null=False)
    cache = RevisionEqualityCache()
    latest = stored_revision(json.loads(COMPAT_DATA_1_33))
    assert set_matches_latest_revision(set_, new_revision(set_, 2, 0), latest, cache)
    assert len(cache) == 1

    # The same key answers from the cache, without comparing again ...
    changed = compat_set(creation_timestamp_null=False)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "test:2"
    assert set_matches_latest_revision(changed, new_revision(changed, 2, 0), latest, cache)
    # ... a new generation does not,
    changed["metadata"]["generation"] = 2
    assert not set_matches_latest_revision(changed, new_revision(changed, 2, 0), latest, cache)
    # nor a revision of another resourceVersion, and a mismatch is not remembered.
    other = stored_revision(latest["data"], resource_version="235")
    assert not set_matches_latest_revision(changed, new_revision(changed, 2, 0), other, cache)
    assert len(cache) == 1


def test_objects_not_from_the_server_are_not_cached() -> None:
    set_ = compat_set(creation_timestamp_null=False)
    cache = RevisionEqualityCache()
    latest = stored_revision(json.loads(COMPAT_DATA_1_33), resource_version="")
    assert set_matches_latest_revision(set_, new_revision(set_, 2, 0), latest, cache)
    assert len(cache) == 0


def test_cache_drops_the_least_recently_used() -> None:
    cache = RevisionEqualityCache(max_entries=2)
    cache.add(("a", 1, "1"))
    cache.add(("b", 1, "1"))
    assert cache.contains(("a", 1, "1"))  # a is now the most recently used
    cache.add(("c", 1, "1"))
    assert not cache.contains(("b", 1, "1"))
    assert cache.contains(("a", 1, "1")) and cache.contains(("c", 1, "1"))
    assert len(cache) == 2
    with pytest.raises(ValueError, match="positive"):
        RevisionEqualityCache(max_entries=0)


def test_normalized() -> None:
    value = {
        "a": None,
        "b": {},
        "c": [],
        "d": {"e": {"f": None}, "g": 0, "h": "", "i": False},
        "j": [{}, {"k": None}, 1],
    }
    assert normalized(value) == {"d": {"g": 0, "h": "", "i": False}, "j": [{}, {}, 1]}
    assert value["a"] is None and value["b"] == {}  # not modified


# -- the defaults ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("registry.example.com:5000/team/nginx", "Always"),  # the port is not a tag
        ("registry.example.com:5000/team/nginx:v2", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),  # a digest, no tag
        ("nginx:latest@sha256:" + "a" * 64, "Always"),
        ("Nginx", "IfNotPresent"),  # upper case does not parse
        ("a" * 64, "IfNotPresent"),  # an image ID is not a name
        ("", "IfNotPresent"),
    ],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_default_pod_template_gives_what_the_server_stored() -> None:
    stored = json.loads(COMPAT_DATA_1_33)["spec"]["template"]
    template = {
        "metadata": {"annotations": {"test": "value"}, "labels": {"app": "foo"}},
        "spec": {"containers": [{"image": "test", "name": "test"}]},
    }
    defaulted = default_pod_template(template)
    assert normalized(defaulted) == normalized({k: v for k, v in stored.items() if k != "$patch"})
    assert defaulted["spec"]["securityContext"] == {}
    assert template["spec"] == {"containers": [{"image": "test", "name": "test"}]}


def test_default_pod_template_keeps_what_is_set() -> None:
    template = {"spec": {"dnsPolicy": "None", "terminationGracePeriodSeconds": 0}}
    defaulted = default_pod_template(template)["spec"]
    assert defaulted["dnsPolicy"] == "None"
    assert defaulted["terminationGracePeriodSeconds"] == 0  # set, even if zero


def test_default_pod_template_nested_fields() -> None:
    probe = {"httpGet": {"port": 80}}
    template: dict[str, Any] = {
        "spec": {
            "initContainers": [{"name": "init", "image": "busybox:1"}],
            "containers": [
                {
                    "name": "app",
                    "image": "app:1",
                    "ports": [{"containerPort": 80}],
                    "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}],
                    "livenessProbe": probe,
                    "readinessProbe": {"grpc": {"port": 9}, "periodSeconds": 5},
                    "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}},
                }
            ],
            "volumes": [
                {"name": "scratch"},
                {"name": "s", "secret": {"secretName": "s"}},
                {"name": "c", "configMap": {"name": "c", "defaultMode": 256}},
                {"name": "h", "hostPath": {"path": "/x"}},
                {
                    "name": "p",
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"path": "t"}},
                            {
                                "downwardAPI": {
                                    "items": [{"path": "n", "fieldRef": {"fieldPath": "x"}}]
                                }
                            },
                        ]
                    },
                },
                {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                {"name": "i", "image": {"reference": "data:latest"}},
            ],
        }
    }
    spec = default_pod_template(template)["spec"]
    init, app = spec["initContainers"][0], spec["containers"][0]
    assert init["imagePullPolicy"] == "IfNotPresent" and init["terminationMessagePolicy"] == "File"
    assert app["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert app["env"][0]["valueFrom"]["fieldRef"] == {"fieldPath": "x", "apiVersion": "v1"}
    assert app["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert app["readinessProbe"]["grpc"] == {"port": 9, "service": ""}
    assert app["readinessProbe"]["periodSeconds"] == 5
    assert app["lifecycle"]["preStop"]["httpGet"] == {"port": 80, "path": "/stop", "scheme": "HTTP"}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["scratch"] == {"name": "scratch", "emptyDir": {}}
    assert volumes["s"]["secret"]["defaultMode"] == 420
    assert volumes["c"]["configMap"]["defaultMode"] == 256
    assert volumes["h"]["hostPath"] == {"path": "/x", "type": ""}
    token, downward = volumes["p"]["projected"]["sources"]
    assert volumes["p"]["projected"]["defaultMode"] == 420
    assert token["serviceAccountToken"]["expirationSeconds"] == 3600
    assert downward["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"] == "v1"
    assert volumes["e"]["ephemeral"]["volumeClaimTemplate"]["spec"] == {"volumeMode": "Filesystem"}
    assert volumes["i"]["image"]["pullPolicy"] == "Always"
    assert probe == {"httpGet": {"port": 80}}  # the input is not modified


def test_default_pod_template_without_spec() -> None:
    assert default_pod_template({})["spec"] == {
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30,
        "schedulerName": "default-scheduler",
    }


def test_a_set_with_defaults_matches_its_own_revision() -> None:
    set_ = new_stateful_set(3)
    set_["spec"]["template"] = default_pod_template(set_["spec"]["template"])
    revision = new_revision(set_, 1, 0)
    revision["metadata"]["resourceVersion"] = "1"
    assert set_matches_latest_revision(set_, new_revision(set_, 2, 0), revision)
