"""The defaults the API server gives a pod template (core/v1 defaulting, Kubernetes 1.36), for
the semantic revision comparison.

A ControllerRevision's data is stored as written and never defaulted again, while the
StatefulSet's template is defaulted each time the server reads it: after an upgrade that
defaults a new field, the set's template has the field and its latest revision does not.
:func:`default_pod_template` fills in what ``legacyscheme.Scheme.Default`` fills into a
``PodTemplateSpec`` - the ``SetDefaults_*`` functions and declarative defaults that reach a
template's pod spec, its containers, probes, lifecycle handlers, ports, environment, and
volumes:

- pod spec: ``dnsPolicy: ClusterFirst``, ``restartPolicy: Always``, ``securityContext: {}``,
  ``terminationGracePeriodSeconds: 30``, ``schedulerName: default-scheduler``;
- every container (init and ephemeral too): ``imagePullPolicy`` (``Always`` for the tag
  ``latest`` or no tag nor digest, else ``IfNotPresent``), ``terminationMessagePath:
  /dev/termination-log``, ``terminationMessagePolicy: File``, port ``protocol: TCP``, probe
  timeouts and thresholds (1, 10, 1, 3), ``httpGet`` ``path: /`` and ``scheme: HTTP``,
  ``grpc.service: ""``, an env ``fieldRef``'s ``apiVersion: v1``;
- volumes: a volume without a source is an ``emptyDir``; ``defaultMode: 420`` (0644) for
  secret, configMap, downwardAPI and projected volumes; a projected token's
  ``expirationSeconds: 3600``; ``hostPath.type: ""``; an image volume's ``pullPolicy``; an
  ephemeral claim's ``volumeMode: Filesystem``; the iSCSI, RBD, Azure disk and ScaleIO
  defaults.

Left out, because no comparison needs them: resource quantities are not rounded to milli
units (both sides come from the server in canonical form), and ``SetDefaults_Pod``'s
defaults (requests from limits, ``enableServiceLinks``, host ports) belong to pods, not
templates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any, Final

from kcontrol.client import Object, deep_copy

__all__ = ["default_pod_template", "image_pull_policy"]

_FILE_MODE_0644: Final = 420

# The docker reference grammar (github.com/distribution/reference), enough to find a tag.
_DOMAIN_COMPONENT: Final = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN: Final = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_PATH_COMPONENT: Final = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REFERENCE: Final = re.compile(
    rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?"
)
_MAX_NAME_LENGTH: Final = 255
_HEX_IDENTIFIER: Final = re.compile(r"[a-f0-9]{64}")  # an image ID, refused as a name


def image_pull_policy(image: str) -> str:
    """The pull policy the API server defaults for ``image``: ``Always`` when its tag is
    ``latest`` or it has neither tag nor digest (the tag is then ``latest``), otherwise
    ``IfNotPresent`` - also for a reference that does not parse (upper case in the path, a
    bare 64-hex image ID, a name over 255 characters), as upstream ignores the parse error."""
    match = _REFERENCE.fullmatch(image)
    if match is None or _HEX_IDENTIFIER.fullmatch(image):
        return "IfNotPresent"
    if match.group("tag") is not None:
        name_length = match.start("tag") - 1
    elif match.group("digest") is not None:
        name_length = match.start("digest") - 1
    else:
        name_length = len(image)
    if name_length > _MAX_NAME_LENGTH:
        return "IfNotPresent"
    tag = match.group("tag") or ("" if match.group("digest") else "latest")
    return "Always" if tag == "latest" else "IfNotPresent"


def default_pod_template(template: Mapping[str, Any]) -> Object:
    """A copy of ``template`` with the API server's defaults filled in (``template`` is not
    modified). Fields already set are kept, even where the server would not have set them."""
    result: Object = deep_copy(dict(template))
    pod_spec = result.get("spec")
    if not isinstance(pod_spec, dict):
        pod_spec = result["spec"] = {}
    _default_pod_spec(pod_spec)
    return result


def _default(obj: MutableMapping[str, Any], field: str, value: Any) -> None:
    """Set ``field`` to ``value`` when it is absent or Go's zero value (``None``, ``""``,
    0)."""
    current = obj.get(field)
    if current is None or current == "" or (current == 0 and current is not False):
        obj[field] = value


def _dicts(items: Any) -> Iterable[dict[str, Any]]:
    return [item for item in items or () if isinstance(item, dict)]


def _child(obj: Mapping[str, Any], field: str) -> dict[str, Any] | None:
    value = obj.get(field)
    return value if isinstance(value, dict) else None


def _default_pod_spec(pod_spec: dict[str, Any]) -> None:
    _default(pod_spec, "dnsPolicy", "ClusterFirst")
    _default(pod_spec, "restartPolicy", "Always")
    if pod_spec.get("securityContext") is None:
        pod_spec["securityContext"] = {}
    if pod_spec.get("terminationGracePeriodSeconds") is None:
        pod_spec["terminationGracePeriodSeconds"] = 30
    _default(pod_spec, "schedulerName", "default-scheduler")
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in _dicts(pod_spec.get(field)):
            _default_container(container)
    for volume in _dicts(pod_spec.get("volumes")):
        _default_volume(volume)


def _default_container(container: dict[str, Any]) -> None:
    if not container.get("imagePullPolicy"):
        container["imagePullPolicy"] = image_pull_policy(str(container.get("image") or ""))
    _default(container, "terminationMessagePath", "/dev/termination-log")
    _default(container, "terminationMessagePolicy", "File")
    for port in _dicts(container.get("ports")):
        _default(port, "protocol", "TCP")
    for env in _dicts(container.get("env")):
        _default_field_ref(_child(env, "valueFrom"))
    for probe_field in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = _child(container, probe_field)
        if probe is not None:
            _default_probe(probe)
    lifecycle = _child(container, "lifecycle") or {}
    for hook in ("postStart", "preStop"):
        handler = _child(lifecycle, hook)
        if handler is not None:
            _default_http_get(_child(handler, "httpGet"))


def _default_probe(probe: dict[str, Any]) -> None:
    _default(probe, "timeoutSeconds", 1)
    _default(probe, "periodSeconds", 10)
    _default(probe, "successThreshold", 1)
    _default(probe, "failureThreshold", 3)
    _default_http_get(_child(probe, "httpGet"))
    grpc = _child(probe, "grpc")
    if grpc is not None and grpc.get("service") is None:
        grpc["service"] = ""


def _default_http_get(action: dict[str, Any] | None) -> None:
    if action is not None:
        _default(action, "path", "/")
        _default(action, "scheme", "HTTP")


def _default_field_ref(holder: dict[str, Any] | None) -> None:
    """The ``fieldRef`` in ``holder`` (an env ``valueFrom``, a downward API item) gets
    ``apiVersion: v1``."""
    field_ref = _child(holder or {}, "fieldRef")
    if field_ref is not None:
        _default(field_ref, "apiVersion", "v1")


def _default_volume(volume: dict[str, Any]) -> None:
    if all(value is None for key, value in volume.items() if key != "name"):
        volume["emptyDir"] = {}
        return
    for source_field in ("secret", "configMap", "downwardAPI", "projected"):
        source = _child(volume, source_field)
        if source is not None and source.get("defaultMode") is None:
            source["defaultMode"] = _FILE_MODE_0644
    for item in _dicts((_child(volume, "downwardAPI") or {}).get("items")):
        _default_field_ref(item)
    for projection in _dicts((_child(volume, "projected") or {}).get("sources")):
        for item in _dicts((_child(projection, "downwardAPI") or {}).get("items")):
            _default_field_ref(item)
        token = _child(projection, "serviceAccountToken")
        if token is not None and token.get("expirationSeconds") is None:
            token["expirationSeconds"] = 3600
    _default_other_sources(volume)


def _default_other_sources(volume: dict[str, Any]) -> None:
    host_path = _child(volume, "hostPath")
    if host_path is not None and host_path.get("type") is None:
        host_path["type"] = ""
    image = _child(volume, "image")
    if image is not None and not image.get("pullPolicy"):
        image["pullPolicy"] = image_pull_policy(str(image.get("reference") or ""))
    claim_template = _child(_child(volume, "ephemeral") or {}, "volumeClaimTemplate")
    claim_spec = _child(claim_template or {}, "spec")
    if claim_spec is not None and claim_spec.get("volumeMode") is None:
        claim_spec["volumeMode"] = "Filesystem"
    iscsi = _child(volume, "iscsi")
    if iscsi is not None:
        _default(iscsi, "iscsiInterface", "default")
    azure_disk = _child(volume, "azureDisk")
    if azure_disk is not None:
        for field, value in (
            ("cachingMode", "ReadWrite"),
            ("kind", "Shared"),
            ("fsType", "ext4"),
            ("readOnly", False),
        ):
            if azure_disk.get(field) is None:
                azure_disk[field] = value
    rbd = _child(volume, "rbd")
    if rbd is not None:
        _default(rbd, "pool", "rbd")
        _default(rbd, "user", "admin")
        _default(rbd, "keyring", "/etc/ceph/keyring")
    scale_io = _child(volume, "scaleIO")
    if scale_io is not None:
        _default(scale_io, "storageMode", "ThinProvisioned")
        _default(scale_io, "fsType", "xfs")
