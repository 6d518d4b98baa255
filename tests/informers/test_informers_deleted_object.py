"""deleted_object: what a delete handler received, out of its tombstone, checked for kind."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol.informers import DeletedFinalStateUnknown, deleted_object

POD = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}


@pytest.mark.parametrize(
    ("received", "want"),
    [
        pytest.param(POD, POD, id="object"),
        pytest.param(DeletedFinalStateUnknown("ns/p", POD), POD, id="tombstone"),
        pytest.param({"metadata": {"name": "p"}}, {"metadata": {"name": "p"}}, id="no-kind"),
        pytest.param({"kind": "Job", "metadata": {}}, None, id="other-kind"),
        pytest.param(DeletedFinalStateUnknown("ns/p", "junk"), None, id="junk-tombstone"),  # type: ignore[arg-type]
        pytest.param("junk", None, id="junk"),
    ],
)
def test_deleted_object(received: Any, want: Any) -> None:
    got = deleted_object(received, "Pod")
    assert got == want
    if want is not None:
        assert got is (received.obj if isinstance(received, DeletedFinalStateUnknown) else received)
