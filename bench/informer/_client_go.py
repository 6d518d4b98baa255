"""The client-go peer: ``bench/reference/informer`` (a client-go SharedInformerFactory pod
informer, built from the client-go module of the same Kubernetes minor version by
``bench._reference``). It prints its figures as one bare JSON line, as the Python children
print their ``RESULT`` line.

Flags: ``-trim-managed-fields`` (kube-controller-manager's transform), ``-protobuf``,
``-disable-compression``, ``-churn`` (sync, then count updates between ``start`` and
``stop`` on stdin). ``KUBE_FEATURE_WatchListClient=false`` in its environment turns its
default streaming list back into LIST.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench._reference import build_reference

__all__ = ["KCM_FLAGS", "LIST_ENV", "build", "go_argv"]

KCM_FLAGS = ("-trim-managed-fields", "-protobuf", "-disable-compression")
"""The client-go child as kube-controller-manager configures its client and informers
(cmd/kube-controller-manager/app/options/options.go and controllermanager.go)."""

LIST_ENV = {"KUBE_FEATURE_WatchListClient": "false"}
"""client-go's environment for a LIST instead of the streaming list (its default since v0.35)."""


def build() -> Path:
    """The reference informer binary (built on first use)."""
    return build_reference("informer")


def go_argv(binary: Path, *extra: str) -> Callable[[str, str], list[str]]:
    """(kubeconfig, namespace) -> the command running the Go informer."""

    def argv(kubeconfig: str, namespace: str) -> list[str]:
        return [str(binary), "-kubeconfig", kubeconfig, "-namespace", namespace, *extra]

    return argv
