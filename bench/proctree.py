"""CPU time of every process in the scheduler's process tree, read from /proc.

The scheduler may run helpers beside its scheduling loop (worker processes for API I/O or for
Filter/Score). The bench measures all of them without knowing their names: the tree is the
scheduler's PID and every descendant, found again at each sample so that workers started or
restarted while measuring are counted. The critical path is the scheduler's PID itself, the
process that runs scheduling cycles one at a time: its CPU per pod bounds the throughput
however many cores the helpers get.

A process is known by its PID and start time (a reused PID is another process); its CPU while
measuring is its last sample minus its CPU at the first sample that saw it (0 for a process
started after measuring began). A process that exits between two samples loses at most one
sampling interval of CPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class StatLine:
    """What the bench reads of /proc/<pid>/stat."""

    name: str  # comm: what `ps -o comm` shows, set by prctl(PR_SET_NAME) or setproctitle
    ppid: int
    start_ticks: int  # since boot: with the PID, tells a reused PID apart
    cpu_ticks: int  # user + system


def parse_stat(text: str) -> StatLine:
    """A /proc/<pid>/stat line (proc(5)); the name may hold spaces and parentheses."""
    open_paren, close_paren = text.index("("), text.rindex(")")
    fields = text[close_paren + 2 :].split()
    # fields[0] is field 3 (state): field N of proc(5) is fields[N - 3]
    return StatLine(
        name=text[open_paren + 1 : close_paren],
        ppid=int(fields[1]),
        start_ticks=int(fields[19]),
        cpu_ticks=int(fields[11]) + int(fields[12]),
    )


#: The kernel keeps 15 bytes of a process's name (TASK_COMM_LEN, its NUL aside).
COMM_LENGTH = 15


def read_stat(pid: int, proc: Path = PROC) -> StatLine | None:
    try:
        stat = parse_stat((proc / str(pid) / "stat").read_text())
    except (OSError, ValueError, IndexError):
        return None  # gone, or not a process
    if len(stat.name.encode()) == COMM_LENGTH:
        full = _titled_name(pid, stat.name, proc)
        if full is not None:
            return StatLine(full, stat.ppid, stat.start_ticks, stat.cpu_ticks)
    return stat


def _titled_name(pid: int, comm: str, proc: Path) -> str | None:
    """The whole name of a process whose name the kernel cut short (aiosched-filter-0 shows
    as aiosched-filter): setproctitle writes it as the command line's first word."""
    try:
        first = (proc / str(pid) / "cmdline").read_bytes().split(b"\0", 1)[0]
    except OSError:
        return None
    name = first.decode(errors="replace")
    return name if name.startswith(comm) and " " not in name else None


def _children_files(pid: int, proc: Path) -> list[int] | None:
    """Children of `pid` from /proc/<pid>/task/*/children; None where the kernel lacks it."""
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return []
    children: list[int] = []
    for task in tasks:
        try:
            text = (task / "children").read_text()
        except FileNotFoundError:
            return None
        except OSError:
            continue
        children.extend(int(word) for word in text.split())
    return children


def tree_pids(root: int, proc: Path = PROC) -> list[int]:
    """`root` and all its descendants alive now (root first; empty when root is gone)."""
    if read_stat(root, proc) is None:
        return []
    found = [root]
    index = 0
    while index < len(found):
        children = _children_files(found[index], proc)
        if children is None:
            return _tree_by_parent(root, proc)
        found.extend(pid for pid in children if pid not in found)
        index += 1
    return found


def _tree_by_parent(root: int, proc: Path) -> list[int]:
    """The tree from every process's parent (kernels without the children files)."""
    parent_of: dict[int, int] = {}
    for entry in proc.iterdir():
        if entry.name.isdigit():
            stat = read_stat(int(entry.name), proc)
            if stat is not None:
                parent_of[int(entry.name)] = stat.ppid
    found = [root]
    index = 0
    while index < len(found):
        found.extend(pid for pid, ppid in parent_of.items() if ppid == found[index])
        index += 1
    return found


@dataclass(frozen=True, slots=True)
class ProcessCpu:
    """One process's CPU while measuring."""

    pid: int
    name: str
    cpu_seconds: float
    critical_path: bool  # the scheduler's own PID: the process running scheduling cycles

    def to_json(self, pods: int) -> dict[str, object]:
        return {
            "pid": self.pid,
            "name": self.name,
            "cpu_seconds": round(self.cpu_seconds, 3),
            "cpu_per_pod_ms": round(self.cpu_seconds / pods * 1000, 4) if pods else None,
            "critical_path": self.critical_path,
        }


@dataclass(slots=True)
class _Seen:
    name: str
    first_ticks: int  # CPU when measuring began (0 for a process started later)
    last_ticks: int  # CPU at the last sample that saw it


class ProcessTreeCpu:
    """Samples the CPU time of a process tree; `processes()` is each one's share since the
    first sample (call `sample()` when measuring starts, now and then, and when it ends)."""

    def __init__(self, root: int, proc: Path = PROC, ticks_per_second: int | None = None):
        self.root = root
        self._proc = proc
        self._ticks = ticks_per_second or os.sysconf("SC_CLK_TCK")
        self._started = False
        self._seen: dict[tuple[int, int], _Seen] = {}  # by (pid, start ticks)

    def sample(self) -> None:
        first = not self._started
        self._started = True
        for pid in tree_pids(self.root, self._proc):
            stat = read_stat(pid, self._proc)
            if stat is None:
                continue
            key = (pid, stat.start_ticks)
            seen = self._seen.get(key)
            if seen is None:
                # a process there when measuring began counts from then; a later one from 0
                self._seen[key] = _Seen(stat.name, stat.cpu_ticks if first else 0, stat.cpu_ticks)
            else:
                seen.name, seen.last_ticks = stat.name, stat.cpu_ticks

    def processes(self) -> list[ProcessCpu]:
        """Every process seen, the critical path first, then by CPU (most first)."""
        result = []
        for (pid, _start), seen in self._seen.items():
            seconds = (seen.last_ticks - seen.first_ticks) / self._ticks
            result.append(ProcessCpu(pid, seen.name, seconds, pid == self.root))
        result.sort(key=lambda p: (not p.critical_path, -p.cpu_seconds, p.pid))
        return result

    def total_seconds(self) -> float | None:
        """The tree's CPU so far (None before a sample saw the root)."""
        if not self._seen:
            return None
        return sum(p.cpu_seconds for p in self.processes())
