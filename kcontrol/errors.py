"""The one exception hierarchy of kcontrol.

API failures are translated once, at the client boundary, into :class:`ApiError` subclasses chosen
by the server's ``Status`` (its ``reason`` first, then the HTTP code), mirroring apimachinery's
``k8s.io/apimachinery/pkg/api/errors`` (``IsNotFound``, ``IsConflict``, ...). Callers catch the
class they care about; everything else propagates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

__all__ = [
    "NAMESPACE_TERMINATING_CAUSE",
    "AlreadyExists",
    "AlreadyOwned",
    "ApiConnectionError",
    "ApiError",
    "ApiServerNotHealthy",
    "AuthenticationFailed",
    "BadRequest",
    "CannotAdopt",
    "ClaimError",
    "ConfigError",
    "Conflict",
    "Forbidden",
    "Gone",
    "GroupResource",
    "InactivityTimeoutError",
    "InternalError",
    "Invalid",
    "InvalidLeaderElectionConfig",
    "KcontrolError",
    "LeadershipLost",
    "LockNotInitialized",
    "MethodNotAllowed",
    "NoKindMatch",
    "NoResourceMatch",
    "NotFound",
    "OptionsError",
    "OutsideCacheScope",
    "ReviewFailed",
    "SelectorError",
    "ServerTimeout",
    "ServiceUnavailable",
    "ServingError",
    "ShutDown",
    "StaleCache",
    "TooManyRequests",
    "Unauthorized",
    "WriteRefused",
    "api_error_from_status",
    "error_message",
    "has_status_cause",
    "is_namespace_terminating",
    "is_resource_expired",
]


class KcontrolError(Exception):
    """Base class of every exception kcontrol raises on purpose."""


# -- errors of kcontrol's own components ------------------------------------------------------
# Each is re-exported by the package that raises it (kcontrol.workqueue.ShutDown, ...).


class ShutDown(KcontrolError):
    """Raised by a work queue's ``get()`` once the queue is shut down and holds nothing more
    to hand out.

    It is the worker's signal to return; it never means an item was lost.
    """


class SelectorError(KcontrolError, ValueError):
    """A label selector, requirement, key or value is malformed."""


class ConfigError(KcontrolError):
    """No usable client configuration: missing or malformed kubeconfig, not in a cluster."""


class InvalidLeaderElectionConfig(KcontrolError, ValueError):
    """A leader election configuration breaks one of its constraints."""


class LeadershipLost(KcontrolError):
    """The lease could not be renewed within the renew deadline (or another candidate took it).

    Raised by ``LeaderElector.run`` after the guarded work has been cancelled and has
    finished. The process should exit (non-zero), as kube-controller-manager does, and start
    over as a standby.
    """


class GroupResource(Protocol):
    """What :class:`StaleCache` names: a resource's API group and plural (a
    :class:`~kcontrol.client.Resource` is one)."""

    @property
    def group(self) -> str: ...

    @property
    def plural(self) -> str: ...


class StaleCache(KcontrolError):
    """An informer has not yet applied a resourceVersion this controller wrote, so a sync
    would act on a cache behind its own write (:class:`~kcontrol.controller.ConsistencyStore`):
    sync again later. The runner requeues the key with backoff and logs it at debug level."""

    def __init__(self, resource: GroupResource, read: str, wrote: str) -> None:
        self.resource = resource
        self.read = read
        self.wrote = wrote
        super().__init__(
            f"read version: {read} is not as new as written version: {wrote} for group "
            f"resource {resource.plural}{'.' + resource.group if resource.group else ''}"
        )


class WriteRefused(KcontrolError):
    """A mutating request was not sent: the client's write gate was closed.

    A client made with ``ApiClient.with_write_gate`` raises it, before sending anything,
    for a create, update, patch or delete while its gate says no - for the manager's
    controllers, once the leader election lease can no longer be trusted. Nothing reached the
    server. ``method`` and ``path`` name the request that was held back. Retrying is
    pointless: the process is stepping down.
    """

    def __init__(self, message: str, *, method: str, path: str) -> None:
        super().__init__(message)
        self.method = method
        self.path = path


class LockNotInitialized(KcontrolError):
    """A resource lock's ``update`` was called before the lock object was read or created."""


class CannotAdopt(KcontrolError):
    """The pre-adoption check refused: the controller is gone, replaced, or being deleted.

    The underlying failure (for example the GET's :class:`ApiError`) is the ``__cause__``.
    """


class AlreadyOwned(KcontrolError):
    """``set_controller_reference`` refused: the object already has another controller.

    An object has at most one ``ownerReferences`` entry with ``controller: true``
    (controller-runtime's ``AlreadyOwnedError``). ``object`` is the object that was not
    changed; ``owner`` its existing controller reference.
    """

    def __init__(self, obj: Mapping[str, Any], owner: Mapping[str, Any]) -> None:
        self.object: Mapping[str, Any] = obj
        self.owner: Mapping[str, Any] = owner
        meta = obj.get("metadata") or {}
        where = "/".join(str(p) for p in (meta.get("namespace"), meta.get("name")) if p)
        super().__init__(
            f"{obj.get('kind') or 'object'} {where} is already owned by another "
            f"{owner.get('kind')} controller {owner.get('name')}"
        )


