"""The Website operator: kcontrol's operator example (see docs/guides/operator.md).

A ``Website`` (``demo.example.com/v1``, :file:`crd.yaml`) asks for an image served by some
replicas; the operator keeps a Deployment and a Service for each one, owned by it, and reports
``status.readyReplicas``, ``status.phase`` and a ``Ready`` condition. Run it with
``python -m examples.website [--kubeconfig PATH] [kcontrol-manager flags]``.
"""

from examples.website.controller import WEBSITES, manager, reconcile

__all__ = ["WEBSITES", "manager", "reconcile"]
