"""Name and label checks with upstream's messages (k8s.io/apimachinery/pkg/util/validation).

Each check returns a list of error strings, empty when the value is valid, exactly as upstream's
Is* functions do, so callers can wrap them in field errors or selector errors. kubesim's
validation and the label selector grammar (apimachinery.labels) report these messages; the
scheduler's own short messages for selectors it cannot read are built on the same rules.
"""

from __future__ import annotations

import enum
import re


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Upstream's RegexError, including its odd "',  or '" spacing, for byte-identical messages."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


EMPTY_ERROR = "must be non-empty"

_QNAME_CHAR = "[A-Za-z0-9]"
_QNAME_EXT_CHAR = "[-A-Za-z0-9_.]"
QUALIFIED_NAME_FMT = f"({_QNAME_CHAR}{_QNAME_EXT_CHAR}*)?{_QNAME_CHAR}"
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_QUALIFIED_NAME_RE = re.compile(QUALIFIED_NAME_FMT)
QUALIFIED_NAME_MAX_LENGTH = 63

LABEL_VALUE_FMT = f"({QUALIFIED_NAME_FMT})?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_RE = re.compile(LABEL_VALUE_FMT)
LABEL_VALUE_MAX_LENGTH = 63

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_FMT)
DNS1123_LABEL_MAX_LENGTH = 63

DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN_FMT)
DNS1123_SUBDOMAIN_MAX_LENGTH = 253

DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_DNS1035_LABEL_RE = re.compile(DNS1035_LABEL_FMT)


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


class QualifiedNameViolation(enum.Enum):
    """A rule of IsQualifiedName that a value breaks, for callers that word it their own way
    (profile validation, plugin args and the scheduler's selector messages keep their texts)."""

    TOO_MANY_PARTS = enum.auto()  # more than one '/'
    PREFIX_EMPTY = enum.auto()
    PREFIX_TOO_LONG = enum.auto()  # over 253 characters
    PREFIX_INVALID = enum.auto()  # not a lowercase RFC 1123 subdomain
    NAME_EMPTY = enum.auto()
    NAME_TOO_LONG = enum.auto()  # over 63 characters
    NAME_INVALID = enum.auto()  # not alphanumerics, '-', '_', '.' starting and ending alike


def qualified_name_violations(value: str) -> list[QualifiedNameViolation]:
    """Every rule of IsQualifiedName `value` breaks, in upstream's order (empty when valid)."""
    found: list[QualifiedNameViolation] = []
    parts = value.split("/")
    if len(parts) > 2:
        return [QualifiedNameViolation.TOO_MANY_PARTS]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            found.append(QualifiedNameViolation.PREFIX_EMPTY)
        else:
            if len(prefix) > DNS1123_SUBDOMAIN_MAX_LENGTH:
                found.append(QualifiedNameViolation.PREFIX_TOO_LONG)
            if not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
                found.append(QualifiedNameViolation.PREFIX_INVALID)
    if not name:
        found.append(QualifiedNameViolation.NAME_EMPTY)
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        found.append(QualifiedNameViolation.NAME_TOO_LONG)
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        found.append(QualifiedNameViolation.NAME_INVALID)
    return found


_QUALIFIED_NAME_REGEX_ERROR = regex_error(
    _QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"
)
# upstream's IsQualifiedName message for each violation
_QUALIFIED_NAME_ERRORS = {
    QualifiedNameViolation.TOO_MANY_PARTS: "a qualified name "
    + _QUALIFIED_NAME_REGEX_ERROR
    + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    QualifiedNameViolation.PREFIX_EMPTY: "prefix part " + EMPTY_ERROR,
    QualifiedNameViolation.PREFIX_TOO_LONG: "prefix part "
    + max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH),
    QualifiedNameViolation.PREFIX_INVALID: "prefix part "
    + regex_error(_DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"),
    QualifiedNameViolation.NAME_EMPTY: "name part " + EMPTY_ERROR,
    QualifiedNameViolation.NAME_TOO_LONG: "name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH),
    QualifiedNameViolation.NAME_INVALID: "name part " + _QUALIFIED_NAME_REGEX_ERROR,
}


def is_qualified_name(value: str) -> list[str]:
    return [_QUALIFIED_NAME_ERRORS[v] for v in qualified_name_violations(value)]


def is_valid_label_value(value: str) -> list[str]:
    errs = []
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


# k8s.io/apimachinery/pkg/api/validation/path: what RBAC names must be (roles and bindings may
# hold ':' as in "system:kube-scheduler", which no DNS name allows).
_NAME_MAY_NOT_BE = (".", "..")
_NAME_MAY_NOT_CONTAIN = ("/", "%")


def is_valid_path_segment_name(value: str) -> list[str]:
    """path.IsValidPathSegmentName."""
    for illegal in _NAME_MAY_NOT_BE:
        if value == illegal:
            return [f"may not be '{illegal}'"]
    return [f"may not contain '{part}'" for part in _NAME_MAY_NOT_CONTAIN if part in value]
