"""An example controller: annotate labelled ConfigMaps with the identity of the manager.

It watches ConfigMaps labelled ``kcontrol.example/annotate=true`` in every namespace and makes
sure each one carries the annotation ``kcontrol.example/seen: <identity>``, where ``<identity>``
is the leader-election identity of the ``kcontrol-manager`` process that wrote it. Because the
value names the writer, the annotation shows which manager acted on an object, which is how
the manager's failover tests check that a deposed leader writes nothing.

Run it against a cluster (see README.md)::

    python -m examples.configmap_annotator --kubeconfig ~/.kube/config --leader-elect=false

:data:`SPEC` registers it with a :class:`~kcontrol.manager.ControllerRegistry`; the module's
``__main__`` passes a registry holding only this controller to :func:`kcontrol.manager.main`.
A package would instead declare it in its ``pyproject.toml``::

    [project.entry-points."kcontrol.controllers"]
    configmap-annotator = "examples.configmap_annotator:SPEC"
"""

from examples.configmap_annotator._controller import (
    ANNOTATION,
    LABEL_SELECTOR,
    NAME,
    SPEC,
    new_reconcile,
)

__all__ = ["ANNOTATION", "LABEL_SELECTOR", "NAME", "SPEC", "new_reconcile"]