class ClaimError(KcontrolError):
    """Some adoptions or releases of a claim pass failed; the others were still carried out.

    ``errors`` holds each failure in the order the objects were processed (an
    :class:`ApiError` of the patch, or :class:`CannotAdopt`). The usual reaction is to
    requeue the controller and let the next sync try again. ``claimed`` holds the objects
    that were owned after the pass all the same (what ``claim`` would have returned).
    """

    def __init__(self, errors: Sequence[Exception], claimed: Sequence[dict[str, Any]] = ()) -> None:
        self.errors: tuple[Exception, ...] = tuple(errors)
        self.claimed: list[dict[str, Any]] = list(claimed)
        if len(self.errors) == 1:
            message = str(self.errors[0])
        else:
            message = "[" + ", ".join(str(e) for e in self.errors) + "]"
        super().__init__(message)


class NoKindMatch(KcontrolError, LookupError):
    """A REST mapper knows no resource serving ``kind`` at ``api_version``, even after
    asking the server's discovery again (controller-runtime's ``NoKindMatchError``).

    The group version may not be served at all, or not serve that kind: typically a CRD
    not installed (yet). ``api_version`` and ``kind`` name what was looked up.
    """

    def __init__(self, api_version: str, kind: str, detail: str = "") -> None:
        self.api_version = api_version
        self.kind = kind
        message = f"no resource for kind {kind!r} in apiVersion {api_version!r}"
        super().__init__(f"{message}: {detail}" if detail else message)


class NoResourceMatch(KcontrolError, LookupError):
    """A REST mapper knows no resource named ``plural`` at ``api_version``, even after asking
    the server's discovery again (controller-runtime's ``NoResourceMatchError``)."""

    def __init__(self, api_version: str, plural: str, detail: str = "") -> None:
        self.api_version = api_version
        self.plural = plural
        message = f"no resource {plural!r} in apiVersion {api_version!r}"
        super().__init__(f"{message}: {detail}" if detail else message)


class OutsideCacheScope(KcontrolError, LookupError):
    """A read from a cache that does not hold what was asked for: another namespace than the
    cache's, or an informer asked for a namespace its cache's scope excludes. Raised instead
    of answering "not found" (the object may well exist) or starting a watch the operator's
    RBAC may not allow; read such objects from the API (``client.get``) or widen the
    cache's scope."""


class OptionsError(KcontrolError, ValueError):
    """A command-line flag value is invalid; the message names the flag."""


class InactivityTimeoutError(KcontrolError, TimeoutError):
    """A watch delivered nothing, not even a bookmark, for the reflector's inactivity timeout.

    The connection is presumed half-open; the reflector abandons the watch and opens a new
    one from the last resourceVersion. Its watch error handler receives this error.
    """


# -- the manager's secure serving -----------------------------------------------------------------
# Re-exported by nothing: kcontrol-manager answers them (401, 429, 500) or exits with them.


class ServingError(KcontrolError):
    """The secure serving endpoint cannot be set up: certificate or key files that are
    missing, unreadable or do not match, an unusable client CA, an unusable
    ``--authentication-kubeconfig`` / ``--authorization-kubeconfig``, or a failed lookup of
    the cluster's authentication configuration (unless tolerated). The message names the
    file or flag; kcontrol-manager exits 1 with it."""


class AuthenticationFailed(KcontrolError):
    """A request to the secure port has no credentials, or credentials that were rejected (a
    TokenReview that did not authenticate the token, a client certificate without a common
    name). Answered 401. The message says why; it never contains the credentials."""


class ReviewFailed(KcontrolError):
    """A TokenReview or SubjectAccessReview got no answer: the API server was unreachable,
    too slow, or answered with an error status. Never cached: the next request asks again."""


# -- API errors ---------------------------------------------------------------------------------


class ApiConnectionError(KcontrolError):
    """The API server could not be reached, or the connection broke mid-request."""


class ApiServerNotHealthy(KcontrolError):
    """The API server did not answer ``GET /healthz`` with 200 within the start-up wait
    (kube-controller-manager's ``WaitForAPIServer``); the message carries the last failure
    (unreachable, TLS, 401, ...), which is also the ``__cause__``."""


