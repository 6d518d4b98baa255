"""The fake API server's storage and its write rules (upstream's ``testing.ObjectTracker``).

Objects live per resource, keyed by ``(namespace, name)`` (``""`` for cluster-scoped ones).
Every write takes the next value of one global counter as its ``metadata.resourceVersion``,
and is appended to a per-resource history that watches replay from. The rules follow the real
API server where a controller can observe the difference:

- create sets ``uid``, ``creationTimestamp`` and ``generation: 1`` (not for the built-in
  kinds that have no generation, such as ConfigMaps and Secrets), supports
  ``generateName``, refuses an existing name (AlreadyExists) or a preset
  ``resourceVersion`` (BadRequest), and drops ``status`` for resources with a status
  subresource;
- update and patch check ``metadata.resourceVersion`` and ``metadata.uid`` when the request
  carries them (Conflict), keep server-owned metadata, keep the stored ``status`` for
  resources with a status subresource (a status change through the main resource is
  dropped), bump ``generation`` when anything outside ``metadata`` and ``status`` changes
  (for Deployments also when annotations change; without a status subresource, as for a
  custom resource without one, a status change bumps it too), and write nothing at all
  when nothing changed;
- status writes (``subresource="status"``: update, patch, apply) change only ``status`` and
  never ``generation``; a resource without a status subresource answers them NotFound.
  Which resources have one: :data:`STATUS_SUBRESOURCES` by default, else the constructor's
  ``status_subresources``, plus :meth:`ObjectTracker.add_status_subresource` and
  :meth:`ObjectTracker.register`. (The real server's built-in status strategies let a few
  metadata changes through a status write, e.g. a Deployment's annotations; here a status
  write changes status only, as a custom resource's does.)
- server-side apply (``patch_type=PatchType.APPLY``) creates the object when it does not
  exist, merges the applied configuration, and keeps ``metadata.managedFields`` with the
  server's rules and format (:mod:`kcontrol.testing.fake._ssa._fieldmanager`): conflicts with
  other managers' fields (409 unless ``force``), removal of fields the applier stopped
  applying; creates, updates and non-apply patches record their changes under their field
  manager (operation ``Update``). Lists and maps merge as
  :mod:`kcontrol.testing.fake._ssa._shape` describes; no defaulting is done (the real server
  fills in defaults of built-in kinds, and its managedFields then own them too);
- delete checks ``uid``/``resourceVersion`` preconditions; an object with finalizers only gets
  a ``deletionTimestamp`` (and, for a kind with a generation, the next generation, as the
  apiserver's ``BeforeDelete`` gives it), and is removed once an update drops its last
  finalizer (no new finalizers may be added meanwhile).

Not modelled: admission (e.g. namespace existence), validation beyond the above, defaulting,
garbage collection and propagation policies, graceful pod deletion, historical (``Exact``)
lists.

Stored objects are never mutated in place (a write stores a new dict), so the history can share
them; everything handed out is a deep copy.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import random
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final, NamedTuple

import orjson

from kcontrol.client import (
    BUILTIN_RESOURCES,
    CRONJOBS,
    CUSTOMRESOURCEDEFINITIONS,
    DAEMONSETS,
    DEPLOYMENTS,
    HORIZONTALPODAUTOSCALERS,
    INGRESSES,
    JOBS,
    NAMESPACES,
    NODES,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    PODDISRUPTIONBUDGETS,
    PODS,
    REPLICASETS,
    REPLICATIONCONTROLLERS,
    RESOURCEQUOTAS,
    SERVICES,
    STATEFULSETS,
    ListOptions,
    Object,
    PatchType,
    Resource,
)
from kcontrol.clock import Clock, RealClock
from kcontrol.errors import (
    AlreadyExists,
    BadRequest,
    Gone,
    Invalid,
    NotFound,
    ServerTimeout,
)
from kcontrol.testing.fake._filter import ObjectFilter
from kcontrol.testing.fake._patch import apply_patch
from kcontrol.testing.fake._ssa import (
    DEFAULT_FIELD_MANAGER,
    BuiltinShape,
    SchemaShape,
    Shape,
    apply_config,
    check_write_options,
    record_apply,
    record_update,
)
from kcontrol.testing.fake._strategy import (
    WITHOUT_GENERATION,
    check_preconditions,
    copy_object,
    details,
    metadata_of,
    not_found,
    prepare_for_create,
    prepare_for_update,
    qualified,
    set_kind,
    set_scope,
)
from kcontrol.testing.fake._watch import ADDED, DELETED, MODIFIED, Watcher

__all__ = ["STATUS_SUBRESOURCES", "ObjectTracker"]

STATUS_SUBRESOURCES: Final = frozenset(
    {
        PODS,
        SERVICES,
        NAMESPACES,
        NODES,
        PERSISTENTVOLUMES,
        PERSISTENTVOLUMECLAIMS,
        RESOURCEQUOTAS,
        DEPLOYMENTS,
        REPLICASETS,
        REPLICATIONCONTROLLERS,
        STATEFULSETS,
        DAEMONSETS,
        JOBS,
        CRONJOBS,
        HORIZONTALPODAUTOSCALERS,
        PODDISRUPTIONBUDGETS,
        INGRESSES,
        CUSTOMRESOURCEDEFINITIONS,
    }
)
"""The built-in resources served with a status subresource: a tracker's default."""

