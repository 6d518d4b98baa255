"""What a transform declares about the objects it keeps, so that a reflector decodes no more
than it needs: that it drops ``metadata.managedFields`` (objects are then decoded whole
instead of keeping their field sets raw, :mod:`kcontrol.client._fields`), or a decoder that
reads only the fields it keeps from each listed item (:func:`decoding_list_items_with`)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "decoding_list_items_with",
    "dropping_managed_fields",
    "drops_managed_fields",
    "list_item_decoder",
]

_Transform = Callable[[Any], Any]
_DROPPING: weakref.WeakSet[_Transform] = weakref.WeakSet()
_ItemDecoder = Callable[[bytes], Any]
_DECODERS: weakref.WeakKeyDictionary[_Transform, _ItemDecoder] = weakref.WeakKeyDictionary()
T = TypeVar("T", bound=_Transform)


def dropping_managed_fields(transform: T) -> T:
    """Declare that ``transform`` removes ``metadata.managedFields`` from every object it
    returns (a decorator; returns ``transform``). A reflector with such a transform decodes
    objects without keeping their field sets raw - 2-4 us per object saved. A wrong
    declaration costs memory, never correctness: the field sets are then cached as dicts."""
    _DROPPING.add(transform)
    return transform


def drops_managed_fields(transform: _Transform | None) -> bool:
    """Whether ``transform`` was declared with :func:`dropping_managed_fields`."""
    return transform is not None and transform in _DROPPING


def decoding_list_items_with(decoder: _ItemDecoder) -> Callable[[T], T]:
    """Declare that the items of the LISTs a reflector makes for ``transform`` may be decoded
    by ``decoder`` (a decorator factory; the decorator returns ``transform``).

    ``decoder`` takes the bytes of one item's JSON object and returns what ``transform``
    needs of it, in the shape the API sent it (``{"apiVersion", "kind", "metadata": ...}``,
    only the fields ``transform`` reads): the rest is never built, which saves most of a
    listed item's decode when a transform keeps a few fields. It must raise
    :class:`ValueError` for bytes that are not one whole JSON value, and should fall back to
    a whole decode for an item of a shape it does not expect, so that ``transform`` meets
    such an item as it would otherwise. Watch events are decoded whole. A wrong declaration
    (a decoder that leaves out a field the transform reads) changes what is cached: declare
    only a decoder written for the transform.
    """

    def declare(transform: T) -> T:
        _DECODERS[transform] = decoder
        return transform

    return declare


def list_item_decoder(transform: _Transform | None) -> _ItemDecoder | None:
    """The decoder ``transform`` was declared with (:func:`decoding_list_items_with`)."""
    return None if transform is None else _DECODERS.get(transform)
