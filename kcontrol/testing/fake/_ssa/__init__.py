"""Server-side apply for the fake API server, as the real one does it (structured-merge-diff
under apimachinery's ``managedfields``), in layers, each on the one below:

- ``_fieldpath``: field paths and field sets in the ``fieldsV1`` format;
- ``_shape``: how each field merges and is owned (keyed, set or atomic lists; atomic
  maps), from field names for the built-in kinds or from a CRD's schema;
- ``_typed``: field sets, comparison, merge and removal of plain-dict values over a shape;
- ``_fieldmanager``: ``metadata.managedFields``, ownership and conflicts per write;
- ``_apply``: per write, which manager and which fields it records, and the apply itself.

The object tracker uses only the names below.
"""

from kcontrol.testing.fake._ssa._apply import (
    DEFAULT_FIELD_MANAGER,
    apply_config,
    check_write_options,
    record_apply,
    record_update,
)
from kcontrol.testing.fake._ssa._shape import BuiltinShape, SchemaShape, Shape

__all__ = [
    "DEFAULT_FIELD_MANAGER",
    "BuiltinShape",
    "SchemaShape",
    "Shape",
    "apply_config",
    "check_write_options",
    "record_apply",
    "record_update",
]
