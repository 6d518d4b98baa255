"""The controller toolkit: ControllerRefManager (adopt/release), expectations."""

from kcontrol.controller._expectations import (
    EXPECTATIONS_TIMEOUT,
    ControlleeExpectations,
    ControllerExpectations,
    UIDTrackingControllerExpectations,
)
from kcontrol.controller._refmanager import (
    CanAdopt,
    CannotAdopt,
    ClaimError,
    ControllerRefManager,
    get_controller_of,
    recheck_deletion_timestamp,
    recheck_owner,
)

__all__ = [
    "EXPECTATIONS_TIMEOUT",
    "CanAdopt",
    "CannotAdopt",
    "ClaimError",
    "ControlleeExpectations",
    "ControllerExpectations",
    "ControllerRefManager",
    "UIDTrackingControllerExpectations",
    "get_controller_of",
    "recheck_deletion_timestamp",
    "recheck_owner",
]