class ApiError(KcontrolError):
    """The API server answered with a failure ``Status``.

    Attributes mirror ``metav1.Status``: ``code`` (HTTP status), ``reason`` (e.g. ``NotFound``),
    ``message`` and ``details`` (the raw ``details`` mapping, possibly empty). ``retry_after`` is
    the server's suggested delay in seconds (``Retry-After`` header or
    ``details.retryAfterSeconds``), when it gave one.
    """

    default_code: ClassVar[int] = 0
    default_reason: ClassVar[str] = ""

    def __init__(
        self,
        message: str = "",
        *,
        code: int | None = None,
        reason: str | None = None,
        details: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.code = self.default_code if code is None else code
        self.reason = self.default_reason if reason is None else reason
        self.message = message
        self.details: Mapping[str, Any] = details or {}
        self.retry_after = retry_after
        super().__init__(f"{self.code} {self.reason}: {message}" if message else self.reason)


class BadRequest(ApiError):
    default_code, default_reason = 400, "BadRequest"


class Unauthorized(ApiError):
    default_code, default_reason = 401, "Unauthorized"


class Forbidden(ApiError):
    default_code, default_reason = 403, "Forbidden"


class NotFound(ApiError):
    default_code, default_reason = 404, "NotFound"


class MethodNotAllowed(ApiError):
    default_code, default_reason = 405, "MethodNotAllowed"


class Conflict(ApiError):
    """409 Conflict: a stale resourceVersion or a failed precondition; re-read and retry."""

    default_code, default_reason = 409, "Conflict"


class AlreadyExists(ApiError):
    default_code, default_reason = 409, "AlreadyExists"


class Gone(ApiError):
    """410 Gone / reason ``Expired``: the resourceVersion is too old; relist from scratch."""

    default_code, default_reason = 410, "Gone"


class Invalid(ApiError):
    default_code, default_reason = 422, "Invalid"


class TooManyRequests(ApiError):
    """429: the server (or its storage, while it initialises) asks the client to back off."""

    default_code, default_reason = 429, "TooManyRequests"


class InternalError(ApiError):
    default_code, default_reason = 500, "InternalError"


class ServiceUnavailable(ApiError):
    default_code, default_reason = 503, "ServiceUnavailable"


class ServerTimeout(ApiError):
    default_code, default_reason = 504, "Timeout"


_BY_REASON: dict[str, type[ApiError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Gone": Gone,
    "Expired": Gone,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "InternalError": InternalError,
    "ServiceUnavailable": ServiceUnavailable,
    "ServerTimeout": ServerTimeout,
    "Timeout": ServerTimeout,
}

_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: ServerTimeout,
}


def api_error_from_status(
    code: int, status: Mapping[str, Any] | None, retry_after: float | None = None
) -> ApiError:
    """Build the right :class:`ApiError` for an HTTP failure.

    ``status`` is the decoded ``metav1.Status`` body when the server sent one (it may be
    ``None`` or any other JSON for non-Kubernetes proxies); ``retry_after`` is the parsed
    ``Retry-After`` header, if any.
    """
    body: Mapping[str, Any] = status if isinstance(status, Mapping) else {}
    reason = body.get("reason") or ""
    message = body.get("message") or ""
    details = body.get("details")
    details = details if isinstance(details, Mapping) else {}
    if retry_after is None and isinstance(details.get("retryAfterSeconds"), int):
        retry_after = float(details["retryAfterSeconds"])
    status_code = body.get("code")
    if isinstance(status_code, int) and status_code >= 400:
        code = status_code
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code) or ApiError
    return cls(
        message or f"HTTP {code}",
        code=code,
        reason=reason or cls.default_reason or None,
        details=details,
        retry_after=retry_after,
    )


NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"
"""The cause the apiserver gives for a write refused because the namespace is being deleted
(``v1.NamespaceTerminatingCause``): controllers drop the key instead of retrying."""


def error_message(error: BaseException) -> str:
    """The text Go's ``err.Error()`` gives for ``error``: an :class:`ApiError`'s ``Status``
    message, otherwise ``str(error)`` - what upstream's events and conditions quote."""
    if isinstance(error, ApiError) and error.message:
        return error.message
    return str(error)


def is_namespace_terminating(error: BaseException) -> bool:
    """Whether the API server refused a create because the namespace is being deleted (a
    cause of type :data:`NAMESPACE_TERMINATING_CAUSE`): controllers record no event for it."""
    return has_status_cause(error, NAMESPACE_TERMINATING_CAUSE)


def has_status_cause(error: BaseException, cause_type: str) -> bool:
    """Whether ``error`` is an :class:`ApiError` whose ``details.causes`` include one of type
    ``cause_type`` (client-go's ``errors.HasStatusCause``).

    On the wire a cause's type is the field ``reason`` (Go's ``StatusCause.Type`` is tagged
    ``json:"reason"``), not ``type``.
    """
    if not isinstance(error, ApiError):
        return False
    causes = error.details.get("causes") or ()
    return any(isinstance(c, Mapping) and c.get("reason") == cause_type for c in causes)


def is_resource_expired(error: BaseException) -> bool:
    """True for 410 Gone / Expired, and for the 'too large resource version' timeout.

    Both mean the reflector must drop its resourceVersion and relist from scratch.
    """
    if isinstance(error, Gone):
        return True
    return has_status_cause(error, "ResourceVersionTooLarge")
