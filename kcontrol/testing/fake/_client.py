"""An in-memory :class:`~kcontrol.client.Client` for fast unit tests (client-go's fake
clientset).

Requests are recorded as actions (:class:`Action`), offered to the registered reactors, and
otherwise served by an :class:`ObjectTracker` that applies the API server's rules for
resourceVersions, generations, status subresources, preconditions, finalizers, selectors,
pagination and watches. A controller test typically seeds objects, runs one sync, and asserts
on the actions::

    client = FakeClient([deployment, replica_set])
    await controller.sync("default/web")
    assert [str(a) for a in client.actions_for("create")] == ["create pods default"]

Every call yields to the event loop once before it is served, like a real request would.

The status subresource and server-side apply are served as the real server serves them
(see :mod:`kcontrol.testing.fake._tracker` for the rules and what is not modelled):

- which resources have a status subresource: the built-ins that have one, unless
  ``status_subresources`` lists others; :meth:`FakeClient.add_status_subresource` adds one,
  and CRDs given as ``crds`` (or to :meth:`FakeClient.register_crds`) bring theirs. For
  those, ``update_status`` and ``patch(..., subresource="status")`` change only ``status``,
  and ``update``/``patch`` of the object leave its ``status`` as stored;
- ``patch(..., patch_type=PatchType.APPLY, field_manager=..., force=...)`` is server-side
  apply, with field ownership in ``metadata.managedFields``: a field another manager owns
  with another value is a Conflict unless ``force``; a field the manager applied before and
  omits now is removed unless someone else owns it. Lists merge by key for the common keyed
  lists (``containers``, ``env``, ``ports``, ``conditions``...; for a CRD from its schema's
  ``x-kubernetes-list-type``), other lists are replaced whole;
- creates, updates and other patches record what they change under ``field_manager``
  (constructor; ``"kcontrol"``, as the server names :class:`~kcontrol.client.ApiClient`'s
  writes) or the patch's own ``field_manager``::

    client = FakeClient(crds=["config/crd"])
    await client.patch(WEBSITES, "w", {"apiVersion": ..., "kind": "Website",
                                       "spec": {"replicas": 2}},
                       namespace="default", patch_type=PatchType.APPLY,
                       field_manager="website-controller")
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from kcontrol.client import (
    Client,
    ListOptions,
    Object,
    PatchType,
    Resource,
    WatchEvent,
    notify_write,
)
from kcontrol.client._decode import decode_json, encode_json
from kcontrol.clock import Clock, RealClock, TimerHandle
from kcontrol.envtest import CRDSource, load_crds, served_versions
from kcontrol.errors import BadRequest
from kcontrol.testing.fake._actions import VERBS, Action, Reactor, ReactorRegistration
from kcontrol.testing.fake._metadata import FakeMetadataClient
from kcontrol.testing.fake._patch import decode_patch
from kcontrol.testing.fake._ssa import DEFAULT_FIELD_MANAGER
from kcontrol.testing.fake._tracker import ObjectTracker
from kcontrol.testing.fake._watch import ScriptedWatch

__all__ = ["FakeClient"]

_NO_OPTIONS = ListOptions()


class FakeClient:
    """An in-memory :class:`~kcontrol.client.Client`.

    ``objects`` seed the tracker (each needs ``apiVersion`` and ``kind`` of a registered
    resource: the built-in ones, ``resources``, the versions of ``crds``, or later
    :meth:`register` calls), without recording actions, and are stored as given
    (``managedFields`` included). ``crds`` are CustomResourceDefinitions - files,
    directories or dicts, as :meth:`ControlPlane.install_crds
    <kcontrol.envtest.ControlPlane.install_crds>` takes them - whose served versions
    are registered with their status subresource and schema. ``status_subresources``, if
    given, replaces the built-ins that have a status subresource by exactly those resources
    (CRDs add theirs either way). ``field_manager`` is the manager of creates, updates and
    patches that name none. ``clock`` times watch timeouts and stamps
    ``creationTimestamp``/``deletionTimestamp`` and ``managedFields`` times. Pass
    ``tracker`` to share state between clients (``status_subresources`` is then the
    tracker's).

    Attributes: ``actions`` lists every request in order; ``tracker`` is the
    :class:`ObjectTracker` behind the client, for setting up or inspecting state without
    recording actions.
    """

    def __init__(
        self,
        objects: Iterable[Mapping[str, Any]] = (),
        *,
        resources: Iterable[Resource] = (),
        crds: CRDSource | Iterable[CRDSource] = (),
        status_subresources: Iterable[Resource] | None = None,
        field_manager: str = DEFAULT_FIELD_MANAGER,
        clock: Clock | None = None,
        tracker: ObjectTracker | None = None,
    ) -> None:
        self._clock: Clock = clock or RealClock()
        self.tracker = tracker or ObjectTracker(
            clock=self._clock, status_subresources=status_subresources
        )
        self.field_manager = field_manager
        self.actions: list[Action] = []
        self._reactors: list[ReactorRegistration] = []
        for resource in resources:
            self.tracker.register(resource)
        self.register_crds(crds)
        for obj in objects:
            self.tracker.add(obj)

    # -- test controls -------------------------------------------------------------------------

    def register(self, resource: Resource, *, status_subresource: bool = False) -> None:
        """Serve ``resource`` (a CRD, say), and map seed objects of its kind to it."""
        self.tracker.register(resource, status_subresource=status_subresource)

    def add_status_subresource(self, resource: Resource) -> None:
        """Serve ``resource`` (registering it if new) with a status subresource."""
        self.tracker.add_status_subresource(resource)

    def register_crds(self, sources: CRDSource | Iterable[CRDSource]) -> list[Resource]:
        """Serve the versions of the CustomResourceDefinitions in ``sources`` (files,
        directories or dicts), each with its status subresource and its schema (which tells
        server-side apply how lists merge); the resources now served."""
        resources = []
        for crd in load_crds(sources):
            for version in served_versions(crd):
                self.tracker.register(
                    version.resource,
                    status_subresource=version.status_subresource,
                    schema=version.schema,
                )
                resources.append(version.resource)
        return resources

    def prepend_reactor(self, verb: str, resource: str | Resource, reactor: Reactor) -> None:
        """Consult ``reactor`` first for ``verb`` requests on ``resource``.

        ``verb`` is one of get/list/watch/create/update/patch/delete or ``"*"``; ``resource``
        a :class:`Resource`, its plural, or ``"*"``. The reactor gets the :class:`Action` and
        returns the response, ``None`` to pass, or raises an ApiError to fail the request
        (e.g. ``raise Conflict()`` to test a retry). For ``watch`` it returns the events of a
        scripted stream. It may be a coroutine function.
        """
        self._reactors.insert(0, self._registration(verb, resource, reactor))

    def add_reactor(self, verb: str, resource: str | Resource, reactor: Reactor) -> None:
        """Like :meth:`prepend_reactor`, but consulted after the reactors already added
        (still before the tracker)."""
        self._reactors.append(self._registration(verb, resource, reactor))

    @staticmethod
    def _registration(verb: str, resource: str | Resource, reactor: Reactor) -> ReactorRegistration:
        if verb != "*" and verb not in VERBS:
            raise ValueError(f"unknown verb {verb!r}: expected one of {sorted(VERBS)} or '*'")
        return ReactorRegistration(verb, resource, reactor)

    def clear_actions(self) -> None:
        self.actions.clear()

    def actions_for(
        self,
        verb: str = "*",
        resource: str | Resource = "*",
        *,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> list[Action]:
        """The recorded actions matching all the given filters, in order."""
        return [
            a
            for a in self.actions
            if a.matches(verb, resource)
            and (namespace is None or a.namespace == namespace)
            and (name is None or a.name == name)
            and (subresource is None or a.subresource == subresource)
        ]

    def open_watches(self, resource: Resource | None = None) -> int:
        """How many watches (on ``resource``, if given) are open."""
        return len(self.tracker.watchers(resource))

    def close_watches(self, resource: Resource | None = None) -> int:
        """End the open watches as a server timeout does; returns how many were open."""
        return self.tracker.close_watches(resource)

    def fail_watches(self, error: BaseException, resource: Resource | None = None) -> int:
        """Make the open watches raise ``error`` (after events already queued), e.g.
        ``Gone()`` or ``ApiConnectionError()``; returns how many."""
        return self.tracker.fail_watches(error, resource)

    def send_bookmarks(self, resource: Resource | None = None) -> int:
        """Send a BOOKMARK at the current resourceVersion to the watches that allow them."""
        return self.tracker.send_bookmarks(resource)

    def compact(self, resource_version: int | str | None = None) -> None:
        """Compact the history: older watches and continue tokens then get 410 Gone."""
        self.tracker.compact(resource_version)

    # -- Reader ----------------------------------------------------------------------------

    def metadata_only(self) -> FakeMetadataClient:
        """A reader of ``PartialObjectMetadata`` over this client, as
        :meth:`ApiClient.metadata_only <kcontrol.client.ApiClient.metadata_only>` gives
        (:mod:`kcontrol.testing.fake._metadata`); its requests are this client's actions."""
        return FakeMetadataClient(self)

    async def get(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Object:
        action = Action(
            verb="get",
            resource=resource,
            namespace=_scoped(resource, namespace),
            name=name,
            subresource=subresource or "",
        )
        handled, result = await self._react(action)
        if handled:
            return _response(result)
        return self.tracker.get(resource, name, namespace=namespace, subresource=subresource)

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
        transform: Callable[[Object], Object] | None = None,
    ) -> Object:
        options = options or _NO_OPTIONS
        action = _collection_action("list", resource, namespace, options)
        handled, result = await self._react(action)
        if handled:
            page = _response(result)
        else:
            page = self.tracker.list(resource, namespace=namespace, options=options)
        if transform is not None and isinstance(page.get("items"), list):
            for item in page["items"]:
                item.setdefault("apiVersion", resource.api_version)
                item.setdefault("kind", resource.kind)
            page["items"] = [transform(item) for item in page["items"]]
        return page

    @asynccontextmanager
    async def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        options: ListOptions | None = None,
    ) -> AsyncIterator[AsyncIterator[WatchEvent]]:
        """Open a watch (see :meth:`ObjectTracker.watch`). It ends when
        ``options.timeout_seconds`` pass on the client's clock, when a test calls
        :meth:`close_watches`, or with the error given to :meth:`fail_watches`."""
        options = options or _NO_OPTIONS
        action = _collection_action("watch", resource, namespace, options)
        handled, result = await self._react(action)
        if handled:
            yield ScriptedWatch(result)
            return
        watcher = self.tracker.watch(resource, namespace=namespace, options=options)
        timer: TimerHandle | None = None
        if options.timeout_seconds:
            timer = self._clock.call_at(self._clock.now() + options.timeout_seconds, watcher.close)
        try:
            yield watcher
        finally:
            if timer is not None:
                timer.cancel()
            watcher.stop()

    # -- Writer ----------------------------------------------------------------------------

    async def create(
        self, resource: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Object:
        action = _write_action("create", resource, obj, namespace)
        handled, result = await self._react(action)
        if handled:
            return _written(resource, _response(result))
        return _written(
            resource,
            self.tracker.create(
                resource, obj, namespace=namespace, field_manager=self.field_manager
            ),
        )

    async def update(
        self, resource: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Object:
        action = _write_action("update", resource, obj, namespace)
        handled, result = await self._react(action)
        if handled:
            return _written(resource, _response(result))
        return _written(
            resource,
            self.tracker.update(
                resource, obj, namespace=namespace, field_manager=self.field_manager
            ),
        )

    async def update_status(
        self, resource: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Object:
        action = _write_action("update", resource, obj, namespace, subresource="status")
        handled, result = await self._react(action)
        if handled:
            return _written(resource, _response(result))
        return _written(
            resource,
            self.tracker.update(
                resource,
                obj,
                namespace=namespace,
                subresource="status",
                field_manager=self.field_manager,
            ),
        )

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> Object:
        """PATCH, server-side apply included (see the module docstring); like
        :meth:`ApiClient.patch <kcontrol.client.ApiClient.patch>`, an apply without
        ``field_manager`` is a ValueError."""
        if PatchType(patch_type) is PatchType.APPLY and not field_manager:
            raise ValueError("server-side apply requires field_manager")
        action = Action(
            verb="patch",
            resource=resource,
            namespace=_scoped(resource, namespace),
            name=name,
            subresource=subresource or "",
            patch=_snapshot(patch),
            patch_type=PatchType(patch_type),
            options=_given(field_manager=field_manager, force=force),
        )
        handled, result = await self._react(action)
        if handled:
            return _written(resource, _response(result))
        return _written(
            resource,
            self.tracker.patch(
                resource,
                name,
                patch,
                patch_type=patch_type,
                namespace=namespace,
                subresource=subresource,
                field_manager=field_manager or self.field_manager,
                force=force,
            ),
        )

    async def delete(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        preconditions: Mapping[str, str] | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> Object:
        action = Action(
            verb="delete",
            resource=resource,
            namespace=_scoped(resource, namespace),
            name=name,
            options=_given(
                preconditions=dict(preconditions) if preconditions is not None else None,
                propagation_policy=propagation_policy,
                grace_period_seconds=grace_period_seconds,
            ),
        )
        handled, result = await self._react(action)
        if handled:
            return _response(result)
        return self.tracker.delete(resource, name, namespace=namespace, preconditions=preconditions)

    # -- plumbing ----------------------------------------------------------------------------

    async def _react(self, action: Action) -> tuple[bool, Any]:
        """Record ``action`` and run the reactors; ``(True, response)`` if one answered."""
        self.actions.append(action)
        await asyncio.sleep(0)
        for registration in list(self._reactors):
            if not registration.handles(action):
                continue
            result = registration.reactor(action)
            if inspect.isawaitable(result):
                result = await result
            if result is not None:
                return True, result
        return False, None


def _written(resource: Resource, answer: Object) -> Object:
    """A write's answer, after the context's write observer saw it (as ApiClient does)."""
    notify_write(resource, answer)
    return answer


def _scoped(resource: Resource, namespace: str | None) -> str:
    return (namespace or "") if resource.namespaced else ""


def _given(**options: Any) -> dict[str, Any]:
    return {k: v for k, v in options.items() if v is not None}


def _collection_action(
    verb: str, resource: Resource, namespace: str | None, options: ListOptions
) -> Action:
    """The record of a list or watch: the options the verb uses, those left unset omitted."""
    if verb == "watch":
        verb_options = _given(
            resource_version_match=options.resource_version_match,
            timeout_seconds=options.timeout_seconds,
            allow_watch_bookmarks=options.allow_watch_bookmarks,
            send_initial_events=options.send_initial_events,
        )
    else:
        verb_options = _given(
            resource_version_match=options.resource_version_match,
            limit=options.limit,
            continue_=options.continue_,
            timeout_seconds=options.timeout_seconds,
        )
    return Action(
        verb=verb,
        resource=resource,
        namespace=_scoped(resource, namespace),
        label_selector=options.label_selector,
        field_selector=options.field_selector,
        resource_version=options.resource_version,
        options={**verb_options, **_given(shard_selector=options.shard_selector)},
    )


def _write_action(
    verb: str,
    resource: Resource,
    obj: Mapping[str, Any],
    namespace: str | None,
    *,
    subresource: str = "",
) -> Action:
    body = _snapshot(obj)
    metadata = body.get("metadata") if isinstance(body, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    return Action(
        verb=verb,
        resource=resource,
        namespace=_scoped(resource, namespace or metadata.get("namespace")),
        name=str(metadata.get("name") or ""),
        subresource=subresource,
        object=body,
    )


def _snapshot(body: Any) -> Any:
    """A private JSON copy of a request body for the record; the body itself if it is not
    JSON (the tracker then rejects the request)."""
    try:
        return decode_patch(body)
    except BadRequest:
        return body


def _response(result: Any) -> Object:
    if not isinstance(result, Mapping):
        raise TypeError(f"a reactor answered with {type(result).__name__}, not an object")
    response: Object = decode_json(encode_json(dict(result)))
    return response


if TYPE_CHECKING:

    def _implements_client(client: FakeClient) -> Client:
        return client
