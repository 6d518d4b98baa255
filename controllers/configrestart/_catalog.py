"""The catalog: what the controller knows of configs and opted-in workloads (pure, in memory).

As xing's controller does, the catalog is built from informer events in whatever order they
come: a workload may reference a config not seen yet (a *pending* config: known by name,
without a checksum), and a config may be seen before any workload uses it. Only opted-in
workloads are catalogued; every config is (its checksum is all that is kept), so a workload
that opts in later finds its configs already known.

Per workload it keeps the configs its pod template references, the checksums its annotation
holds (*stored*), and a *baseline* for each referenced config the annotation has no checksum
for: the config's checksum when the reference was first seen (or, for a config not seen yet,
when it first appeared). :func:`~kcontrol_controllers.configrestart._plan.plan` compares the current
checksum with the baseline to decide that a config newly referenced changed again before its
checksum was stored - xing's "change counter > 1" rule, made exact (an edit back to the same
data restarts nothing) and independent of the order in which changes are processed (xing's
documented gap: a config edited just after a new Deployment referencing it). Baselines live
in memory only; stored checksums are the durable state.

Invariants: ``_users[c]`` is exactly the set of catalogued workloads whose references
contain ``c``; every referenced config has an entry in ``_configs`` (``None`` while pending);
a pending config nobody references is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ._names import WORKLOAD_KINDS, split_key

__all__ = ["Catalog", "WorkloadEntry"]


@dataclass(slots=True)
class WorkloadEntry:
    """One opted-in workload: see the module docstring."""

    references: frozenset[str]
    stored: dict[str, str]
    baselines: dict[str, str] = field(default_factory=dict)


class Catalog:
    """Configs and workloads by catalog key (``configmap/ns/name``, ``deployment/ns/name``).

    The ``observe_*`` methods return whether what they saw is a *change* in xing's sense (a
    config added or its checksum changed; a workload added, its references or its stored
    checksums changed): the caller queues those.
    """

    def __init__(self) -> None:
        self._configs: dict[str, str | None] = {}
        self._workloads: dict[str, WorkloadEntry] = {}
        self._users: dict[str, set[str]] = {}

    # -- reads -------------------------------------------------------------------------------

    @property
    def config_count(self) -> int:
        """Configs known, pending ones included (xing's ``configs_total``)."""
        return len(self._configs)

    @property
    def workload_count(self) -> int:
        return len(self._workloads)

    def checksum(self, config: str) -> str | None:
        """The config's checksum; ``None`` if unknown or pending."""
        return self._configs.get(config)

    def is_pending(self, config: str) -> bool:
        return config in self._configs and self._configs[config] is None

    def workload(self, key: str) -> WorkloadEntry | None:
        return self._workloads.get(key)

    def users(self, config: str) -> frozenset[str]:
        """The catalogued workloads referencing ``config``."""
        return frozenset(self._users.get(config, ()))

    def affected(self, key: str) -> list[str]:
        """The workloads a change of ``key`` may affect: a config's users, or the workload
        itself if catalogued; sorted."""
        kind = split_key(key)[0]
        if kind in WORKLOAD_KINDS:
            return [key] if key in self._workloads else []
        return sorted(self._users.get(key, ()))

    # -- configs -----------------------------------------------------------------------------

    def observe_config(self, key: str, checksum: str) -> bool:
        """A config was added or updated; True if it is new (or was pending) or its checksum
        changed."""
        previous = self._configs.get(key)
        self._configs[key] = checksum
        for user in self._users.get(key, ()):
            entry = self._workloads[user]
            if key not in entry.stored and key not in entry.baselines:
                entry.baselines[key] = checksum  # first seen since the reference was
        return previous != checksum

    def forget_config(self, key: str) -> None:
        """A config was deleted: pending again if still referenced, else dropped."""
        if self._users.get(key):
            self._configs[key] = None
        else:
            self._configs.pop(key, None)

    # -- workloads ---------------------------------------------------------------------------

    def observe_workload(
        self, key: str, references: frozenset[str], stored: Mapping[str, str]
    ) -> bool:
        """An opted-in workload was added or updated; True if it is new, or its references
        or its stored checksums changed."""
        entry = self._workloads.get(key)
        if entry is None:
            entry = self._workloads[key] = WorkloadEntry(frozenset(), {})
            changed = True
        else:
            changed = entry.references != references or entry.stored != dict(stored)
        for config in entry.references - references:
            self._unlink(config, key)
            entry.baselines.pop(config, None)
        for config in references - entry.references:
            self._users.setdefault(config, set()).add(key)
            self._configs.setdefault(config, None)
        entry.references = references
        entry.stored = dict(stored)
        for config in references:
            if config in entry.stored:
                entry.baselines.pop(config, None)  # the annotation is the authority now
            elif config not in entry.baselines:
                checksum = self._configs.get(config)
                if checksum is not None:
                    entry.baselines[config] = checksum
        return changed

    def forget_workload(self, key: str) -> bool:
        """A workload was deleted or opted out; True if it was catalogued."""
        entry = self._workloads.pop(key, None)
        if entry is None:
            return False
        for config in entry.references:
            self._unlink(config, key)
        return True

    def _unlink(self, config: str, workload: str) -> None:
        users = self._users.get(config)
        if users is not None:
            users.discard(workload)
            if not users:
                del self._users[config]
                if self._configs.get(config, "") is None:
                    del self._configs[config]  # a pending config nobody references
