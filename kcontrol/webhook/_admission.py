"""Admission webhooks: ``AdmissionReview`` in, a decision out - controller-runtime's
``pkg/webhook/admission`` (its ``CustomDefaulter`` and ``CustomValidator``), for plain-dict
objects.

An :class:`AdmissionWebhook` answers the API server's ``AdmissionReview`` (``admission.k8s.io``
``v1``, and ``v1beta1`` for old configurations: the answer has the version asked) with one of:

- a **defaulter** (mutating): ``default(obj, request)`` changes ``obj`` - a copy of the
  object being created or updated - in place; the answer is the JSON Patch from the object
  sent to the changed copy (:func:`~kcontrol.webhook.json_patch`), or no patch when nothing
  changed. Deletes (no object) are allowed untouched;
- a **validator**: ``validate(request)`` reads ``request.object`` / ``request.old_object`` and
  ``request.operation``; it returns warnings (shown by ``kubectl``) to allow, or raises
  :class:`Denied` with a message and field errors to refuse.

Either may be a plain or an ``async`` function. Contract of the answer:

- every review is answered, with its ``uid``; a handler that raises anything but
  :class:`Denied` refuses the request with code 500 and the exception's type and message
  (and the traceback in the log) - never a hung request and never an allowed one by
  accident; one that runs past ``timeout`` seconds is cancelled and refused with code 500
  (the API server's own timeout, ``timeoutSeconds``, is at most 30 s and 10 by default);
- :class:`Denied` becomes ``allowed: false`` with a ``Status`` (``code``, ``reason``,
  ``message``, and ``details.causes`` from the field errors) that the API server passes on to
  the client: ``kubectl`` prints ``admission webhook "..." denied the request: <message>``;
- ``request.dry_run`` is true for a dry run: a webhook with side effects must not act on it
  (declare ``sideEffects: None`` in the configuration when it has none);
- a body that is not an ``AdmissionReview`` is answered ``400`` (the API server then fails the
  request as its ``failurePolicy`` says).
"""

from __future__ import annotations

import asyncio
import base64
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from kcontrol.client import Object, deep_copy
from kcontrol.errors import KcontrolError
from kcontrol.logging import get_logger
from kcontrol.serving._http import Request, Response, error_response
from kcontrol.webhook._jsonpatch import json_patch

__all__ = [
    "ADMISSION_TIMEOUT",
    "AdmissionRequest",
    "AdmissionWebhook",
    "Defaulter",
    "Denied",
    "FieldError",
    "Validator",
]

_log = get_logger(__name__)

ADMISSION_TIMEOUT: Final = 10.0
"""Seconds a defaulter or validator may run before the request is refused: the API server's
default ``timeoutSeconds``, after which it would give up on the webhook anyway."""

_REVIEW_VERSIONS: Final = frozenset({"admission.k8s.io/v1", "admission.k8s.io/v1beta1"})


@dataclass(frozen=True, slots=True)
class FieldError:
    """One invalid field of a denied object: its path (``spec.replicas``), why, and the
    ``reason`` the API server's own validation uses (``FieldValueInvalid``,
    ``FieldValueRequired``, ``FieldValueNotSupported``, ...)."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"


class Denied(KcontrolError):
    """Raised by a validator (or a defaulter) to refuse the request: ``message`` for the
    user, ``field_errors`` for each invalid field, ``code`` and ``reason`` for the
    ``Status`` (403 ``Forbidden`` by default, as controller-runtime's denials; use 422
    ``Invalid`` for a malformed object)."""

    def __init__(
        self,
        message: str,
        *,
        field_errors: Sequence[FieldError] = (),
        code: int = 403,
        reason: str = "Forbidden",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field_errors = tuple(field_errors)
        self.code = code
        self.reason = reason

    def status(self) -> dict[str, Any]:
        """The ``Status`` of the answer."""
        status: dict[str, Any] = {
            "status": "Failure",
            "code": self.code,
            "reason": self.reason,
            "message": self.message,
        }
        if self.field_errors:
            status["details"] = {
                "causes": [
                    {"field": e.field, "message": e.message, "reason": e.reason}
                    for e in self.field_errors
                ]
            }
        return status


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionRequest:
    """What the API server asks about (the ``request`` of an ``AdmissionReview``):
    ``operation`` is ``CREATE``, ``UPDATE``, ``DELETE`` or ``CONNECT``; ``object`` is the new
    object (``None`` on delete), ``old_object`` the stored one (update and delete);
    ``user_info`` who asks (``username``, ``groups``, ...). Objects are the review's, shared
    with the handler: a validator must not change them (a defaulter gets its own copy)."""

    uid: str
    kind: Mapping[str, Any]
    resource: Mapping[str, Any]
    sub_resource: str
    name: str
    namespace: str
    operation: str
    user_info: Mapping[str, Any]
    object: Object | None
    old_object: Object | None
    dry_run: bool
    options: Mapping[str, Any] | None = field(default=None)

    @classmethod
    def from_review(cls, review: Mapping[str, Any]) -> AdmissionRequest:
        """The request of ``review``; :class:`ValueError` when it is not an admission
        review's."""
        request = review.get("request")
        if review.get("kind") != "AdmissionReview" or not isinstance(request, Mapping):
            raise ValueError("not an AdmissionReview with a request")
        uid = request.get("uid")
        if not isinstance(uid, str) or not uid:
            raise ValueError("the AdmissionReview's request has no uid")
        return cls(
            uid=uid,
            kind=request.get("kind") or {},
            resource=request.get("resource") or {},
            sub_resource=str(request.get("subResource") or ""),
            name=str(request.get("name") or ""),
            namespace=str(request.get("namespace") or ""),
            operation=str(request.get("operation") or ""),
            user_info=request.get("userInfo") or {},
            object=request.get("object"),
            old_object=request.get("oldObject"),
            dry_run=bool(request.get("dryRun")),
            options=request.get("options"),
        )


