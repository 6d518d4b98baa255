"""The garbage collector: kube-controller-manager's ``pkg/controller/garbagecollector`` for
kcontrol (Kubernetes 1.36 behaviour).

It deletes the objects whose owners (``metadata.ownerReferences``) are all gone, and carries
out the propagation an owner's deletion asks for: background (dependents deleted after the
owner), foreground (the owner keeps its ``foregroundDeletion`` finalizer until its
``blockOwnerDeletion`` dependents are gone) and orphan (the ``orphan`` finalizer: the owner's
references are removed from its dependents first). Its dependency graph is built from a
metadata-only informer of every deletable resource that discovery finds, re-synced every
30 s so that custom resources installed or removed while it runs are followed.

Run by ``kcontrol-manager`` as ``garbage-collector-controller`` (entry point
``kcontrol_controllers.garbagecollector:SPEC``), off by default and never sharded;
:func:`new_controller` builds it from a :class:`~kcontrol.manager.ControllerContext`.

Layout: ``_graph`` (nodes and identities), ``_graph_builder`` (the graph's single writer and
the queues), ``_monitors`` (informers kept in step with discovery), ``_collector`` (the
attempt-to-delete and attempt-to-orphan decisions), ``_operations`` (the API calls),
``_controller`` (wiring), ``_metrics``, ``_names``, ``_factory``.
"""

from typing import TYPE_CHECKING

from ._factory import (
    CONCURRENT_GC_SYNCS,
    ENABLE_GARBAGE_COLLECTOR,
    SPEC,
    deletable_resources,
    new_controller,
)
from ._names import (
    ATTEMPT_TO_DELETE_QUEUE,
    ATTEMPT_TO_ORPHAN_QUEUE,
    DEFAULT_CONCURRENT_GC_SYNCS,
    DEFAULT_IGNORED_RESOURCES,
    GRAPH_CHANGES_QUEUE,
    NAME,
)

if TYPE_CHECKING:
    from ._controller import GarbageCollectorController
else:  # imported on first use: kcontrol-manager loads SPEC whether the controller runs or not
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, {"._controller": ["GarbageCollectorController"]})

__all__ = [
    "ATTEMPT_TO_DELETE_QUEUE",
    "ATTEMPT_TO_ORPHAN_QUEUE",
    "CONCURRENT_GC_SYNCS",
    "DEFAULT_CONCURRENT_GC_SYNCS",
    "DEFAULT_IGNORED_RESOURCES",
    "ENABLE_GARBAGE_COLLECTOR",
    "GRAPH_CHANGES_QUEUE",
    "NAME",
    "SPEC",
    "GarbageCollectorController",
    "deletable_resources",
    "new_controller",
]
