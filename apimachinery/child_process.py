"""What a helper process of `aiosched run` does first: take a name ps shows, die with the
scheduler, and step aside for it on a busy core (Linux prctl and sched_setscheduler; elsewhere
no-ops). Shared by the API I/O workers, the filter workers and the trace export process.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

PR_SET_NAME = 15
PR_SET_PDEATHSIG = 1


def name_process(name: str) -> None:
    """Show ``name`` in ps and top: the whole command line where setproctitle is installed,
    else the kernel's 15-character command name (prctl PR_SET_NAME)."""
    try:
        import setproctitle

        setproctitle.setproctitle(name)
        return
    except ImportError:
        pass
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


def die_with_parent(parent_pid: int) -> None:
    """Be killed when the scheduler dies, whatever kills it (kill -9 included)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # it died before prctl took effect
        os._exit(1)


def yield_to_the_scheduler() -> None:
    """Run as SCHED_BATCH (Linux): a frame from the scheduler wakes this worker without
    preempting the scheduling process on its core; the worker runs on an idle core, or at the
    next tick. On a busy 2-core machine, wakeup preemption made the scheduler's write of a
    frame cost it a time slice (py-spy: 17 % of its samples inside the write)."""
    if hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_BATCH"):
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))


class Usage(Exception):
    """The command line is not ``NAME FD PARENT_PID``."""


def become_helper(argv: list[str], module: str) -> tuple[str, int]:
    """Start-up of a helper started as ``python -m MODULE NAME FD PARENT_PID``: die with the
    parent, take NAME in ps, step aside on a busy core, and leave Ctrl-C to the parent (it
    reaches the whole process group; the scheduler shuts down and then closes the socket, and
    the helper must serve that shutdown until then). Returns NAME and FD; raises Usage (after
    printing how to call it) for another command line."""
    if len(argv) != 4 or not argv[2].isdigit() or not argv[3].isdigit():
        print(f"usage: python -m {module} NAME FD PARENT_PID", file=sys.stderr)
        raise Usage(module)
    name, fd, parent_pid = argv[1], int(argv[2]), int(argv[3])
    die_with_parent(parent_pid)
    name_process(name)
    yield_to_the_scheduler()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return name, fd
