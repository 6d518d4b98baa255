"""A reflector whose transform drops managedFields decodes without keeping the field sets raw
(kcontrol.client._fields.field_sets_dropped): the reads it makes, in its own task, decode
plainly; any other reflector, and anything outside it, keeps them raw."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from informers_fakes import ScriptedReader, page, pod, running

from kcontrol.client import PODS, FieldsV1, Object
from kcontrol.client._decode import decode_list
from kcontrol.informers import (
    SharedIndexInformer,
    chain_transforms,
    decoding_list_items_with,
    dropping_managed_fields,
    intern_strings,
    strip_managed_fields,
)
from kcontrol.informers._fieldsets import drops_managed_fields, list_item_decoder

MANAGED = [{"manager": "kubectl", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}]


def encoded_page() -> bytes:
    """A LIST body of one pod with a managedFields entry, as the API server sends it."""
    item = pod("a", 1)
    item["metadata"]["managedFields"] = MANAGED
    return orjson.dumps(page([item], 1))


def decoded() -> Object:
    """The LIST body decoded item by item, as the client does."""
    listed: Object = decode_list(encoded_page(), lambda item: item)
    return listed


def field_set_type(listed: Object) -> type:
    return type(listed["items"][0]["metadata"]["managedFields"][0]["fieldsV1"])


async def field_set_type_seen(transform: Any) -> type:
    """The type a LIST's ``fieldsV1`` decoded to, inside a reflector with ``transform``."""
    seen: list[type] = []

    def list_func(params: dict[str, Any]) -> Object:
        listed: Object = decoded()  # as the client decodes a LIST body
        seen.append(field_set_type(listed))
        return listed

    informer = SharedIndexInformer(ScriptedReader(list_func=list_func), PODS, transform=transform)
    async with running(informer.run()):
        assert await asyncio.wait_for(informer.wait_for_cache_sync(), 10)
    return seen[0]


@pytest.mark.parametrize(
    ("transform", "expected"),
    [
        (strip_managed_fields, dict),
        (chain_transforms(intern_strings, strip_managed_fields), dict),
        (None, FieldsV1),
        (intern_strings, FieldsV1),
    ],
)
async def test_a_reflector_decodes_plainly_only_when_its_transform_drops_managed_fields(
    transform: Any, expected: type
) -> None:
    assert await field_set_type_seen(transform) is expected
    assert field_set_type(decoded()) is FieldsV1, "outside the reflector, field sets stay raw"


def test_declarations() -> None:
    assert drops_managed_fields(strip_managed_fields)
    assert not drops_managed_fields(intern_strings) and not drops_managed_fields(None)
    assert drops_managed_fields(chain_transforms(intern_strings, strip_managed_fields))
    assert not drops_managed_fields(chain_transforms(intern_strings))

    def own(obj: Object) -> Object:
        return obj

    assert dropping_managed_fields(own) is own and drops_managed_fields(own)


def test_a_reflector_lists_with_its_transforms_item_decoder_and_nothing_else() -> None:
    # The declared decoder decodes each listed item in the reflector's LISTs (and only
    # there): a GET or a LIST outside it decodes whole.
    calls: list[bytes] = []

    def names_only(data: bytes) -> Object:
        calls.append(data)
        whole: Object = orjson.loads(data)
        return {"metadata": {"name": whole["metadata"]["name"]}}

    @decoding_list_items_with(names_only)
    def keep(obj: Object) -> Object:
        return obj

    assert list_item_decoder(keep) is names_only and list_item_decoder(None) is None
    seen: list[Object] = []

    def list_func(params: dict[str, Any]) -> Object:
        listed: Object = decode_list(encoded_page(), lambda item: item)
        seen.append(listed)
        return listed

    async def run() -> None:
        informer = SharedIndexInformer(ScriptedReader(list_func=list_func), PODS, transform=keep)
        async with running(informer.run()):
            assert await asyncio.wait_for(informer.wait_for_cache_sync(), 10)

    asyncio.run(run())
    assert [item["metadata"] for item in seen[0]["items"]] == [{"name": "a"}]
    assert len(calls) == 1
    assert decoded()["items"][0]["metadata"]["namespace"], "outside it, items decode whole"
    assert len(calls) == 1
