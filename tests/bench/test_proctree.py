"""bench.proctree: the CPU of the scheduler's process tree, per process, read from /proc."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.proctree import ProcessTreeCpu, parse_stat, tree_pids

TICKS = 100


def _stat(pid: int, name: str, ppid: int, start: int, utime: int, stime: int) -> str:
    # proc(5): pid (comm) state ppid ... utime(14) stime(15) ... starttime(22) ...
    middle = ["0"] * 9  # fields 5..13
    rest = ["0"] * 6  # fields 16..21
    fields = ["S", str(ppid), *middle, str(utime), str(stime), *rest, str(start), "0", "0"]
    return f"{pid} ({name}) {' '.join(fields)}\n"


class FakeProc:
    """A /proc with the processes given, their children files written unless `children`
    is False (a kernel without CONFIG_PROC_CHILDREN)."""

    def __init__(self, root: Path, children: bool = True) -> None:
        self.root = root
        self.children = children
        self.procs: dict[int, tuple[str, int, int, int]] = {}

    def set(self, pid: int, name: str, ppid: int, cpu: int, start: int = 1) -> None:
        self.procs[pid] = (name, ppid, start, cpu)
        self._write()

    def drop(self, pid: int) -> None:
        del self.procs[pid]
        self._write()

    def _write(self) -> None:
        for entry in self.root.iterdir():
            for path in sorted(entry.rglob("*"), reverse=True):
                path.unlink() if path.is_file() else path.rmdir()
            entry.rmdir()
        for pid, (name, ppid, start, cpu) in self.procs.items():
            task = self.root / str(pid) / "task" / str(pid)
            task.mkdir(parents=True)
            (self.root / str(pid) / "stat").write_text(_stat(pid, name, ppid, start, cpu, 0))
            if self.children:
                kids = [str(p) for p, (_, parent, _, _) in self.procs.items() if parent == pid]
                (task / "children").write_text(" ".join(kids) + (" " if kids else ""))


def test_parse_stat_reads_a_name_with_spaces_and_parentheses() -> None:
    stat = parse_stat(_stat(42, "aio (worker) 1", 7, 555, 30, 12))
    assert (stat.name, stat.ppid, stat.start_ticks, stat.cpu_ticks) == (
        "aio (worker) 1",
        7,
        555,
        42,
    )


def test_a_name_cut_to_15_bytes_is_read_whole_from_the_title(tmp_path: Path) -> None:
    proc = FakeProc(tmp_path)
    proc.set(10, "aiosched", 1, 0)
    proc.set(11, "aiosched-filter", 10, 0)  # what the kernel keeps of aiosched-filter-0
    proc.set(12, "python3.11-long", 10, 0)  # cut short too, but no title set
    (tmp_path / "11" / "cmdline").write_bytes(b"aiosched-filter-0\0\0\0")
    (tmp_path / "12" / "cmdline").write_bytes(b"/usr/bin/python3\0-m\0x\0")
    tree = ProcessTreeCpu(10, tmp_path, TICKS)
    tree.sample()
    assert {p.name for p in tree.processes()} == {
        "aiosched",
        "aiosched-filter-0",
        "python3.11-long",
    }


@pytest.mark.parametrize("children", [True, False], ids=["children-files", "parent-scan"])
def test_the_tree_is_the_root_and_its_descendants(tmp_path: Path, children: bool) -> None:
    proc = FakeProc(tmp_path, children)
    proc.set(1, "init", 0, 0)
    proc.set(10, "aiosched", 1, 0)
    proc.set(11, "worker-a", 10, 0)
    proc.set(12, "helper", 11, 0)
    proc.set(20, "kubesim", 1, 0)
    assert sorted(tree_pids(10, tmp_path)) == [10, 11, 12]
    assert tree_pids(99, tmp_path) == []


def test_cpu_per_process_while_measuring(tmp_path: Path) -> None:
    proc = FakeProc(tmp_path)
    proc.set(10, "aiosched", 1, cpu=500)
    proc.set(11, "api-worker", 10, cpu=100)
    proc.set(30, "unrelated", 1, cpu=7)
    tree = ProcessTreeCpu(10, tmp_path, TICKS)
    tree.sample()  # measuring begins: what each process used before does not count
    proc.set(10, "aiosched", 1, cpu=800)
    proc.set(11, "api-worker", 10, cpu=150)
    proc.set(12, "filter-worker", 10, cpu=40)  # started while measuring: counts from 0
    tree.sample()
    proc.drop(12)  # gone: keeps what the last sample saw
    proc.set(12, "filter-worker", 10, cpu=5, start=99)  # the PID reused by a new process
    proc.set(10, "aiosched", 1, cpu=900)
    tree.sample()
    got = [(p.pid, p.name, p.cpu_seconds, p.critical_path) for p in tree.processes()]
    assert got == [
        (10, "aiosched", 4.0, True),  # the critical path first
        (11, "api-worker", 0.5, False),
        (12, "filter-worker", 0.4, False),
        (12, "filter-worker", 0.05, False),
    ]
    assert tree.total_seconds() == pytest.approx(4.95)
    assert tree.processes()[0].to_json(pods=100) == {
        "pid": 10, "name": "aiosched", "cpu_seconds": 4.0, "cpu_per_pod_ms": 40.0,
        "critical_path": True,
    }  # fmt: skip


def test_a_real_child_is_found_and_its_cpu_counted() -> None:
    """A child that burns 0.3 s of CPU once told to, after measuring began."""
    burn = (
        "import sys, time\nsys.stdin.readline()\n"
        "end = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
        "sys.stdin.readline()\n"
    )
    child = subprocess.Popen([sys.executable, "-c", burn], stdin=subprocess.PIPE)
    assert child.stdin is not None
    try:
        tree = ProcessTreeCpu(os.getpid())
        tree.sample()
        child.stdin.write(b"go\n")
        child.stdin.flush()
        deadline = time.monotonic() + 30
        counted = 0.0
        while counted < 0.25 and time.monotonic() < deadline:
            time.sleep(0.05)
            tree.sample()
            counted = sum(p.cpu_seconds for p in tree.processes() if p.pid == child.pid)
        assert 0.25 <= counted < 1.0
        pids = {p.pid: p for p in tree.processes()}
        assert pids[os.getpid()].critical_path and not pids[child.pid].critical_path
    finally:
        child.kill()
        child.wait()
