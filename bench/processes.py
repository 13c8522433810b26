"""Child processes of a benchmark: started with logs to files, stopped SIGTERM-then-SIGKILL."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import sys
from pathlib import Path

_INLINE_CLI = "import sys; from scheduler.cli import main; sys.exit(main())"


def aiosched_command() -> list[str]:
    """How to run `aiosched`: the console script beside this interpreter, else the module."""
    script = shutil.which("aiosched", path=str(Path(sys.executable).parent)) or shutil.which(
        "aiosched"
    )
    if script:
        return [script]
    return [sys.executable, "-c", _INLINE_CLI]


def free_port(host: str = "127.0.0.1") -> int:
    """A port free right now (a small race with other processes is accepted)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def read_peak_rss(pid: int) -> int | None:
    """VmHWM (the resident set's high-water mark) of a live process, in bytes."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return parse_vm_hwm(text)


def read_rss(pid: int) -> int | None:
    """VmRSS (the resident set now) of a live process, in bytes."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return parse_status_kib(text, "VmRSS:")


def read_cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time a live process has used, in seconds."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return parse_cpu_seconds(text, os.sysconf("SC_CLK_TCK"))


def parse_cpu_seconds(stat_text: str, ticks_per_second: int) -> float:
    # the command name (field 2) may hold spaces: count fields after its closing parenthesis
    fields = stat_text[stat_text.rindex(")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / ticks_per_second


def parse_vm_hwm(status_text: str) -> int | None:
    return parse_status_kib(status_text, "VmHWM:")


def parse_status_kib(status_text: str, field: str) -> int | None:
    """A /proc/<pid>/status field given in kB, in bytes."""
    for line in status_text.splitlines():
        if line.startswith(field):
            parts = line.split()
            return int(parts[1]) * 1024  # the kernel reports kB
    return None


class ManagedProcess:
    """One child process; stdout and stderr go to `log_path`. Use as an async context manager."""

    def __init__(self, name: str, argv: list[str], log_path: Path, stop_timeout: float = 10.0):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.stop_timeout = stop_timeout
        self._proc: asyncio.subprocess.Process | None = None
        self.returncode: int | None = None
        self.peak_rss_bytes: int | None = None

    async def __aenter__(self) -> ManagedProcess:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError(f"{self.name} not started")
        return self._proc.pid

    def exit_code(self) -> int | None:
        return None if self._proc is None else self._proc.returncode

    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self._proc = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log
            )

    def cpu_seconds(self) -> float | None:
        return read_cpu_seconds(self.pid) if self.alive() else None

    def rss_bytes(self) -> int | None:
        return read_rss(self.pid) if self.alive() else None

    def sample_rss(self) -> None:
        """Remember the high-water mark while the process is alive (it is gone after exit)."""
        if self.alive():
            value = read_peak_rss(self.pid)
            if value is not None:
                self.peak_rss_bytes = max(self.peak_rss_bytes or 0, value)

    async def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after `stop_timeout`; returns the exit code."""
        proc = self._proc
        if proc is None:
            return None
        if proc.returncode is None:
            self.sample_rss()
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), self.stop_timeout)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        self.returncode = proc.returncode
        return self.returncode

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])
