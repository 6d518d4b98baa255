"""Label selectors, as apimachinery's ``pkg/labels`` defines them.

- :func:`parse` reads the string form (``app=web,tier in (a,b),!canary``);
- :func:`selector_from_label_selector` converts a ``metav1.LabelSelector`` dict, where ``None``
  selects nothing and ``{}`` selects everything;
- :func:`selector_from_set` builds the equality selector for a label map;
- :class:`Selector` is immutable and hashable; ``matches(labels)`` is the fast path listers use,
  ``str(selector)`` the canonical form.

Malformed input raises :class:`SelectorError`, a :class:`ValueError`.
"""

from kcontrol.labels._label_selector import selector_from_label_selector
from kcontrol.labels._parser import parse
from kcontrol.labels._selector import (
    Operator,
    Requirement,
    Selector,
    SelectorError,
    everything,
    nothing,
    selector_from_set,
)

__all__ = [
    "Operator",
    "Requirement",
    "Selector",
    "SelectorError",
    "everything",
    "nothing",
    "parse",
    "selector_from_label_selector",
    "selector_from_set",
]