_BUILTIN_SHAPE: Final[Shape] = BuiltinShape()

_NAME_SUFFIX_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_INITIAL_EVENTS_END: Final = {"k8s.io/initial-events-end": "true"}
_NO_OPTIONS: Final = ListOptions()

_Key = tuple[str, str]


class _Change(NamedTuple):
    resource_version: int
    type: str
    object: Object
    old: Object | None


def _set_managed_fields(metadata: dict[str, Any], entries: Any) -> None:
    if entries:
        metadata["managedFields"] = entries
    else:
        metadata.pop("managedFields", None)


def _etcd_order(key: _Key) -> str:
    return f"{key[0]}/{key[1]}" if key[0] else key[1]


class ObjectTracker:
    """In-memory objects with the API server's write rules; see the module docstring.

    All methods are synchronous and raise :class:`~kcontrol.errors.ApiError` subclasses as the
    server would. ``namespace`` arguments default to the object's own; a namespaced resource
    needs one from either place (BadRequest otherwise). The built-in resources
    (:data:`kcontrol.client.BUILTIN_RESOURCES`) are known from the start; others are
    registered on first use (without a status subresource) or explicitly with
    :meth:`register`. ``status_subresources`` lists the resources served with a status
    subresource (default :data:`STATUS_SUBRESOURCES`, the built-ins that have one).

    Writes record ownership under ``field_manager`` (default ``"kcontrol"``, what the
    server derives from :class:`~kcontrol.client.ApiClient`'s user agent).
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        status_subresources: Iterable[Resource] | None = None,
    ) -> None:
        self._clock: Clock = clock or RealClock()
        self._random = random.Random()
        # Invariant: _resource_version is the highest resourceVersion ever assigned; every
        # stored object and history entry carries one <= it.
        self._resource_version = 0
        self._compacted = 0
        self._by_kind: dict[tuple[str, str], Resource] = {}
        self._status_subresource: set[Resource] = set()
        self._shapes: dict[Resource, Shape] = {}
        self._objects: dict[Resource, dict[_Key, Object]] = {}
        self._history: dict[Resource, list[_Change]] = {}
        self._watchers: dict[Resource, list[Watcher]] = {}
        with_status = set(
            STATUS_SUBRESOURCES if status_subresources is None else status_subresources
        )
        for resource in (*BUILTIN_RESOURCES, *with_status):
            self.register(resource, status_subresource=resource in with_status)

    # -- resources and versions ----------------------------------------------------------

    def register(
        self,
        resource: Resource,
        *,
        status_subresource: bool = False,
        schema: Mapping[str, Any] | None = None,
    ) -> None:
        """Make ``resource`` known, so seed objects of its kind map to it.

        ``status_subresource`` says whether it is served with one; ``schema``, a
        CustomResourceDefinition version's ``openAPIV3Schema``, tells server-side apply how
        its lists and maps merge (without one, the built-in kinds' rules by field name)."""
        self._by_kind[(resource.api_version, resource.kind)] = resource
        if status_subresource:
            self._status_subresource.add(resource)
        else:
            self._status_subresource.discard(resource)
        if schema is not None:
            self._shapes[resource] = SchemaShape(schema)
        self._objects.setdefault(resource, {})
        self._history.setdefault(resource, [])
        self._watchers.setdefault(resource, [])

    def add_status_subresource(self, resource: Resource) -> None:
        """Serve ``resource`` (registering it if new) with a status subresource."""
        if resource not in self._objects:
            self.register(resource)
        self._status_subresource.add(resource)

    def _shape(self, resource: Resource) -> Shape:
        return self._shapes.get(resource, _BUILTIN_SHAPE)

    def resource_for(self, api_version: str, kind: str) -> Resource:
        """The registered resource serving ``kind`` at ``api_version``."""
        try:
            return self._by_kind[(api_version, kind)]
        except KeyError:
            raise LookupError(
                f"no resource registered for apiVersion={api_version!r} kind={kind!r}; "
                "register it first"
            ) from None

    def has_status_subresource(self, resource: Resource) -> bool:
        return resource in self._status_subresource

    @property
    def resource_version(self) -> str:
        """The latest resourceVersion assigned by any write."""
        return str(self._resource_version)

    @property
    def compacted_resource_version(self) -> int:
        """Watches from below this version, and continue tokens older than it, get 410 Gone."""
        return self._compacted

    def compact(self, resource_version: int | str | None = None) -> None:
        """Forget the history up to ``resource_version`` (default: all of it so far), like
        etcd compaction."""
        target = self._resource_version if resource_version is None else int(resource_version)
        self._compacted = max(self._compacted, target)
        for resource, history in self._history.items():
            self._history[resource] = [c for c in history if c.resource_version > self._compacted]

    def _store(self, resource: Resource) -> dict[_Key, Object]:
        if resource not in self._objects:
            self.register(resource)
        return self._objects[resource]

    def _next_resource_version(self) -> str:
        self._resource_version += 1
        return str(self._resource_version)

    def _now(self) -> str:
        return self._clock.wall().strftime("%Y-%m-%dT%H:%M:%SZ")

    # -- reads -----------------------------------------------------------------------------

    def get(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Object:
        """A copy of the stored object (also for the ``status`` subresource); NotFound if
        there is none."""
        namespace = self._namespace(resource, namespace, None)
        self._status_only(resource, name, subresource)
        result: Object = copy_object(self._existing(resource, namespace, name))
        return result

    def objects(self, resource: Resource, namespace: str | None = None) -> list[Object]:
        """Copies of all stored objects of ``resource`` (in ``namespace`` if given), in key
        order; a convenience for assertions."""
        store = self._store(resource)
        return [
            copy_object(store[key])
            for key in sorted(store, key=_etcd_order)
            if namespace is None or key[0] == namespace
        ]

    def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
    ) -> Object:
        """One page of a LIST, always served from the current state.

        The selectors, ``resource_version``, ``limit`` and ``continue_`` of ``options`` are
        honoured. A ``resource_version`` newer than the latest write fails like the server's
        "Too large resource version" (504 with cause ``ResourceVersionTooLarge``). Pages hold
        up to ``limit`` matching items; ``metadata.continue`` resumes after the last one, and
        every page reports the first page's resourceVersion. A continue token older than the
        compaction point is 410 Gone (reason ``Expired``).
        """
        options = options or _NO_OPTIONS
        selection = ObjectFilter.build(resource, namespace, options)
        limit = options.limit
        requested = self._parse_resource_version(options.resource_version)
        if requested is not None and requested > self._resource_version:
            raise ServerTimeout(
                f"Too large resource version: {requested}, current: {self._resource_version}",
                details={"causes": [{"reason": "ResourceVersionTooLarge"}], "retryAfterSeconds": 1},
                retry_after=1,
            )
        snapshot, start_after = self._resource_version, ""
        if options.continue_:
            snapshot, start_after = self._decode_continue(options.continue_)
        store = self._store(resource)
        keys = sorted((k for k in store if _etcd_order(k) > start_after), key=_etcd_order)
        matching = [(key, store[key]) for key in keys if selection.matches(store[key])]
        metadata: Object = {"resourceVersion": str(snapshot)}
        if limit is not None and limit > 0 and len(matching) > limit:
            last_key = matching[limit - 1][0]
            metadata["continue"] = self._encode_continue(snapshot, _etcd_order(last_key))
            metadata["remainingItemCount"] = len(matching) - limit
            matching = matching[:limit]
        return {
            "apiVersion": resource.api_version,
            "kind": f"{resource.kind}List",
            "metadata": metadata,
            "items": [copy_object(obj) for _, obj in matching],
        }

    def _encode_continue(self, snapshot: int, start_after: str) -> str:
        raw = orjson.dumps({"rv": snapshot, "start": start_after})
        return base64.urlsafe_b64encode(raw).decode()

    def _decode_continue(self, token: str) -> tuple[int, str]:
        try:
            decoded = orjson.loads(base64.urlsafe_b64decode(token.encode()))
            snapshot, start_after = int(decoded["rv"]), str(decoded["start"])
        except (binascii.Error, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            raise BadRequest(f"invalid continue token {token!r}") from None
        if snapshot < self._compacted:
            raise Gone(
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter.",
                reason="Expired",
            )
        return snapshot, start_after

    @staticmethod
    def _parse_resource_version(value: str | None) -> int | None:
        if not value:
            return None
        try:
            return int(value)
        except ValueError:
            raise BadRequest(f"invalid resource version {value!r}") from None

    # -- writes ------------------------------------------------------------------------------

    def add(self, obj: Mapping[str, Any], resource: Resource | None = None) -> Object:
        """Store ``obj`` as given, creating or replacing it without any checks: the way to
        seed state, or to simulate another writer. Missing ``uid``/``creationTimestamp``/
        ``generation`` are filled in; ``resourceVersion`` is always assigned;
        ``managedFields`` stay as given. ``resource`` defaults to the one registered for the
        object's apiVersion and kind."""
        new: Object = copy_object(obj)
        if resource is None:
            resource = self.resource_for(str(new.get("apiVersion")), str(new.get("kind")))
        set_kind(resource, new)
        metadata = metadata_of(new)
        namespace = self._namespace(resource, None, metadata.get("namespace"))
        name = metadata.get("name")
        if not name or not isinstance(name, str):
            raise BadRequest("metadata.name is required")
        set_scope(resource, metadata, namespace)
        metadata.setdefault("uid", str(uuid.uuid4()))
        metadata.setdefault("creationTimestamp", self._now())
        if resource not in WITHOUT_GENERATION:
            metadata.setdefault("generation", 1)
        old = self._store(resource).get((namespace, name))
        metadata["resourceVersion"] = self._next_resource_version()
        return self._commit(resource, ADDED if old is None else MODIFIED, new, old)

    def create(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str = DEFAULT_FIELD_MANAGER,
    ) -> Object:
        new: Object = copy_object(obj)
        set_kind(resource, new)
        metadata = metadata_of(new)
        namespace = self._namespace(resource, namespace, metadata.get("namespace"))
        set_scope(resource, metadata, namespace)
        store = self._store(resource)
        name = metadata.get("name")
        if not name:
            prefix = metadata.get("generateName")
            if not prefix or not isinstance(prefix, str):
                raise Invalid(
                    f"{resource.kind} is invalid: metadata.name: Required value: "
                    "name or generateName is required",
                    details=details(resource, ""),
                )
            name = self._generate_name(prefix, namespace, store)
            metadata["name"] = name
        if (namespace, name) in store:
            raise AlreadyExists(
                f'{qualified(resource)} "{name}" already exists',
                details=details(resource, name),
            )
        has_status = resource in self._status_subresource
        prepare_for_create(resource, new, has_status=has_status, now=self._now())
        record_update(
            resource,
            self._shape(resource),
            None,
            new,
            manager=field_manager,
            status_only=False,
            has_status=has_status,
            now=self._now(),
        )
        metadata["resourceVersion"] = self._next_resource_version()
        return self._commit(resource, ADDED, new, None)

    def update(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str = DEFAULT_FIELD_MANAGER,
    ) -> Object:
        """PUT the object (``subresource="status"``: only its status)."""
        incoming: Object = copy_object(obj)
        set_kind(resource, incoming)
        metadata = metadata_of(incoming)
        name = metadata.get("name")
        if not name or not isinstance(name, str):
            raise BadRequest("metadata.name is required for an update")
        namespace = self._namespace(resource, namespace, metadata.get("namespace"))
        status_only = self._status_only(resource, name, subresource)
        old = self._existing(resource, namespace, name)
        check_preconditions(resource, old, metadata.get("uid"), metadata.get("resourceVersion"))
        return self._replace(
            resource, old, incoming, status_only=status_only, manager=field_manager
        )

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = PatchType.MERGE,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> Object:
        """Apply ``patch`` to the stored object (see :mod:`kcontrol.testing.fake._patch` for the
        supported patch types). A patch that sets ``metadata.resourceVersion`` or
        ``metadata.uid`` makes it a precondition, as on the real server.

        Server-side apply (:attr:`PatchType.APPLY`, ``field_manager`` required) creates the
        object if it does not exist and takes ``force``; the other patch types record their
        changes under ``field_manager`` (default ``"kcontrol"``) and refuse ``force``."""
        patch_type = PatchType(patch_type)
        is_apply = patch_type is PatchType.APPLY
        check_write_options(apply=is_apply, field_manager=field_manager, force=force)
        namespace = self._namespace(resource, namespace, None)
        status_only = self._status_only(resource, name, subresource)
        if is_apply:
            assert field_manager is not None  # checked above
            return self._apply(
                resource,
                name,
                namespace,
                patch,
                manager=field_manager,
                force=bool(force),
                status_only=status_only,
            )
        old = self._existing(resource, namespace, name)
        patched = apply_patch(copy_object(old), patch, patch_type)
        metadata = patched.get("metadata")
        if not isinstance(metadata, dict):
            raise BadRequest("the patch removed metadata")
        if metadata.get("name") != name or metadata.get("namespace") != old["metadata"].get(
            "namespace"
        ):
            raise BadRequest("the patch must not change metadata.name or metadata.namespace")
        if (patched.get("apiVersion"), patched.get("kind")) != (old["apiVersion"], old["kind"]):
            raise BadRequest("the patch must not change apiVersion or kind")
        check_preconditions(resource, old, metadata.get("uid"), metadata.get("resourceVersion"))
        return self._replace(
            resource,
            old,
            patched,
            status_only=status_only,
            manager=field_manager or DEFAULT_FIELD_MANAGER,
        )

    def _apply(
        self,
        resource: Resource,
        name: str,
        namespace: str,
        patch: Any,
        *,
        manager: str,
        force: bool,
        status_only: bool,
    ) -> Object:
        """Server-side apply: merge, ownership and conflicts, then the usual write rules."""
        config = apply_config(
            resource, name, namespace, patch, served=lambda v, k: (v, k) in self._by_kind
        )
        old = self._store(resource).get((namespace, name))
        if old is None and status_only:
            raise not_found(resource, name)
        if old is not None:
            requested = config["metadata"]
            check_preconditions(
                resource, old, requested.get("uid"), requested.get("resourceVersion")
            )
        has_status = resource in self._status_subresource
        merged, managed_fields = record_apply(
            resource,
            self._shape(resource),
            old,
            config,
            manager=manager,
            force=force,
            status_only=status_only,
            has_status=has_status,
            now=self._now(),
        )
        set_kind(resource, merged)
        metadata = metadata_of(merged)
        set_scope(resource, metadata, namespace)
        metadata["name"] = name
        if old is None:
            prepare_for_create(resource, merged, has_status=has_status, now=self._now())
            _set_managed_fields(metadata, managed_fields)
            metadata["resourceVersion"] = self._next_resource_version()
            return self._commit(resource, ADDED, merged, None)
        new = prepare_for_update(
            resource, old, merged, status_only=status_only, has_status=has_status
        )
        _set_managed_fields(new["metadata"], managed_fields)
        return self._store_replacement(resource, old, new)

    def delete(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> Object:
        """Delete, or only mark for deletion while finalizers remain.

        Returns the object when it is kept (terminating), else a ``Status`` of Success.
        """
        namespace = self._namespace(resource, namespace, None)
        old = self._existing(resource, namespace, name)
        preconditions = preconditions or {}
        check_preconditions(
            resource,
            old,
            preconditions.get("uid"),
            preconditions.get("resourceVersion"),
            deleting=True,
        )
        old_metadata = old["metadata"]
        if old_metadata.get("finalizers"):
            if old_metadata.get("deletionTimestamp"):
                result: Object = copy_object(old)
                return result
            new: Object = copy_object(old)
            new["metadata"]["deletionTimestamp"] = self._now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            # The apiserver's BeforeDelete: marking an object for deletion is a change of
            # its desired state, so a kind with a generation gets the next one.
            generation = new["metadata"].get("generation")
            if isinstance(generation, int) and generation > 0:
                new["metadata"]["generation"] = generation + 1
            new["metadata"]["resourceVersion"] = self._next_resource_version()
            return self._commit(resource, MODIFIED, new, old)
        self._remove(resource, old)
        return {
            "apiVersion": "v1",
            "kind": "Status",
            "metadata": {},
            "status": "Success",
            "details": {**details(resource, name), "uid": old_metadata.get("uid")},
        }

    def _replace(
        self,
        resource: Resource,
        old: Object,
        incoming: Object,
        *,
        status_only: bool,
        manager: str,
    ) -> Object:
        """Store ``incoming`` in place of ``old`` under the update rules."""
        has_status = resource in self._status_subresource
        new = prepare_for_update(
            resource, old, incoming, status_only=status_only, has_status=has_status
        )
        record_update(
            resource,
            self._shape(resource),
            old,
            new,
            manager=manager,
            status_only=status_only,
            has_status=has_status,
            now=self._now(),
        )
        return self._store_replacement(resource, old, new)

    def _store_replacement(self, resource: Resource, old: Object, new: Object) -> Object:
        """Store ``new`` (prepared) in place of ``old``, unless nothing changed."""
        metadata = new["metadata"]
        if new == old:
            unchanged: Object = copy_object(old)
            return unchanged
        if metadata.get("deletionTimestamp") and not metadata.get("finalizers"):
            return self._remove(resource, new)
        metadata["resourceVersion"] = self._next_resource_version()
        return self._commit(resource, MODIFIED, new, old)

    def _remove(self, resource: Resource, last: Object) -> Object:
        gone: Object = {**last, "metadata": dict(last["metadata"])}
        gone["metadata"]["resourceVersion"] = self._next_resource_version()
        return self._commit(resource, DELETED, gone, None)

    def _commit(
        self, resource: Resource, event_type: str, new: Object, old: Object | None
    ) -> Object:
        """Store (or drop, for DELETED) ``new``, record it, and tell the watchers."""
        metadata = new["metadata"]
        key = (metadata.get("namespace", ""), metadata["name"])
        store = self._store(resource)
        if event_type == DELETED:
            store.pop(key, None)
        else:
            store[key] = new
        change = _Change(int(metadata["resourceVersion"]), event_type, new, old)
        self._history[resource].append(change)
        for watcher in list(self._watchers[resource]):
            watcher.offer(event_type, new, old)
        result: Object = copy_object(new)
        return result

    # -- write helpers -----------------------------------------------------------------------

    def _namespace(self, resource: Resource, requested: str | None, own: Any) -> str:
        if not resource.namespaced:
            return ""
        if requested and own and requested != own:
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent on "
                f"the request ({own!r} != {requested!r})"
            )
        namespace = requested or own
        if not namespace or not isinstance(namespace, str):
            raise BadRequest(f"a namespace is required for namespaced resource {resource.plural}")
        return namespace

    def _existing(self, resource: Resource, namespace: str, name: str) -> Object:
        try:
            return self._store(resource)[(namespace, name)]
        except KeyError:
            raise not_found(resource, name) from None

    def _status_only(self, resource: Resource, name: str, subresource: str | None) -> bool:
        if not subresource:
            return False
        if subresource == "status" and resource in self._status_subresource:
            return True
        raise NotFound(
            f"the server could not find the requested resource ({qualified(resource)} "
            f"{name}/{subresource})",
            details=details(resource, name),
        )

    def _generate_name(self, prefix: str, namespace: str, store: Mapping[_Key, Object]) -> str:
        while True:
            suffix = "".join(self._random.choices(_NAME_SUFFIX_ALPHABET, k=5))
            name = prefix[:58] + suffix
            if (namespace, name) not in store:
                return name

    # -- watches -------------------------------------------------------------------------------

    def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
    ) -> Watcher:
        """Open a watch; the caller must :meth:`Watcher.stop` it.

        The selectors, ``resource_version``, ``allow_watch_bookmarks`` and
        ``send_initial_events`` of ``options`` are honoured (``timeout_seconds`` is the
        client's to apply). Without a resourceVersion (or with ``"0"``) the watch starts with
        an ADDED event per existing object; with one it replays the changes after it (410
        Gone, reason ``Expired``, if that is before the compaction point).
        ``send_initial_events`` (which, as on the server, needs
        ``resource_version_match="NotOlderThan"`` and bookmarks) sends the current objects
        and then a BOOKMARK annotated ``k8s.io/initial-events-end``.
        """
        options = options or _NO_OPTIONS
        selection = ObjectFilter.build(resource, namespace, options)
        start = self._parse_resource_version(options.resource_version)
        send_initial_events = options.send_initial_events
        allow_bookmarks = options.allow_watch_bookmarks
        if send_initial_events:
            if options.resource_version_match != "NotOlderThan":
                raise Invalid(
                    "sendInitialEvents is forbidden for watch unless resourceVersionMatch is "
                    "set to NotOlderThan"
                )
            if not allow_bookmarks:
                raise Invalid("sendInitialEvents requires setting allowWatchBookmarks to true")
        elif start and start < self._compacted:
            raise Gone(f"too old resource version: {start} ({self._compacted})", reason="Expired")
        watcher = Watcher(resource, selection, bookmarks=allow_bookmarks, on_stop=self._unregister)
        store = self._store(resource)
        if send_initial_events or not start:
            for key in sorted(store, key=_etcd_order):
                watcher.offer(ADDED, store[key])
            if send_initial_events:
                watcher.bookmark(self.resource_version, _INITIAL_EVENTS_END)
        else:
            for change in self._history[resource]:
                if change.resource_version > start:
                    watcher.offer(change.type, change.object, change.old)
        self._watchers[resource].append(watcher)
        return watcher

    def _unregister(self, watcher: Watcher) -> None:
        watchers = self._watchers.get(watcher.resource, [])
        if watcher in watchers:
            watchers.remove(watcher)

    def watchers(self, resource: Resource | None = None) -> builtins.list[Watcher]:
        """The open watches (of ``resource``, if given)."""
        if resource is not None:
            return list(self._watchers.get(resource, ()))
        return [w for ws in self._watchers.values() for w in ws]

    def close_watches(self, resource: Resource | None = None) -> int:
        """End the open watches normally, as a server-side timeout does; returns how many."""
        watchers = [w for w in self.watchers(resource) if not w.ended]
        for watcher in watchers:
            watcher.close()
        return len(watchers)

    def fail_watches(self, error: BaseException, resource: Resource | None = None) -> int:
        """End the open watches with ``error``; returns how many."""
        watchers = [w for w in self.watchers(resource) if not w.ended]
        for watcher in watchers:
            watcher.fail(error)
        return len(watchers)

    def send_bookmarks(self, resource: Resource | None = None) -> int:
        """Send a BOOKMARK at the current resourceVersion to the open watches that allow
        them; returns how many got one."""
        watchers = [w for w in self.watchers(resource) if w.bookmarks and not w.ended]
        for watcher in watchers:
            watcher.bookmark(self.resource_version)
        return len(watchers)
