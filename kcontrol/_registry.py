"""Metric families created once per prometheus-client registry.

A registry refuses a second collector with the same metric names, while many components of one
kind (queues, clients, controllers) share a registry. Each metrics module therefore keeps one
:class:`PerRegistry` and asks it for its families; components then take labelled children.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry

__all__ = ["PerRegistry"]

T = TypeVar("T")


class PerRegistry(Generic[T]):
    """Calls ``create(registry)`` the first time a registry is asked for, then returns the
    cached result for that registry (held weakly: a dropped registry frees its families).
    ``None`` means prometheus-client's global registry. Thread-safe."""

    def __init__(self, create: Callable[[CollectorRegistry], T]) -> None:
        self._create = create
        self._lock = threading.Lock()
        self._by_registry: weakref.WeakKeyDictionary[CollectorRegistry, T] = (
            weakref.WeakKeyDictionary()
        )

    def get(self, registry: CollectorRegistry | None = None) -> T:
        registry = REGISTRY if registry is None else registry
        with self._lock:
            try:
                return self._by_registry[registry]
            except KeyError:
                created = self._by_registry[registry] = self._create(registry)
                return created