Defaulter = Callable[[Object, AdmissionRequest], Awaitable[None] | None]
"""Changes the object (a copy) in place to set defaults; see the module docstring."""

Validator = Callable[[AdmissionRequest], Awaitable[Sequence[str] | None] | Sequence[str] | None]
"""Returns warnings (or ``None``) to allow, raises :class:`Denied` to refuse."""


class AdmissionWebhook:
    """Answers ``AdmissionReview`` requests with ``default`` (a mutating webhook) or
    ``validate`` (a validating one); exactly one must be given. Serve it at a path of a
    :class:`~kcontrol.webhook.WebhookServer`; call :meth:`review` directly in tests. ``name``
    is for the logs."""

    def __init__(
        self,
        *,
        default: Defaulter | None = None,
        validate: Validator | None = None,
        timeout: float = ADMISSION_TIMEOUT,
        name: str = "",
    ) -> None:
        if (default is None) == (validate is None):
            raise ValueError("an admission webhook has a defaulter or a validator, not both")
        self._default = default
        self._validate = validate
        self._timeout = timeout
        self.name = name or getattr(default or validate, "__qualname__", "webhook")

    @property
    def mutating(self) -> bool:
        return self._default is not None

    async def __call__(self, request: Request) -> Response:
        """The HTTP handler: the review in ``request.body``, the answer as JSON."""
        try:
            review = orjson.loads(request.body)
            if not isinstance(review, dict):
                raise ValueError("not a JSON object")
            AdmissionRequest.from_review(review)
        except ValueError as error:  # orjson.JSONDecodeError is one
            return error_response(400, f"not an AdmissionReview: {error}")
        answer = await self.review(review)
        return Response(200, orjson.dumps(answer), {"Content-Type": "application/json"})

    async def review(self, review: Mapping[str, Any]) -> dict[str, Any]:
        """The ``AdmissionReview`` answering ``review`` (module docstring). Raises
        :class:`ValueError` for a review without a request."""
        request = AdmissionRequest.from_review(review)
        response: dict[str, Any] = {"uid": request.uid, "allowed": True}
        try:
            async with asyncio.timeout(self._timeout):
                if self._default is not None:
                    patch = await self._run_defaulter(self._default, request)
                    if patch:
                        response["patchType"] = "JSONPatch"
                        response["patch"] = base64.b64encode(orjson.dumps(patch)).decode()
                else:
                    assert self._validate is not None
                    warnings = await _maybe_await(self._validate(request))
                    if warnings:
                        response["warnings"] = [str(w) for w in warnings]
        except Denied as denied:
            response = {"uid": request.uid, "allowed": False, "status": denied.status()}
        except TimeoutError:
            _log.error("an admission webhook timed out", webhook=self.name, timeout=self._timeout)
            response = _internal_error(request.uid, f"{self.name} timed out")
        except Exception as error:  # a bug in the handler: refuse, say so, log the traceback
            _log.exception("an admission webhook failed", webhook=self.name)
            response = _internal_error(request.uid, f"{type(error).__name__}: {error}")
        api_version = review.get("apiVersion")
        if api_version not in _REVIEW_VERSIONS:
            api_version = "admission.k8s.io/v1"
        return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}

    async def _run_defaulter(
        self, default: Defaulter, request: AdmissionRequest
    ) -> list[dict[str, Any]]:
        if request.object is None:
            return []
        copy: Object = deep_copy(request.object)
        await _maybe_await(default(copy, request))
        return json_patch(request.object, copy)


def _internal_error(uid: str, message: str) -> dict[str, Any]:
    return {
        "uid": uid,
        "allowed": False,
        "status": {
            "status": "Failure",
            "code": 500,
            "reason": "InternalError",
            "message": f"internal error in the webhook: {message}",
        },
    }


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value
