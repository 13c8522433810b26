"""Names the processes of `aiosched cluster --workers N` show in ps, and ties a front-end's life
to the store process's (Linux prctl; elsewhere both are no-ops)."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import signal
import sys

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15


def _prctl(option: int, value: int | bytes) -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(option, value, 0, 0, 0)


def set_process_name(name: str) -> None:
    """The name `ps -e`, `top` and `pgrep` show (the kernel keeps 15 bytes of it)."""
    _prctl(_PR_SET_NAME, name.encode()[:15])


def die_with_parent() -> None:
    """SIGTERM this process when the process that started it dies, even by kill -9."""
    _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
