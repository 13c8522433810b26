"""What this aiosched is: its own version and the Kubernetes release whose kube-scheduler it
follows, for `aiosched --version`, /statusz and the kubernetes_build_info metric."""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from typing import Final

#: The kube-scheduler release aiosched decides as (its plugins, messages, metrics, feature
#: gates' defaults; kubesim serves the same release's API).
KUBERNETES_VERSION: Final = "v1.37.0"


def aiosched_version() -> str:
    try:
        return metadata.version("aiosched")
    except metadata.PackageNotFoundError:
        return "unknown"


def git_version() -> str:
    """kubernetes_build_info's git_version: the Kubernetes release, then aiosched's version as
    semver build metadata (v1.37.0+aiosched.0.1.0)."""
    return f"{KUBERNETES_VERSION}+aiosched.{aiosched_version()}"


def version_text() -> str:
    """`aiosched --version` (kube-scheduler's prints "Kubernetes v1.37.0")."""
    return (
        f"aiosched {aiosched_version()}\n"
        f"Kubernetes {KUBERNETES_VERSION} (the kube-scheduler it follows)\n"
        f"{platform.python_implementation()} {platform.python_version()} on "
        f"{sys.platform}/{platform.machine()}"
    )


def build_info_labels() -> dict[str, str]:
    """component-base/metrics/version.go's labels, with what a Python process has to say:
    no Go toolchain (go_version empty), the interpreter as the compiler."""
    major, minor = KUBERNETES_VERSION.removeprefix("v").split(".")[:2]
    return {
        "major": major,
        "minor": minor,
        "git_version": git_version(),
        "git_commit": "",
        "git_tree_state": "",
        "build_date": "",
        "go_version": "",
        "compiler": platform.python_implementation().lower(),
        "platform": f"{sys.platform}/{platform.machine()}",
    }
