"""The Website operator: kcontrol's operator example (see docs/guides/operator.md).

A ``Website`` (``demo.example.com/v1``, :file:`crd.yaml`) asks for an image served by some
replicas; the operator keeps a Deployment and a Service for each one, owned by it, and reports
``status.readyReplicas``, ``status.phase`` and a ``Ready`` condition. Its webhooks
(:mod:`examples.website.webhooks`) default the replicas, refuse an unpinned image or too many
replicas, and convert the older ``v1beta1`` (a size instead of a count). Run it with
``python -m examples.website [--kubeconfig PATH] [--webhook-install-url=https://127.0.0.1:9443]
[kcontrol-manager flags]``.
"""

from examples.website.controller import WEBSITES, manager, reconcile

__all__ = ["WEBSITES", "manager", "reconcile"]
