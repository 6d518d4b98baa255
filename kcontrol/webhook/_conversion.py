"""Conversion webhooks for custom resources served in several versions: controller-runtime's
``pkg/webhook/conversion`` and its hub-and-spoke model, for plain-dict objects.

One version is the **hub** (usually the storage version); every other version, a **spoke**,
has a pair of functions: ``to_hub(obj)`` and ``from_hub(obj)``, each given a copy of the object
in one version and returning it in the other. Converting between two spokes goes through the
hub, so n versions need 2(n-1) functions, not n(n-1). The webhook sets ``apiVersion`` of each
result itself; ``metadata`` is the API server's, and must come back unchanged but for labels
and annotations (it refuses other changes).

:class:`ConversionWebhook` answers the API server's ``ConversionReview``
(``apiextensions.k8s.io/v1``): every object of the request converted to
``desiredAPIVersion``, in order, or - if any one cannot be - a ``Failure`` result naming it
and the reason, which the API server returns to the client (``conversion webhook for
example.com/v1beta1, Kind=Website failed: ...``). A converter that raises is such a failure,
logged with its traceback.

:func:`round_trip` is the test every spoke should pass: spoke -> hub -> spoke gives the
object back (controller-runtime's ``conversion/testing``); fields a version cannot hold must
be kept somewhere (an annotation) for it to pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from kcontrol.client import Object, deep_copy
from kcontrol.logging import get_logger
from kcontrol.serving._http import Request, Response, error_response

__all__ = ["ConversionWebhook", "Converter", "Spoke", "round_trip"]

_log = get_logger(__name__)

Converter = Callable[[Object], Object]
"""Takes an object (a copy it may change) and returns it in the other version."""


@dataclass(frozen=True, slots=True)
class Spoke:
    """A version other than the hub: how to convert it to the hub and back."""

    to_hub: Converter
    from_hub: Converter


class _ConversionFailed(Exception):
    pass


class ConversionWebhook:
    """Converts between ``hub`` (an ``apiVersion``, ``group/version``) and the ``spokes``
    (``apiVersion`` -> :class:`Spoke`); see the module docstring. Serve it at a path of a
    :class:`~kcontrol.webhook.WebhookServer`; call :meth:`convert` or :meth:`review` in
    tests."""

    def __init__(self, hub: str, spokes: Mapping[str, Spoke]) -> None:
        if hub in spokes:
            raise ValueError(f"the hub {hub} is not one of its spokes")
        self.hub = hub
        self.spokes = dict(spokes)

    @property
    def versions(self) -> list[str]:
        """Every ``apiVersion`` it converts between, the hub first."""
        return [self.hub, *self.spokes]

    def convert(self, obj: Object, desired: str) -> Object:
        """``obj`` (left unchanged) in ``desired``; :class:`ValueError` for a version it does
        not know."""
        source = str(obj.get("apiVersion", ""))
        for version in (source, desired):
            if version != self.hub and version not in self.spokes:
                raise ValueError(f"cannot convert {version!r}: not {', '.join(self.versions)}")
        if source == desired:
            return deep_copy(obj)
        current: Object = deep_copy(obj)
        if source != self.hub:
            current = self.spokes[source].to_hub(current)
            current["apiVersion"] = self.hub
        if desired != self.hub:
            current = self.spokes[desired].from_hub(current)
        current["apiVersion"] = desired
        return current

    async def __call__(self, request: Request) -> Response:
        """The HTTP handler: the review in ``request.body``, the answer as JSON."""
        try:
            review = orjson.loads(request.body)
            if not isinstance(review, dict) or not isinstance(review.get("request"), dict):
                raise ValueError("not a ConversionReview with a request")
        except ValueError as error:
            return error_response(400, f"not a ConversionReview: {error}")
        answer = self.review(review)
        return Response(200, orjson.dumps(answer), {"Content-Type": "application/json"})

    def review(self, review: Mapping[str, Any]) -> dict[str, Any]:
        """The ``ConversionReview`` answering ``review`` (module docstring)."""
        request = review.get("request") or {}
        uid = request.get("uid", "")
        desired = str(request.get("desiredAPIVersion", ""))
        converted = []
        try:
            for obj in request.get("objects") or ():
                converted.append(self._one(obj, desired))
        except _ConversionFailed as failure:
            response: dict[str, Any] = {
                "uid": uid,
                "result": {"status": "Failure", "message": str(failure)},
            }
        else:
            response = {
                "uid": uid,
                "convertedObjects": converted,
                "result": {"status": "Success"},
            }
        return {
            "apiVersion": review.get("apiVersion") or "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "response": response,
        }

    def _one(self, obj: Object, desired: str) -> Object:
        meta = obj.get("metadata") or {}
        name = f"{meta.get('namespace', '')}/{meta.get('name', '')}".lstrip("/")
        try:
            return self.convert(obj, desired)
        except ValueError as error:
            raise _ConversionFailed(f"{name}: {error}") from None
        except Exception as error:  # a converter's bug: a clear failure, and the traceback
            _log.exception("a conversion failed", object=name, to=desired)
            raise _ConversionFailed(
                f"{name}: converting {obj.get('apiVersion')} to {desired} failed: "
                f"{type(error).__name__}: {error}"
            ) from None


def round_trip(webhook: ConversionWebhook, obj: Object) -> Object:
    """``obj`` (in a spoke or the hub) converted to the hub, then to every spoke and back to
    the hub, and finally to its own version: equal to ``obj`` when no conversion loses
    anything - assert so in a test."""
    source = str(obj.get("apiVersion", ""))
    hub = webhook.convert(obj, webhook.hub)
    for spoke in webhook.spokes:
        hub = webhook.convert(webhook.convert(hub, spoke), webhook.hub)
    return webhook.convert(hub, source)
