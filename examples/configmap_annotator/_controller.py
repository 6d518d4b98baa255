"""The ConfigMap annotator: a builder-made controller with a level-based reconcile."""

from __future__ import annotations

from kcontrol import operator as op

__all__ = ["ANNOTATION", "LABEL_SELECTOR", "NAME", "SPEC", "new_reconcile"]

NAME = "configmap-annotator"
LABEL_SELECTOR = "kcontrol.example/annotate=true"
ANNOTATION = "kcontrol.example/seen"


def new_reconcile(ctx: op.ControllerContext) -> op.Reconcile:
    """The reconcile of one manager: sets ``kcontrol.example/seen: <identity>`` on every
    ConfigMap matching :data:`LABEL_SELECTOR`.

    It reads the cached ConfigMap and, when the annotation does not name this manager, writes
    it with a JSON merge patch carrying the cached ``resourceVersion``: a stale cache gets a 409
    instead of overwriting a newer object, and the request is retried once the cache has
    caught up. Only the annotation is sent, so no other field is ever overwritten.
    """
    configmaps = ctx.informers.lister(op.CONFIGMAPS, label_selector=LABEL_SELECTOR)
    recorder = ctx.new_recorder(NAME)

    async def reconcile(request: op.Request) -> op.Result | None:
        try:
            configmap = configmaps.get(request.namespace, request.name)
        except op.NotFound:
            return None  # deleted: nothing to converge
        metadata = configmap["metadata"]
        if (metadata.get("annotations") or {}).get(ANNOTATION) == ctx.identity:
            return None
        patch = {
            "metadata": {
                "resourceVersion": metadata["resourceVersion"],
                "annotations": {ANNOTATION: ctx.identity},
            }
        }
        try:
            await ctx.client.patch(op.CONFIGMAPS, request.name, patch, namespace=request.namespace)
        except op.NotFound:
            return None
        except op.Conflict:
            return op.Result(requeue=True)  # our copy is stale; the watch brings the new one
        recorder.event(
            configmap, op.EVENT_TYPE_NORMAL, "Annotated", f"Marked as seen by {ctx.identity}"
        )
        return None

    return reconcile


SPEC = (
    op.ControllerBuilder(NAME)
    .for_(op.CONFIGMAPS, label_selector=LABEL_SELECTOR)
    .with_options(workers=2, sync_timeout=30.0, max_retries=15)
    .build(new_reconcile)
)
"""Register with ``ControllerRegistry([SPEC])`` or the ``kcontrol.controllers`` entry points."""
