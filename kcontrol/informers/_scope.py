"""What a shared informer factory caches of a resource: controller-runtime's
``cache.Options.ByObject`` (and ``DefaultNamespaces``, for one namespace).

A :class:`CacheScope` narrows the informer a factory makes for a resource when the caller
does not say otherwise: the namespace it lists and watches, and label and field selectors the
API server applies. An operator whose RBAC is a Role in one namespace caches that namespace
only; one that owns thousands of ConfigMaps but cares about a labelled few caches those.

How a scope combines with what a caller asks of
:meth:`~kcontrol.informers.SharedInformerFactory.for_resource`:

- namespaces: the caller's one namespace, else the scope's, else the factory's; a
  namespaced resource's informer is never wider than the scope's or the factory's
  namespaces - asking for another namespace raises :class:`~kcontrol.errors.OutsideCacheScope`
  (a watch there would be refused by a Role, or would cache what the operator chose not
  to). Several namespaces are listed and watched each on its own, into one cache
  (:class:`~kcontrol.informers.SharedIndexInformer`'s ``namespaces``);
- selectors: the scope's and the caller's both apply (label and field selectors are joined
  with ``,``, which the API server reads as "and").

Reads of a narrowed cache (:class:`~kcontrol.informers.Lister`,
:class:`~kcontrol.informers.CacheReader`) in another namespace raise
:class:`~kcontrol.errors.OutsideCacheScope` rather than answering "not found"; objects the
selectors leave out are not in the cache, and reads of them do answer "not found" (the cache
cannot tell them from objects that do not exist), as controller-runtime's.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CacheScope", "join_selectors"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheScope:
    """The part of a resource a cache holds: objects in ``namespaces`` (``()``: every
    namespace, or the factory's) matching ``label_selector`` and ``field_selector``
    (``None``: all)."""

    namespaces: tuple[str, ...] = ()
    label_selector: str | None = None
    field_selector: str | None = None


def join_selectors(*selectors: str | None) -> str | None:
    """The selectors that are given, joined with ``,`` (all must match); ``None`` if none."""
    parts = [s for s in selectors if s]
    return ",".join(parts) if parts else None
