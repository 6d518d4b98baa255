"""The config-restart controller: when a ConfigMap or Secret changes, roll the Deployments,
StatefulSets and DaemonSets that use it.

A redesign, on kcontrol, of xing's kubernetes-deployment-restart-controller, compatible with
its annotations: a workload opts in with ``configrestart.kcontrol.io/deployment-restart:
enabled`` (or xing's ``com.xing.deployment-restart: enabled``); the controller keeps on it a
JSON annotation of keyed checksums of every config its pods use, and restarts it - one merge
patch setting a timestamp annotation in the pod template - when one of them changes. Changes
wait a grace period, so several in a row restart once.

Run by ``kcontrol-manager --controllers=configrestart`` (off under ``*``) with
``--configrestart-hmac-key-file`` (required); see ``docs/controllers/configrestart.md``.

Layout, one topic per module: ``_names`` (name, annotations, kinds, keys), ``_references`` (which
configs a pod template uses), ``_checksums`` (HMAC key, canonical data, the ConfigMap and Secret
transform), ``_catalog`` (configs and workloads in memory), ``_changes`` (grace period and
compaction), ``_plan`` (what to write on a workload, the patch), ``_metrics``,
``_controller`` (informers, handlers, change loop, sync), ``_factory`` (flags, :data:`SPEC`).
"""

from typing import TYPE_CHECKING

from ._factory import (
    CHECK_PERIOD,
    GRACE_PERIOD,
    HMAC_KEY_FILE,
    IGNORED_ERRORS,
    SPEC,
    new_controller,
)
from ._names import (
    DAEMONSETS,
    ENABLED,
    KCONTROL,
    NAME,
    QUEUE_NAME,
    RESTART_REASON,
    STATEFULSETS,
    XING,
    AnnotationFamily,
)

if TYPE_CHECKING:
    from ._catalog import Catalog
    from ._changes import Change, ChangeQueue
    from ._checksums import CHECKSUM_FIELD, HmacKey
    from ._controller import ConfigRestartController
    from ._plan import Plan, plan
    from ._references import referenced_configs
else:  # imported on first use: kcontrol-manager loads SPEC whether the controller runs or not
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "._catalog": ["Catalog"],
            "._changes": ["Change", "ChangeQueue"],
            "._checksums": ["CHECKSUM_FIELD", "HmacKey"],
            "._controller": ["ConfigRestartController"],
            "._plan": ["Plan", "plan"],
            "._references": ["referenced_configs"],
        },
    )

__all__ = [
    "CHECKSUM_FIELD",
    "CHECK_PERIOD",
    "DAEMONSETS",
    "ENABLED",
    "GRACE_PERIOD",
    "HMAC_KEY_FILE",
    "IGNORED_ERRORS",
    "KCONTROL",
    "NAME",
    "QUEUE_NAME",
    "RESTART_REASON",
    "SPEC",
    "STATEFULSETS",
    "XING",
    "AnnotationFamily",
    "Catalog",
    "Change",
    "ChangeQueue",
    "ConfigRestartController",
    "HmacKey",
    "Plan",
    "new_controller",
    "plan",
    "referenced_configs",
]
