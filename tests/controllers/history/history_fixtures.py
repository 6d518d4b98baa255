"""Shared fixtures of the ControllerRevision history tests, after upstream's
controller_history_test.go: ``new_stateful_set`` and ``raw_template`` build the parents and
the data their revisions hold; :class:`Fixture` is a :class:`History` over a
:class:`~kcontrol.testing.FakeClient` and a ControllerRevision cache the test fills."""

from __future__ import annotations

import copy
from typing import Any

from kcontrol.client import CONTROLLERREVISIONS, Object
from kcontrol.informers import IndexedStore, Lister
from kcontrol.labels import Selector, selector_from_label_selector
from kcontrol.retry import Backoff
from kcontrol.testing import FakeClient
from kcontrol_controllers.history import (
    CONTROLLER_REVISION_CONTROLLER_INDEX,
    History,
    controller_revision_index_func,
    new_controller_revision,
)

NS = "default"
PARENT_KIND = ("apps/v1", "StatefulSet")
NO_PAUSE = Backoff(duration=0.0, steps=4)
"""client-go's DefaultBackoff has 4 attempts; the tests do not wait between them."""


def new_stateful_set(name: str, uid: str, labels: dict[str, str]) -> Object:
    """A StatefulSet whose selector has only ``matchExpressions`` (upstream leaves
    ``matchLabels`` empty so a lookup ignoring the expressions breaks)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": NS, "uid": uid},
        "spec": {
            "replicas": 3,
            "selector": {
                "matchExpressions": [
                    {"key": key, "operator": "In", "values": [value]}
                    for key, value in labels.items()
                ]
            },
            "serviceName": "governingsvc",
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx",
                            "volumeMounts": [
                                {"name": "datadir", "mountPath": "/tmp/"},
                                {"name": "home", "mountPath": "/home"},
                            ],
                        }
                    ],
                    "volumes": [{"name": "home", "hostPath": {"path": "/tmp/home"}}],
                },
            },
        },
    }


SS1 = new_stateful_set("ss1", "ss1-uid", {"foo": "bar"})
SS2 = new_stateful_set("ss2", "ss2-uid", {"goo": "car"})


def raw_template(parent: Object) -> Any:
    """The data a revision of ``parent`` holds: a copy of its pod template."""
    return copy.deepcopy(parent["spec"]["template"])


def selector_of(parent: Object) -> Selector:
    return selector_from_label_selector(parent["spec"]["selector"])


def revision_of(
    parent: Object,
    revision: int,
    collision_count: int | None = 0,
    *,
    data: Any = None,
    orphan: bool = False,
) -> Object:
    """A new revision of ``parent`` numbered ``revision`` holding its template (or
    ``data``); with ``orphan`` its owner references are dropped."""
    cr = new_controller_revision(
        parent,
        PARENT_KIND,
        parent["spec"]["template"]["metadata"]["labels"],
        raw_template(parent) if data is None else data,
        revision,
        collision_count,
    )
    if orphan:
        cr["metadata"]["ownerReferences"] = []
    return cr


def names(revisions: list[Object]) -> set[str]:
    return {r["metadata"]["name"] for r in revisions}


class Fixture:
    """A :class:`History` whose API is ``client`` and whose cache is ``store`` (with the
    controller index when ``indexed``). :meth:`seed` puts revisions on the fake server and
    into the cache, as an informer would see them."""

    def __init__(self, *, indexed: bool = False) -> None:
        self.client = FakeClient()
        self.store = IndexedStore(
            {CONTROLLER_REVISION_CONTROLLER_INDEX: controller_revision_index_func}
            if indexed
            else None
        )
        self.history = History(
            self.client,
            Lister(self.store, CONTROLLERREVISIONS),
            indexer=self.store if indexed else None,
            backoff=NO_PAUSE,
        )

    def seed(self, *revisions: Object) -> list[Object]:
        """Store ``revisions`` on the server and in the cache; returns the stored copies
        (with their uid and resourceVersion)."""
        stored = []
        for revision in revisions:
            server_copy = self.client.tracker.add(revision)
            self.store.add(copy.deepcopy(server_copy))
            stored.append(server_copy)
        return stored

    def server(self, name: str) -> Object:
        return self.client.tracker.get(CONTROLLERREVISIONS, name, namespace=NS)

    def server_names(self) -> set[str]:
        return names(self.client.tracker.list(CONTROLLERREVISIONS, namespace=NS)["items"])
