"""Which configs a pod template uses: every way a pod reads a ConfigMap or Secret."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol_controllers.configrestart import referenced_configs

CASES: list[tuple[str, dict[str, Any], set[str]]] = [
    ("empty template", {}, set()),
    (
        "envFrom configMapRef and secretRef",
        {
            "containers": [
                {"envFrom": [{"configMapRef": {"name": "a"}}, {"secretRef": {"name": "b"}}]}
            ]
        },
        {"configmap/ns/a", "secret/ns/b"},
    ),
    (
        "env valueFrom key refs",
        {
            "containers": [
                {
                    "env": [
                        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}},
                        {"name": "Y", "valueFrom": {"secretKeyRef": {"name": "d", "key": "k"}}},
                        {"name": "Z", "value": "plain"},
                        {"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    ]
                }
            ]
        },
        {"configmap/ns/c", "secret/ns/d"},
    ),
    (
        "configMap, secret and projected volumes",
        {
            "volumes": [
                {"name": "v1", "configMap": {"name": "e"}},
                {"name": "v2", "secret": {"secretName": "f"}},
                {
                    "name": "v3",
                    "projected": {
                        "sources": [
                            {"configMap": {"name": "g"}},
                            {"secret": {"name": "h"}},
                            {"serviceAccountToken": {"path": "token"}},
                        ]
                    },
                },
                {"name": "v4", "emptyDir": {}},
            ]
        },
        {"configmap/ns/e", "secret/ns/f", "configmap/ns/g", "secret/ns/h"},
    ),
    (
        "init and ephemeral containers",
        {
            "initContainers": [{"envFrom": [{"configMapRef": {"name": "init"}}]}],
            "ephemeralContainers": [{"envFrom": [{"secretRef": {"name": "debug"}}]}],
        },
        {"configmap/ns/init", "secret/ns/debug"},
    ),
    (
        "optional references count",
        {"containers": [{"envFrom": [{"configMapRef": {"name": "o", "optional": True}}]}]},
        {"configmap/ns/o"},
    ),
    (
        "imagePullSecrets and nameless references do not",
        {
            "imagePullSecrets": [{"name": "pull"}],
            "containers": [{"envFrom": [{"configMapRef": {}}, {"prefix": "P_"}]}],
            "volumes": [{"name": "v", "secret": {}}],
        },
        set(),
    ),
    (
        "duplicates collapse",
        {
            "containers": [
                {"envFrom": [{"configMapRef": {"name": "a"}}]},
                {"envFrom": [{"configMapRef": {"name": "a"}}]},
            ],
            "volumes": [{"name": "v", "configMap": {"name": "a"}}],
        },
        {"configmap/ns/a"},
    ),
]


@pytest.mark.parametrize(("spec", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_referenced_configs(spec: dict[str, Any], expected: set[str]) -> None:
    assert referenced_configs("ns", {"spec": spec}) == expected
