"""What the fake client records and how tests intercept it (client-go's ``testing`` fixture).

Every request becomes an :class:`Action`; a test asserts on the list of actions a controller
sent. Before the object tracker serves a request, the reactors registered for its verb and
resource may answer it instead: return an object to answer, raise an
:class:`~kcontrol.errors.ApiError` to fail the request, or return ``None`` to pass it on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kcontrol.client import Object, PatchType, Resource, WatchEvent

__all__ = ["Action", "Reactor", "ReactorResult"]

VERBS = frozenset({"get", "list", "watch", "create", "update", "patch", "delete"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Action:
    """One request the fake client received.

    ``namespace``, ``name`` and ``subresource`` are ``""`` when absent (cluster-scoped
    resources, lists across all namespaces), as upstream. ``object`` is a copy of the body of a
    create or update, ``patch``/``patch_type`` the body of a patch. List and watch requests
    carry the selectors and ``resource_version`` of their
    :class:`~kcontrol.client.ListOptions`; the other options the verb uses (``limit``,
    ``continue_``, ``timeout_seconds``, ``shard_selector``... keyed by their ``ListOptions``
    field) are in
    ``options``, as are a write's (``preconditions``, ``propagation_policy``,
    ``field_manager``... keyed by their parameter name), when they were given.
    """

    verb: str
    resource: Resource
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    object: Object | None = None
    patch: Any = None
    patch_type: PatchType | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    resource_version: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def matches(self, verb: str, resource: str | Resource) -> bool:
        """Whether this is a ``verb`` on ``resource`` (a :class:`Resource`, its plural, or
        ``"*"``; ``verb`` may be ``"*"`` too)."""
        return (verb in ("*", self.verb)) and _resource_matches(resource, self.resource)

    def __str__(self) -> str:
        where = "/".join(p for p in (self.namespace, self.name, self.subresource) if p)
        return f"{self.verb} {self.resource.plural}" + (f" {where}" if where else "")


def _resource_matches(wanted: str | Resource, resource: Resource) -> bool:
    if isinstance(wanted, Resource):
        return wanted == resource
    return wanted in ("*", resource.plural)


ReactorResult = Object | Iterable[WatchEvent | BaseException] | None
"""What a reactor returns: the response object (for watch: the events of a scripted
stream, exceptions raised in place), or ``None`` to let the next reactor or the tracker
answer."""

Reactor = Callable[[Action], ReactorResult | Awaitable[ReactorResult]]
"""A function the fake client consults before its tracker; it may also be ``async``."""


@dataclass(frozen=True, slots=True)
class ReactorRegistration:
    verb: str
    resource: str | Resource
    reactor: Reactor

    def handles(self, action: Action) -> bool:
        return action.matches(self.verb, self.resource)
