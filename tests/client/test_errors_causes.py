"""Status causes as the apiserver sends them: the cause's type travels as ``reason``."""

from __future__ import annotations

from kcontrol.errors import (
    NAMESPACE_TERMINATING_CAUSE,
    Forbidden,
    api_error_from_status,
    error_message,
    has_status_cause,
    is_namespace_terminating,
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


def test_is_namespace_terminating() -> None:
    assert is_namespace_terminating(api_error_from_status(403, TERMINATING))
    other = api_error_from_status(403, {**TERMINATING, "details": {"causes": []}})
    assert not is_namespace_terminating(other)
    assert not is_namespace_terminating(ValueError("x"))


def test_error_message_is_the_status_message_as_go_prints_it() -> None:
    error = api_error_from_status(403, TERMINATING)
    assert error_message(error) == TERMINATING["message"]
    assert error_message(ValueError("boom")) == "boom"
    without = api_error_from_status(500, {"kind": "Status", "code": 500})
    assert error_message(without) == without.message == "HTTP 500"
