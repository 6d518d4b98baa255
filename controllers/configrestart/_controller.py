"""The config-restart controller: informers, event handlers, the change loop, the sync.

Event handlers only update the
:class:`~kcontrol_controllers.configrestart._catalog.Catalog` and record *changes*
(:class:`~kcontrol_controllers.configrestart._changes.ChangeQueue`); they never block. Every
check period the change loop takes the changes older than the grace period and queues the
workloads they affect; the runner's workers sync those one key at a time (a key is never
synced twice at once), with a timeout and rate-limited retries.

:meth:`ConfigRestartController.sync` is level-based: it reads the workload from the cache,
recomputes its references and what its checksums annotation should hold, and sends at most
one merge patch - the annotation, plus the restart trigger in the pod template when a config
it used changed. The patch carries the cached ``resourceVersion``, so a decision made from a
stale cache (say, before the controller's own previous patch was seen) fails with a
Conflict and is retried once the cache caught up, instead of restarting twice.

A workload synced for its own change (say, the controller's previous patch of its
annotation) leaves alone the configs whose changes are still waiting: they are acted on when
their own change comes due, so compaction holds whatever else happens meanwhile.

The durable state is the checksums annotation: a controller killed during the grace period
loses its pending changes, but its successor finds the stored checksum of a config different
from the config's current one and restarts then.

Start-up: the change loop starts once every handler has been called for the initial list of
its informer (ConfigMaps, Secrets and the three workload kinds), and the changes recorded
until then - each object's first sight - count their grace period from that moment. They
come due together, so a workload is written once, with the checksums of all its configs,
whichever informer synced last. (Starting earlier, a workload would be written with its
ConfigMaps' checksums, then again a grace period after the Secrets came in.)

ConfigMaps and Secrets come through informers of the controller's own - not the shared
factory's, so no other controller ever gets a cache without config data, and none of the
factory's caches ever holds it - whose transform keeps their identity and their keyed
checksum only
(:meth:`~kcontrol_controllers.configrestart._checksums.HmacKey.config_transform`). Logs and
events name configs by namespace and name, never their content.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import Client, Object
from kcontrol.clock import Clock, RealClock
from kcontrol.controller import Controller, ControllerOptions
from kcontrol.errors import NotFound
from kcontrol.events import EventRecorder
from kcontrol.informers import (
    DeletedFinalStateUnknown,
    Lister,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    SharedInformerFactory,
    wait_for_cache_sync,
)
from kcontrol.logging import get_logger
from kcontrol.metatime import format_time

from ._catalog import Catalog
from ._changes import ChangeQueue
from ._checksums import HmacKey, cached_checksum
from ._metrics import metrics_for
from ._names import (
    CONFIG_KINDS,
    NAME,
    QUEUE_NAME,
    RESTART_REASON,
    WORKLOAD_KINDS,
    family_of,
    make_key,
    split_key,
)
from ._plan import patch_body, plan, stored_checksums
from ._references import referenced_configs, template_of

__all__ = ["NAME", "QUEUE_NAME", "RESTART_REASON", "ConfigRestartController"]

_log = get_logger(__name__)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _unwrap(obj: Any) -> Mapping[str, Any] | None:
    if isinstance(obj, DeletedFinalStateUnknown):
        obj = obj.obj
    return obj if isinstance(obj, Mapping) else None


def _key_of(kind: str, obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    return make_key(kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


class ConfigRestartController:
    """Restarts opted-in Deployments, StatefulSets and DaemonSets when a ConfigMap or Secret
    they use changes; see the module docstring and :mod:`kcontrol_controllers.configrestart`.

    ``key`` is the HMAC key of the checksums; ``check_period`` and ``grace_period`` are
    seconds; an error whose text matches one of ``ignored_errors`` (``re.search``) is logged
    as a warning and the workload's change dropped, any other is retried (rate-limited).
    :meth:`run` blocks until cancelled; handlers, :meth:`process_due_changes` and
    :meth:`sync` are public for tests, and so are the controller's own informers
    (:attr:`configmaps`, :attr:`secrets`), which :meth:`run` runs.
    """

    def __init__(
        self,
        *,
        client: Client,
        informers: SharedInformerFactory,
        recorder: EventRecorder,
        key: HmacKey,
        check_period: float = 0.5,
        grace_period: float = 5.0,
        ignored_errors: Sequence[re.Pattern[str]] = (),
        workers: int = 4,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        sync_timeout: float | None = 30.0,
    ) -> None:
        if check_period <= 0:
            raise ValueError(f"check_period must be > 0, got {check_period}")
        self._client = client
        self._recorder = recorder
        self._key = key
        self._check_period = check_period
        self._ignored_errors = tuple(ignored_errors)
        self._clock: Clock = clock if clock is not None else RealClock()
        self.catalog = Catalog()
        self.changes = ChangeQueue(grace_period)
        self.metrics = metrics_for(registry)

        self.configmaps, self.secrets = (
            SharedIndexInformer(
                client, CONFIG_KINDS[kind], transform=key.config_transform(kind), clock=clock
            )
            for kind in ("configmap", "secret")
        )
        workloads = {kind: informers.for_resource(r) for kind, r in WORKLOAD_KINDS.items()}
        self._listers: dict[str, Lister] = {kind: i.lister() for kind, i in workloads.items()}
        registrations = [
            config_informer.add_event_handler(self._config_handlers(kind))
            for kind, config_informer in (("configmap", self.configmaps), ("secret", self.secrets))
        ]
        registrations += [
            informer.add_event_handler(self._workload_handlers(kind))
            for kind, informer in workloads.items()
        ]
        # The catalog is built by the handlers: a cache is complete for the controller once
        # its handler has seen the initial list, not merely once the informer has stored it.
        self._synced = [registration.has_synced for registration in registrations]
        self.controller = Controller(
            ControllerOptions(
                name=QUEUE_NAME,
                sync=self.sync,
                workers=workers,
                has_synced=self._synced,
                sync_timeout=sync_timeout,
                clock=self._clock,
                registry=registry,
            )
        )

    async def run(self) -> None:
        """Run the ConfigMap and Secret informers, the workers and, once every handler has
        seen its informer's initial list, the change loop, until cancelled (module
        docstring). The workload informers are the shared factory's: its owner runs them."""
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self.configmaps.run(), name="configrestart configmaps informer")
            tasks.create_task(self.secrets.run(), name="configrestart secrets informer")
            tasks.create_task(self.controller.run(), name="configrestart workers")
            await wait_for_cache_sync(*self._synced, clock=self._clock)
            self.changes.restart_grace(self._clock.now())
            _log.debug("caches synced; changes seen so far wait one grace period from now")
            tasks.create_task(self._change_loop(), name="configrestart changes")

    async def _change_loop(self) -> None:
        while True:
            await self._clock.sleep(self._check_period)
            self.process_due_changes()

    def process_due_changes(self) -> list[str]:
        """Queue the workloads affected by the changes past their grace period; returns
        them (sorted)."""
        due = self.changes.pop_due(self._clock.now())
        affected: set[str] = set()
        for key in due:
            workloads = self.catalog.affected(key)
            if not workloads:
                _log.debug("change affects no workload", resource=key)
            affected.update(workloads)
        if due:
            self.metrics.changes_processed.inc(len(due))
        self.metrics.changes_waiting.set(len(self.changes))
        for workload in sorted(affected):
            self.controller.enqueue(workload)
        return sorted(affected)

    # -- event handlers ----------------------------------------------------------------------

    def _changed(self, key: str) -> None:
        change = self.changes.add(key, self._clock.now())
        _log.debug("resource changed", resource=key, count=change.count)
        self._update_gauges()

    def _update_gauges(self) -> None:
        self.metrics.configs.set(self.catalog.config_count)
        self.metrics.deployments.set(self.catalog.workload_count)
        self.metrics.changes_waiting.set(len(self.changes))

    def _config_handlers(self, kind: str) -> ResourceEventHandlerFuncs:
        def seen(obj: Object) -> None:
            self.metrics.resource_versions.inc()
            checksum = cached_checksum(obj)
            if checksum is None:
                return
            key = _key_of(kind, obj)
            if self.catalog.observe_config(key, checksum):
                self._changed(key)
            else:
                self._update_gauges()

        def updated(old: Object, new: Object) -> None:
            if _meta(old).get("resourceVersion") != _meta(new).get("resourceVersion"):
                seen(new)

        def deleted(obj: Any) -> None:
            config = _unwrap(obj)
            if config is None:
                return
            key = _key_of(kind, config)
            self.catalog.forget_config(key)
            self.changes.discard(key)
            self._update_gauges()

        return ResourceEventHandlerFuncs(add_func=seen, update_func=updated, delete_func=deleted)

    def _workload_handlers(self, kind: str) -> ResourceEventHandlerFuncs:
        def seen(obj: Object) -> None:
            self.metrics.resource_versions.inc()
            key = _key_of(kind, obj)
            if self._observe_workload(key, obj):
                self._changed(key)

        def updated(old: Object, new: Object) -> None:
            if _meta(old).get("resourceVersion") != _meta(new).get("resourceVersion"):
                seen(new)

        def deleted(obj: Any) -> None:
            workload = _unwrap(obj)
            if workload is not None:
                self._forget_workload(_key_of(kind, workload))

        return ResourceEventHandlerFuncs(add_func=seen, update_func=updated, delete_func=deleted)

    def _observe_workload(self, key: str, obj: Mapping[str, Any]) -> bool:
        """Catalog an opted-in workload (True: a change), or forget an opted-out one."""
        annotations = _meta(obj).get("annotations")
        family = family_of(annotations)
        if family is None:
            self._forget_workload(key)
            return False
        namespace = str(_meta(obj).get("namespace") or "")
        references = referenced_configs(namespace, template_of(obj))
        stored, _ = stored_checksums(annotations, family)
        changed = self.catalog.observe_workload(key, references, stored)
        self._update_gauges()
        return changed

    def _forget_workload(self, key: str) -> None:
        if self.catalog.forget_workload(key):
            _log.debug("workload no longer tracked", workload=key)
        self.changes.discard(key)
        self._update_gauges()

    # -- sync --------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """Bring one workload's checksums annotation up to date, restarting it if a config
        it used changed (module docstring)."""
        kind, namespace, name = split_key(key)
        try:
            workload = self._listers[kind].get(namespace, name)
        except NotFound:
            self._forget_workload(key)
            return
        self._observe_workload(key, workload)  # level-based: from the cache, not the event
        entry = self.catalog.workload(key)
        annotations = _meta(workload).get("annotations")
        family = family_of(annotations)
        if entry is None or family is None:
            return  # opted out
        stored, in_family = stored_checksums(annotations, family)
        decision = plan(
            entry.references, stored, self._settled_checksum, entry.baselines, self._key.is_own
        )
        if not decision.restart and in_family and decision.checksums == stored:
            return
        _log.debug(
            "updating workload",
            workload=key,
            resource_version=_meta(workload).get("resourceVersion"),
            restart_for=",".join(decision.restart_for),
            stored={c: stored.get(c) for c in decision.restart_for},
            current={c: decision.checksums.get(c) for c in decision.restart_for},
            in_family=in_family,
        )
        restart_at = format_time(self._clock.wall()) if decision.restart else None
        body = patch_body(
            family,
            decision.checksums,
            resource_version=_meta(workload).get("resourceVersion"),
            restart_at=restart_at,
        )
        try:
            await self._client.patch(WORKLOAD_KINDS[kind], name, body, namespace=namespace)
        except NotFound:
            self._forget_workload(key)
            return
        except Exception as error:
            if not self._ignored(error):
                raise
            _log.warning(
                "workload update failed; the error matches --configrestart-ignored-errors, "
                "so it is not retried",
                workload=key,
                error=str(error),
            )
            return
        self.metrics.annotation_updates.inc()
        legacy = [c for c in decision.adopted if self._key.is_legacy(stored.get(c))]
        if legacy:
            _log.info(
                "replaced checksums of the legacy format (not bound to the config's name)",
                workload=key,
                configs=",".join(legacy),
            )
        if len(legacy) < len(decision.adopted):
            _log.info(
                "replaced checksums made by another key or controller",
                workload=key,
                configs=",".join(c for c in decision.adopted if c not in legacy),
            )
        if decision.restart:
            self.metrics.restarts.inc()
            changed = ", ".join(decision.restart_for)
            _log.info("restarting workload", workload=key, configs=changed)
            self._recorder.event(
                workload, "Normal", RESTART_REASON, f"Restarting: {changed} changed"
            )
        else:
            _log.debug("checksums annotation updated", workload=key)

    def _settled_checksum(self, config: str) -> str | None:
        """The config's checksum, or ``None`` (leave the stored one as it is) while a change
        of the config is still waiting out its grace period: a workload synced for another
        reason (its own change) must not act on it early, or a second edit within the grace
        period would restart it again. The config's own change syncs the workload later."""
        if config in self.changes:
            return None
        return self.catalog.checksum(config)

    def _ignored(self, error: Exception) -> bool:
        text = str(error)
        return any(pattern.search(text) for pattern in self._ignored_errors)
