"""A StatefulSet's writes to its pods and claims, with the events upstream's
``StatefulPodControl`` (``stateful_pod_control.go``) records on the set.

- :meth:`StatefulPodControl.create_stateful_pod`: the pod's claims first (each missing one
  created), then the pod, then the claims' owner references for the retention policy;
- :meth:`~StatefulPodControl.update_stateful_pod`: identity (name labels), storage (claim
  volumes, missing claims) and the claims' owners made right, the pod written only if it
  changed, retried on conflict from the cached copy;
- :meth:`~StatefulPodControl.delete_stateful_pod`: the pod only; its claims stay (the
  garbage collector removes those the retention policy made the pod or set own);
- :meth:`~StatefulPodControl.claims_match_retention_policy`,
  :meth:`~StatefulPodControl.update_pod_claim_for_retention_policy`,
  :meth:`~StatefulPodControl.pod_claim_is_stale`: the retention policy (StatefulSetAutoDeletePVC,
  GA), read from the claim cache.

Events, on the set: ``SuccessfulCreate`` / ``FailedCreate`` "create Pod web-0 in StatefulSet
web successful" (or "... failed error: <error>"), likewise ``SuccessfulUpdate`` /
``FailedUpdate`` and ``SuccessfulDelete`` / ``FailedDelete``; for claims ``SuccessfulCreate``
"create Claim data-web-0 Pod web-0 in StatefulSet web success" / ``FailedCreate``; and
``ConflictingController`` when another controller owns a claim. A pod that already exists is
no event (it is our own earlier create); neither is a claim that does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcontrol.client import PERSISTENTVOLUMECLAIMS, PODS, Object, Writer, deep_copy
from kcontrol.clock import Clock
from kcontrol.errors import AlreadyExists, NotFound
from kcontrol.events import EventRecorder
from kcontrol.informers import Lister
from kcontrol.logging import get_logger
from kcontrol.retry import DEFAULT_BACKOFF, retry_on_conflict

from ._fields import meta, name, namespace, spec
from ._identity import get_ordinal, identity_matches, update_identity
from ._pods import claim_event, conflicting_controller_event, pod_event
from ._storage import (
    claim_is_stale,
    get_persistent_volume_claim_name,
    get_persistent_volume_claims,
    has_unexpected_controller,
    is_claim_owner_up_to_date,
    storage_matches,
    update_claim_owner_ref_for_set_and_pod,
    update_storage,
)

__all__ = ["AggregateError", "StatefulPodControl", "aggregate"]

_log = get_logger(__name__)


class AggregateError(Exception):
    """Several failures of one step (upstream's ``utilerrors.Aggregate``): the message is the
    one error's, or ``[first, second, ...]``."""

    def __init__(self, errors: list[Exception]) -> None:
        self.errors = errors
        text = str(errors[0]) if len(errors) == 1 else f"[{', '.join(map(str, errors))}]"
        super().__init__(text)


def aggregate(errors: list[Exception]) -> Exception | None:
    """``None`` for no error, the error itself for one, an :class:`AggregateError` for more."""
    if not errors:
        return None
    return errors[0] if len(errors) == 1 else AggregateError(errors)


class StatefulPodControl:
    """Creates, updates and deletes a set's pods and claims (module docstring).

    ``client`` writes; ``pod_lister`` and ``claim_lister`` are the pod and
    PersistentVolumeClaim caches (read-only: objects are copied before a change);
    ``recorder`` records the events on the set; ``clock`` paces the conflict retries.
    """

    __slots__ = ("_claims", "_client", "_clock", "_pods", "_recorder")

    def __init__(
        self,
        client: Writer,
        pod_lister: Lister,
        claim_lister: Lister,
        recorder: EventRecorder,
        *,
        clock: Clock | None = None,
    ) -> None:
        self._client = client
        self._pods = pod_lister
        self._claims = claim_lister
        self._recorder = recorder
        self._clock = clock

    # -- events ----------------------------------------------------------------------------

    def _pod_event(
        self,
        verb: str,
        set_: Mapping[str, Any],
        pod: Mapping[str, Any],
        error: BaseException | None,
    ) -> None:
        self._recorder.event(set_, *pod_event(verb, set_, pod, error))

    def _claim_event(
        self,
        verb: str,
        set_: Mapping[str, Any],
        pod: Mapping[str, Any],
        claim: Mapping[str, Any],
        error: BaseException | None,
    ) -> None:
        self._recorder.event(set_, *claim_event(verb, set_, pod, claim, error))

    # -- pods ------------------------------------------------------------------------------

    async def create_stateful_pod(self, set_: Mapping[str, Any], pod: Mapping[str, Any]) -> Object:
        """Create ``pod``'s claims, then ``pod``, then give the claims the owners the
        retention policy wants; returns the pod as created.

        Raises what failed: a claim (``FailedCreate`` for the pod too), the pod (nothing
        recorded when it already exists: :class:`~kcontrol.errors.AlreadyExists`), or the
        claims' update (``FailedUpdate``).
        """
        try:
            await self._create_persistent_volume_claims(set_, pod)
        except Exception as error:
            self._pod_event("create", set_, pod, error)
            raise
        try:
            created = await self._client.create(PODS, dict(pod), namespace=namespace(set_))
        except AlreadyExists:
            raise
        except Exception as error:
            self._pod_event("create", set_, pod, error)
            raise
        try:
            # As much of the policy as can be set now: the pod is in the range.
            await self.update_pod_claim_for_retention_policy(set_, created)
        except Exception as error:
            self._pod_event("update", set_, pod, error)
            raise
        self._pod_event("create", set_, pod, None)
        return created

    async def update_stateful_pod(self, set_: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        """Give ``pod`` (not modified: a copy is changed) its identity and storage in
        ``set_``, its missing claims, and its claims the retention policy's owners; write the
        pod only if its identity or storage changed or its claims had to be updated.

        A conflict is retried (client-go's ``DefaultBackoff``) on the cached copy of the
        pod; the outcome of an attempted write is recorded (``SuccessfulUpdate`` /
        ``FailedUpdate``), as is a failure before it.
        """
        current: Object = deep_copy(dict(pod))
        attempted = False

        async def attempt() -> None:
            nonlocal current, attempted
            consistent = True
            if not identity_matches(set_, current):
                update_identity(set_, current)
                consistent = False
            if not storage_matches(set_, current):
                update_storage(set_, current)
                consistent = False
                try:
                    await self._create_persistent_volume_claims(set_, current)
                except Exception as error:
                    self._pod_event("update", set_, current, error)
                    raise
            try:
                if not await self.claims_match_retention_policy(set_, current):
                    await self.update_pod_claim_for_retention_policy(set_, current)
                    consistent = False
            except Exception as error:
                self._pod_event("update", set_, current, error)
                raise
            if consistent:
                return
            attempted = True
            try:
                await self._client.update(PODS, current, namespace=namespace(set_))
            except Exception:
                try:
                    current = deep_copy(self._pods.get(namespace(set_), name(current)))
                except NotFound as missing:
                    _log.info("error getting updated pod", pod=name(current), error=str(missing))
                raise

        error: Exception | None = None
        try:
            await retry_on_conflict(DEFAULT_BACKOFF, attempt, clock=self._clock)
        except Exception as failure:
            error = failure
        if attempted:
            self._pod_event("update", set_, current, error)
        if error is not None:
            raise error

    async def delete_stateful_pod(self, set_: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        """Delete ``pod`` (its claims stay), recording the outcome; raises what failed
        (:class:`~kcontrol.errors.NotFound` included, recorded as ``FailedDelete`` as
        upstream does)."""
        try:
            await self._client.delete(PODS, name(pod), namespace=namespace(set_))
        except Exception as error:
            self._pod_event("delete", set_, pod, error)
            raise
        self._pod_event("delete", set_, pod, None)

    # -- the retention policy ----------------------------------------------------------------

    def _claim_names(self, set_: Mapping[str, Any], pod: Mapping[str, Any]) -> list[str]:
        ordinal = get_ordinal(pod)
        return [
            get_persistent_volume_claim_name(set_, template, ordinal)
            for template in spec(set_).get("volumeClaimTemplates") or ()
        ]

    async def claims_match_retention_policy(
        self, set_: Mapping[str, Any], pod: Mapping[str, Any]
    ) -> bool:
        """Whether every existing claim of ``pod`` has the owners the policy wants (a
        missing claim is left to a later sync). Raises when the claim cache cannot answer."""
        for claim_name in self._claim_names(set_, pod):
            try:
                claim = self._claims.get(namespace(set_), claim_name)
            except NotFound:
                _log.debug("expected claim missing, continuing", claim=claim_name)
                continue
            except Exception as error:
                raise RuntimeError(
                    f"Could not retrieve claim {claim_name} for {name(pod)} when checking PVC"
                    " deletion policy"
                ) from error
            if not is_claim_owner_up_to_date(claim, set_, pod):
                return False
        return True

    async def update_pod_claim_for_retention_policy(
        self, set_: Mapping[str, Any], pod: Mapping[str, Any]
    ) -> None:
        """Update each existing claim of ``pod`` whose owners differ from what the policy
        wants; a claim another controller owns gets a ``ConflictingController`` warning (and
        only our references removed)."""
        for claim_name in self._claim_names(set_, pod):
            try:
                cached = self._claims.get(namespace(set_), claim_name)
            except NotFound:
                _log.debug("expected claim missing, continuing", claim=claim_name)
                continue
            except Exception as error:
                raise RuntimeError(
                    f"Could not retrieve claim {claim_name} not found for {name(pod)} when"
                    f" checking PVC deletion policy: {error}"
                ) from error
            if has_unexpected_controller(cached, set_, pod):
                self._recorder.event(set_, *conflicting_controller_event(claim_name))
            if is_claim_owner_up_to_date(cached, set_, pod):
                continue
            claim: Object = deep_copy(dict(cached))
            update_claim_owner_ref_for_set_and_pod(claim, set_, pod)
            try:
                await self._client.update(PERSISTENTVOLUMECLAIMS, claim, namespace=namespace(set_))
            except Exception as error:
                raise RuntimeError(
                    f"could not update claim {claim_name} for delete policy ownerRefs: {error}"
                ) from error

    async def pod_claim_is_stale(self, set_: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
        """Whether a claim of ``pod`` (not created yet) still belongs to an earlier pod of
        its name that the policy will delete it with: the pod must wait for it to go."""
        for claim in get_persistent_volume_claims(set_, pod).values():
            try:
                existing = self._claims.get(namespace(set_), name(claim))
            except NotFound:
                continue
            if claim_is_stale(set_, pod, existing):
                return True
        return False

    async def create_missing_persistent_volume_claims(
        self, set_: Mapping[str, Any], pod: Mapping[str, Any]
    ) -> None:
        """Create ``pod``'s missing claims and set the owners of all of them (for a pending
        pod, whose claims may have been deleted meanwhile)."""
        await self._create_persistent_volume_claims(set_, pod)
        try:
            await self.update_pod_claim_for_retention_policy(set_, pod)
        except Exception as error:
            self._pod_event("update", set_, pod, error)
            raise

    async def _create_persistent_volume_claims(
        self, set_: Mapping[str, Any], pod: Mapping[str, Any]
    ) -> None:
        """Create each claim of ``pod`` the cache does not have. Raises the failures together
        once all were tried; a claim being deleted counts as one (the pod must not mount
        it)."""
        errors: list[Exception] = []
        for claim in get_persistent_volume_claims(set_, pod).values():
            claim_name = name(claim)
            try:
                existing = self._claims.get(namespace(claim), claim_name)
            except NotFound:
                try:
                    await self._client.create(
                        PERSISTENTVOLUMECLAIMS, claim, namespace=namespace(claim)
                    )
                except AlreadyExists as error:
                    errors.append(RuntimeError(f"failed to create PVC {claim_name}: {error}"))
                except Exception as error:
                    errors.append(RuntimeError(f"failed to create PVC {claim_name}: {error}"))
                    self._claim_event("create", set_, pod, claim, error)
                else:
                    self._claim_event("create", set_, pod, claim, None)
                continue
            except Exception as error:
                errors.append(RuntimeError(f"failed to retrieve PVC {claim_name}: {error}"))
                self._claim_event("create", set_, pod, claim, error)
                continue
            if meta(existing).get("deletionTimestamp") is not None:
                errors.append(RuntimeError(f"pvc {claim_name} is being deleted"))
        failure = aggregate(errors)
        if failure is not None:
            raise failure
