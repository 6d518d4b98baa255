"""Delegated authentication and authorization of the secure port, on fakes and a fake clock:
the review cache (TTLs, kube-controller-manager's 10 s by default, shared reviews, failures
never kept, bounded size), bearer-token and client-certificate rules, TokenReview and
SubjectAccessReview requests and answers, no budget one caller can spend for another, and
tokens kept out of every message."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.client import Object, Resource
from kcontrol.clock import FakeClock
from kcontrol.errors import (
    ApiConnectionError,
    AuthenticationFailed,
    InternalError,
    ReviewFailed,
)
from kcontrol.serving import ServingOptions
from kcontrol.serving._authn import (
    TOKENREVIEWS,
    DelegatingAuthenticator,
    TokenReviewAuthenticator,
    UserInfo,
    bearer_token,
    user_from_certificate,
)
from kcontrol.serving._authz import (
    SUBJECTACCESSREVIEWS,
    AlwaysAllowPaths,
    SubjectAccessReviewAuthorizer,
)
from kcontrol.serving._cache import ReviewCache


class Reviews:
    """A Writer that answers TokenReviews and SubjectAccessReviews from tables and records
    what it was sent. ``gate``: when set, every review waits for it."""

    def __init__(self) -> None:
        self.tokens: dict[str, dict[str, Any]] = {}
        self.allowed: set[tuple[str, str, str]] = set()
        self.sent: list[tuple[Resource, dict[str, Any]]] = []
        self.fail: Exception | None = None
        self.gate: asyncio.Event | None = None

    async def create(
        self, resource: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Object:
        self.sent.append((resource, dict(obj)))
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        spec = obj["spec"]
        if resource == TOKENREVIEWS:
            user = self.tokens.get(spec["token"])
            if user is None:
                status = {"authenticated": False, "error": f"invalid token {spec['token']}"}
            else:
                status = {"authenticated": True, "user": user}
            return {**obj, "status": status}
        assert resource == SUBJECTACCESSREVIEWS
        attributes = spec["nonResourceAttributes"]
        allowed = (spec["user"], attributes["verb"], attributes["path"]) in self.allowed
        return {**obj, "status": {"allowed": allowed, "reason": "" if allowed else "no rule"}}

    def count(self, resource: Resource) -> int:
        return sum(1 for sent, _ in self.sent if sent == resource)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def reviews() -> Reviews:
    reviews = Reviews()
    reviews.tokens["good"] = {
        "username": "system:serviceaccount:monitoring:prometheus",
        "uid": "u-1",
        "groups": ["system:serviceaccounts", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/pod-name": ["prometheus-0"]},
    }
    return reviews


def authenticator(
    reviews: Reviews, clock: FakeClock, ttl: float = 60.0, **kwargs: Any
) -> TokenReviewAuthenticator:
    return TokenReviewAuthenticator(
        reviews, cache_ttl=ttl, clock=clock, registry=CollectorRegistry(), **kwargs
    )


def authorizer(reviews: Reviews, clock: FakeClock, **kwargs: Any) -> SubjectAccessReviewAuthorizer:
    values: dict[str, Any] = {"authorized_ttl": 60.0, "unauthorized_ttl": 10.0, **kwargs}
    return SubjectAccessReviewAuthorizer(
        reviews, clock=clock, registry=CollectorRegistry(), **values
    )


# -- the review cache ----------------------------------------------------------------------


async def test_cache_keeps_answers_for_their_ttl(clock: FakeClock) -> None:
    cache: ReviewCache[str, int] = ReviewCache(ttl=lambda n: 10.0 if n > 0 else 1.0, clock=clock)
    calls: list[str] = []

    def review(key: str, answer: int) -> Any:
        async def run() -> int:
            calls.append(key)
            return answer

        return run

    assert await cache.get("a", review("a", 5)) == 5
    assert await cache.get("a", review("a", 6)) == 5, "cached"
    assert await cache.get("b", review("b", -1)) == -1
    clock.step(1.0)
    assert await cache.get("b", review("b", -2)) == -2, "a short TTL expired"
    assert await cache.get("a", review("a", 7)) == 5
    clock.step(9.0)
    assert await cache.get("a", review("a", 8)) == 8
    assert calls == ["a", "b", "b", "a"]


async def test_cache_shares_one_review_between_concurrent_requests(clock: FakeClock) -> None:
    cache: ReviewCache[str, str] = ReviewCache(ttl=lambda _: 10.0, clock=clock)
    gate = asyncio.Event()
    calls = 0

    async def review() -> str:
        nonlocal calls
        calls += 1
        await gate.wait()
        return "answer"

    waiters = [asyncio.create_task(cache.get("k", review)) for _ in range(100)]
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.gather(*waiters) == ["answer"] * 100
    assert calls == 1


async def test_cache_never_keeps_failures(clock: FakeClock) -> None:
    cache: ReviewCache[str, str] = ReviewCache(ttl=lambda _: 10.0, clock=clock)
    gate = asyncio.Event()

    async def failing() -> str:
        await gate.wait()
        raise ReviewFailed("unreachable")

    first = asyncio.create_task(cache.get("k", failing))
    second = asyncio.create_task(cache.get("k", failing))
    await asyncio.sleep(0)
    gate.set()
    for task in (first, second):
        with pytest.raises(ReviewFailed, match="unreachable"):
            await task

    async def working() -> str:
        return "ok"

    assert await cache.get("k", working) == "ok", "the failure was not kept"


async def test_a_cancelled_waiter_leaves_the_review_alone(clock: FakeClock) -> None:
    cache: ReviewCache[str, str] = ReviewCache(ttl=lambda _: 10.0, clock=clock)
    gate = asyncio.Event()

    async def review() -> str:
        await gate.wait()
        return "answer"

    leader = asyncio.create_task(cache.get("k", review))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(cache.get("k", review))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    gate.set()
    assert await leader == "answer"

    # The other way round: the review's own request is cancelled; its waiters are told.
    gate.clear()
    leader = asyncio.create_task(cache.get("j", review))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(cache.get("j", review))
    await asyncio.sleep(0)
    leader.cancel()
    with pytest.raises(ReviewFailed, match="cancelled"):
        await waiter
    with pytest.raises(asyncio.CancelledError):
        await leader


async def test_cache_size_is_bounded(clock: FakeClock) -> None:
    cache: ReviewCache[int, int] = ReviewCache(ttl=lambda _: 10.0, max_size=3, clock=clock)
    for key in range(10):

        async def review(key: int = key) -> int:
            return key

        await cache.get(key, review)
    assert len(cache) == 3
    assert [cache.cached(k) for k in (6, 7, 8, 9)] == [None, 7, 8, 9], "oldest dropped first"


# -- who is calling ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "token"),
    [
        pytest.param(None, None, id="missing"),
        pytest.param("", None, id="empty"),
        pytest.param("Bearer abc", "abc", id="bearer"),
        pytest.param("bearer abc", "abc", id="lower-case-scheme"),
        pytest.param("BEARER abc", "abc", id="upper-case-scheme"),
        pytest.param("  Bearer abc  ", "abc", id="surrounding-space"),
        pytest.param("Bearer abc def", "abc", id="second-word"),
        pytest.param("Bearer ", None, id="no-token"),
        pytest.param("Bearer  abc", None, id="two-spaces"),
        pytest.param("Basic YWxpY2U6cHc=", None, id="basic"),
        pytest.param("abc", None, id="no-scheme"),
    ],
)
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_user_from_certificate() -> None:
    subject = (
        (("countryName", "DE"),),
        (("organizationName", "system:masters"),),
        (("organizationName", "team-a"),),
        (("commonName", "bob"),),
    )
    user = user_from_certificate({"subject": subject})
    assert user == UserInfo(username="bob", groups=("system:masters", "team-a"))
    with pytest.raises(AuthenticationFailed, match="no common name"):
        user_from_certificate({"subject": ((("organizationName", "x"),),)})


async def test_token_review_request_and_answer(reviews: Reviews, clock: FakeClock) -> None:
    user = await authenticator(reviews, clock).authenticate("good")
    assert user == UserInfo(
        username="system:serviceaccount:monitoring:prometheus",
        uid="u-1",
        groups=("system:serviceaccounts", "system:authenticated"),
        extra={"authentication.kubernetes.io/pod-name": ("prometheus-0",)},
    )
    [(resource, body)] = reviews.sent
    assert resource == TOKENREVIEWS and not resource.namespaced
    assert body == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "good"},
    }


async def test_token_answers_are_cached_both_ways(reviews: Reviews, clock: FakeClock) -> None:
    tokens = authenticator(reviews, clock, ttl=60.0)
    for _ in range(3):
        await tokens.authenticate("good")
        with pytest.raises(AuthenticationFailed):
            await tokens.authenticate("bad")
    assert reviews.count(TOKENREVIEWS) == 2, "one review per token"
    clock.step(60.0)
    await tokens.authenticate("good")
    assert reviews.count(TOKENREVIEWS) == 3, "asked again after the TTL"


async def test_a_rejected_token_never_appears_in_the_reason(
    reviews: Reviews, clock: FakeClock
) -> None:
    secret = "s3cret-token-value"
    with pytest.raises(AuthenticationFailed) as failure:
        await authenticator(reviews, clock).authenticate(secret)
    assert secret not in str(failure.value)
    assert "invalid token <token>" in str(failure.value), "the server's reason, redacted"
    reviews.fail = InternalError(f"cannot decode {secret}")
    with pytest.raises(ReviewFailed) as failed:
        await authenticator(reviews, clock).authenticate(secret)
    assert secret not in str(failed.value)
    assert failed.value.__suppress_context__, "no chained message carries it either"


async def test_malformed_tokens_are_refused_without_a_review(
    reviews: Reviews, clock: FakeClock
) -> None:
    tokens = authenticator(reviews, clock)
    for token in ("with space", "caf\u00e9", "tab\t", "nul\x00"):
        with pytest.raises(AuthenticationFailed, match="malformed"):
            await tokens.authenticate(token)
    assert reviews.sent == []


async def test_garbage_tokens_never_refuse_another_callers_token(
    reviews: Reviews, clock: FakeClock
) -> None:
    # No budget of the process's own (kube-controller-manager has none): a flood of unknown
    # tokens costs reviews, which the API server's priority and fairness limits, and never
    # turns the next caller away.
    tokens = authenticator(reviews, clock)
    for n in range(1000):
        with pytest.raises(AuthenticationFailed):
            await tokens.authenticate(f"garbage-{n}")
    assert (await tokens.authenticate("good")).uid == "u-1"
    assert reviews.count(TOKENREVIEWS) == 1001, "one review per token, none refused"


async def test_default_ttls_are_kube_controller_managers(
    reviews: Reviews, clock: FakeClock
) -> None:
    options = ServingOptions()
    tokens = authenticator(reviews, clock, ttl=options.authentication_token_webhook_cache_ttl)
    authz = authorizer(
        reviews,
        clock,
        authorized_ttl=options.authorization_webhook_cache_authorized_ttl,
        unauthorized_ttl=options.authorization_webhook_cache_unauthorized_ttl,
    )
    bob, alice = UserInfo("bob"), UserInfo("alice")
    reviews.allowed.add(("bob", "get", "/metrics"))

    async def ask() -> None:
        await tokens.authenticate("good")
        with pytest.raises(AuthenticationFailed):
            await tokens.authenticate("bad")
        await authz.authorize(bob, "get", "/metrics")
        await authz.authorize(alice, "get", "/metrics")

    await ask()
    assert len(reviews.sent) == 4
    clock.step(9.9)
    await ask()
    assert len(reviews.sent) == 4, "every answer still cached"
    clock.step(0.1)
    await ask()
    assert len(reviews.sent) == 8, "every answer asked again after 10 s"


async def test_review_failures_are_review_failed(reviews: Reviews, clock: FakeClock) -> None:
    reviews.fail = ApiConnectionError("connection refused")
    tokens = authenticator(reviews, clock)
    with pytest.raises(ReviewFailed, match="connection refused"):
        await tokens.authenticate("good")
    reviews.fail = None
    assert (await tokens.authenticate("good")).uid == "u-1", "failures are not cached"


async def test_a_review_that_hangs_times_out(reviews: Reviews, clock: FakeClock) -> None:
    reviews.gate = asyncio.Event()
    tokens = authenticator(reviews, clock, review_timeout=10.0)
    task = asyncio.create_task(tokens.authenticate("good"))
    await asyncio.sleep(0)
    clock.step(10.0)
    with pytest.raises(ReviewFailed):
        await task


async def test_client_certificate_comes_before_the_token(
    reviews: Reviews, clock: FakeClock
) -> None:
    delegating = DelegatingAuthenticator(authenticator(reviews, clock))
    peer = {"subject": ((("commonName", "bob"),),)}
    user = await delegating.authenticate(peer_certificate=peer, authorization="Bearer good")
    assert user.username == "bob"
    assert reviews.sent == []
    user = await delegating.authenticate(peer_certificate={}, authorization="Bearer good")
    assert user.uid == "u-1"
    with pytest.raises(AuthenticationFailed, match="no client certificate and no bearer token"):
        await delegating.authenticate(peer_certificate=None, authorization=None)


# -- may they ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("patterns", "path", "allowed"),
    [
        pytest.param(["/healthz"], "/healthz", True, id="exact"),
        pytest.param(["/healthz"], "/healthz/ping", False, id="exact-not-prefix"),
        pytest.param(["/healthz"], "/healthzz", False, id="exact-not-longer"),
        pytest.param(["/healthz/*"], "/healthz/ping", True, id="prefix"),
        pytest.param(["/healthz/*"], "/healthz", False, id="prefix-needs-slash"),
        pytest.param(["/healthz*"], "/healthz", True, id="prefix-star"),
        pytest.param(["healthz"], "/healthz", True, id="no-leading-slash"),
        pytest.param(["/"], "/", True, id="root"),
        pytest.param(["/"], "/metrics", False, id="root-only"),
        pytest.param(["/healthz", "/readyz", "/livez"], "/metrics", False, id="default"),
        pytest.param([], "/healthz", False, id="none"),
    ],
)
def test_always_allow_paths(patterns: list[str], path: str, allowed: bool) -> None:
    assert AlwaysAllowPaths(patterns).allows(path) is allowed


def test_always_allow_paths_take_a_trailing_star_only() -> None:
    with pytest.raises(ValueError, match="only a trailing"):
        AlwaysAllowPaths(["/a*/b"])


async def test_subject_access_review_request(reviews: Reviews, clock: FakeClock) -> None:
    user = UserInfo(
        username="system:serviceaccount:monitoring:prometheus",
        uid="u-1",
        groups=("system:serviceaccounts",),
        extra={"scopes": ("a", "b")},
    )
    reviews.allowed.add((user.username, "get", "/metrics"))
    decision = await authorizer(reviews, clock).authorize(user, "get", "/metrics")
    assert decision.allowed
    [(resource, body)] = reviews.sent
    assert resource == SUBJECTACCESSREVIEWS and not resource.namespaced
    assert body == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "system:serviceaccount:monitoring:prometheus",
            "uid": "u-1",
            "groups": ["system:serviceaccounts"],
            "extra": {"scopes": ["a", "b"]},
            "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
        },
    }


async def test_decisions_are_cached_for_their_own_ttls(reviews: Reviews, clock: FakeClock) -> None:
    alice, bob = UserInfo("alice"), UserInfo("bob")
    reviews.allowed.add(("bob", "get", "/metrics"))
    authz = authorizer(reviews, clock, authorized_ttl=60.0, unauthorized_ttl=10.0)
    for _ in range(3):
        assert (await authz.authorize(bob, "get", "/metrics")).allowed
        denied = await authz.authorize(alice, "get", "/metrics")
        assert not denied.allowed and denied.reason == "no rule"
    assert reviews.count(SUBJECTACCESSREVIEWS) == 2
    clock.step(10.0)
    await authz.authorize(bob, "get", "/metrics")
    await authz.authorize(alice, "get", "/metrics")
    assert reviews.count(SUBJECTACCESSREVIEWS) == 3, "the denial expired first"
    await authz.authorize(bob, "get", "/debug")
    await authz.authorize(bob, "head", "/metrics")
    assert reviews.count(SUBJECTACCESSREVIEWS) == 5, "per verb and path"


async def test_one_user_asking_for_many_paths_never_refuses_another(
    reviews: Reviews, clock: FakeClock
) -> None:
    authz = authorizer(reviews, clock)
    mallory, prometheus = UserInfo("mallory"), UserInfo("prometheus")
    reviews.allowed.add(("prometheus", "get", "/metrics"))
    for n in range(1000):
        assert not (await authz.authorize(mallory, "get", f"/path-{n}")).allowed
    assert (await authz.authorize(prometheus, "get", "/metrics")).allowed
    assert reviews.count(SUBJECTACCESSREVIEWS) == 1001


async def test_authorization_failures_are_review_failed(reviews: Reviews, clock: FakeClock) -> None:
    reviews.fail = InternalError("etcd is down")
    with pytest.raises(ReviewFailed, match="etcd is down"):
        await authorizer(reviews, clock).authorize(UserInfo("bob"), "get", "/metrics")
