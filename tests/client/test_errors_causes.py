"""Status causes as the apiserver sends them: the cause's type travels as ``reason``."""

from __future__ import annotations

from kcontrol.errors import (
    NAMESPACE_TERMINATING_CAUSE,
    Forbidden,
    api_error_from_status,
    has_status_cause,
)

# What kube-apiserver answers to a create in a namespace being deleted (captured from v1.36).
TERMINATING = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "message": 'configmaps "b" is forbidden: unable to create new content in namespace x '
    "because it is being terminated",
    "reason": "Forbidden",
    "details": {
        "name": "b",
        "kind": "configmaps",
        "causes": [
            {
                "reason": "NamespaceTerminating",
                "message": "namespace x is being terminated",
                "field": "metadata.namespace",
            }
        ],
    },
    "code": 403,
}


def test_namespace_terminating_cause_is_found_in_a_real_status() -> None:
    error = api_error_from_status(403, TERMINATING)
    assert isinstance(error, Forbidden)
    assert has_status_cause(error, NAMESPACE_TERMINATING_CAUSE)
    assert not has_status_cause(error, "FieldValueInvalid")


def test_non_api_errors_have_no_causes() -> None:
    assert not has_status_cause(ValueError("x"), NAMESPACE_TERMINATING_CAUSE)
