"""qualified_name_violations: the rules of upstream's IsQualifiedName
(k8s.io/apimachinery/pkg/util/validation/validation.go) a value breaks, in upstream's order;
is_qualified_name words each as upstream does, profile validation and plugin args their own way."""

from __future__ import annotations

import pytest

from apimachinery.validation import (
    QualifiedNameViolation,
    is_qualified_name,
    qualified_name_violations,
)

V = QualifiedNameViolation


@pytest.mark.parametrize(
    ("value", "violations"),
    [
        ("example.com/gpu", []),
        ("MyName", []),
        ("a/b/c", [V.TOO_MANY_PARTS]),
        ("/x", [V.PREFIX_EMPTY]),
        ("Example.com/x", [V.PREFIX_INVALID]),
        ("a" * 254 + "/x", [V.PREFIX_TOO_LONG]),
        ("-" * 254 + "/x", [V.PREFIX_TOO_LONG, V.PREFIX_INVALID]),
        ("example.com/", [V.NAME_EMPTY, V.NAME_INVALID]),
        ("", [V.NAME_EMPTY, V.NAME_INVALID]),
        ("a" * 64, [V.NAME_TOO_LONG]),
        ("-a", [V.NAME_INVALID]),
        ("Bad_/-x", [V.PREFIX_INVALID, V.NAME_INVALID]),
        ("foo\n", [V.NAME_INVALID]),
    ],
)
def test_violations_in_upstream_order(value: str, violations: list[QualifiedNameViolation]) -> None:
    assert qualified_name_violations(value) == violations
    assert len(is_qualified_name(value)) == len(violations)


def test_is_qualified_name_words_them_as_upstream() -> None:
    assert is_qualified_name("/x") == ["prefix part must be non-empty"]
    assert is_qualified_name("a" * 64) == ["name part must be no more than 63 characters"]
    assert is_qualified_name("a/b/c")[0].startswith("a qualified name must consist of")
