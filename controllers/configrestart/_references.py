"""Which ConfigMaps and Secrets a pod template uses (pure).

Every way a pod can read a config counts, in every kind of container:

- ``envFrom[].configMapRef`` / ``envFrom[].secretRef``;
- ``env[].valueFrom.configMapKeyRef`` / ``env[].valueFrom.secretKeyRef``;
- volumes: ``configMap``, ``secret``, and ``projected.sources[].configMap`` / ``.secret``;
- in ``containers``, ``initContainers`` and ``ephemeralContainers``.

References marked ``optional`` count too: if the config appears or changes later, the pods
should see it. ``imagePullSecrets`` do not: a changed pull secret does not change what running
pods read. xing's controller reads only ``envFrom`` and ConfigMap volumes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ._names import make_key

__all__ = ["referenced_configs", "template_of"]

_CONTAINER_FIELDS = ("initContainers", "containers", "ephemeralContainers")


def template_of(workload: Mapping[str, Any]) -> Mapping[str, Any]:
    """``spec.template`` of a Deployment, StatefulSet or DaemonSet (``{}`` if absent)."""
    return (workload.get("spec") or {}).get("template") or {}


def _named(ref: Any, field: str = "name") -> str | None:
    if isinstance(ref, Mapping):
        name = ref.get(field)
        if isinstance(name, str) and name:
            return name
    return None


def _container_refs(container: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    for source in container.get("envFrom") or ():
        yield "configmap", _named(source.get("configMapRef"))
        yield "secret", _named(source.get("secretRef"))
    for env in container.get("env") or ():
        value_from = env.get("valueFrom") or {}
        yield "configmap", _named(value_from.get("configMapKeyRef"))
        yield "secret", _named(value_from.get("secretKeyRef"))


def _volume_refs(volume: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    yield "configmap", _named(volume.get("configMap"))
    yield "secret", _named(volume.get("secret"), "secretName")
    for source in (volume.get("projected") or {}).get("sources") or ():
        yield "configmap", _named(source.get("configMap"))
        yield "secret", _named(source.get("secret"))


def referenced_configs(namespace: str, template: Mapping[str, Any]) -> frozenset[str]:
    """The catalog keys (``configmap/<ns>/<name>``, ``secret/<ns>/<name>``) of every config
    the pod ``template`` in ``namespace`` uses (module docstring)."""
    spec = template.get("spec") or {}
    found: set[str] = set()
    refs: list[tuple[str, str | None]] = []
    for field in _CONTAINER_FIELDS:
        for container in spec.get(field) or ():
            refs.extend(_container_refs(container))
    for volume in spec.get("volumes") or ():
        refs.extend(_volume_refs(volume))
    for kind, name in refs:
        if name is not None:
            found.add(make_key(kind, namespace, name))
    return frozenset(found)
