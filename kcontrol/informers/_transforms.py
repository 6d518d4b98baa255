"""Ready-made informer transforms (:data:`~kcontrol.informers.TransformFunc`).

- :func:`strip_managed_fields` - what kube-controller-manager installs on all of its
  informers - drops ``metadata.managedFields``, server-side apply's field sets;
- :func:`intern_strings`, which every reflector applies after the transform by default
  (``ReflectorOptions.intern_strings``), is exported for objects cached by other means.

Both change the object in place and return it; both are idempotent. What each saves per
cached object, measured: docs/benchmarks.md.
"""

from __future__ import annotations

from kcontrol.client import Object
from kcontrol.informers._fieldsets import dropping_managed_fields, drops_managed_fields
from kcontrol.informers._intern import intern_strings
from kcontrol.informers._reflector import TransformFunc

__all__ = ["chain_transforms", "intern_strings", "strip_managed_fields"]


@dropping_managed_fields
def strip_managed_fields(obj: Object) -> Object:
    """Drop ``metadata.managedFields``: server-side apply bookkeeping no controller reads.

    Writing such an object back loses nothing: when an update carries no managedFields the
    API server keeps the stored ones (kube-controller-manager relies on this).
    """
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return obj


def chain_transforms(*transforms: TransformFunc) -> TransformFunc:
    """One transform that applies ``transforms`` in order (dropping managedFields, for the
    reflector's decoding, when one of them does)."""

    def chained(obj: Object) -> Object:
        for transform in transforms:
            obj = transform(obj)
        return obj

    if any(drops_managed_fields(t) for t in transforms):
        dropping_managed_fields(chained)
    return chained
