"""Config hot-reload mechanism: a file watcher and a SIGHUP hook. Pure mechanism: it decides
*when* the config may have changed and calls back; loading and swapping is the caller's job.

A ConfigMap volume updates files by writing a new ``..2024_xx`` timestamp directory and
atomically re-pointing the ``..data`` symlink, the file itself being a symlink through
``..data``. Polling follows symlinks, so the swap shows up as a new inode/real path; a content
hash keeps touches and identical rewrites from triggering reloads.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import NamedTuple

log = logging.getLogger(__name__)


class _StatKey(NamedTuple):
    real_path: str
    device: int
    inode: int
    mtime_ns: int
    size: int


class _Fingerprint(NamedTuple):
    stat: _StatKey
    digest: str


class ConfigWatcher:
    """Calls ``on_change`` (awaited, never concurrently) after the file's content changed and
    stayed stable for ``debounce`` seconds, or when ``trigger()`` was called (SIGHUP)."""

    def __init__(
        self,
        path: str | Path,
        on_change: Callable[[], Awaitable[None]],
        interval: float = 1.0,
        debounce: float | None = None,
    ) -> None:
        self.path = Path(path)
        self.on_change = on_change
        self.interval = interval
        self.debounce = interval / 4 if debounce is None else debounce
        self._wake = asyncio.Event()
        self._forced = False
        self._closed = False
        self._last: _Fingerprint | None = None
        self._started = False

    def trigger(self) -> None:
        """Request a reload now even if the file looks unchanged (safe from signal handlers
        installed with loop.add_signal_handler)."""
        self._forced = True
        self._wake.set()

    async def close(self) -> None:
        self._closed = True
        self._wake.set()

    async def run(self) -> None:
        """Poll until close(). The content present at start is the baseline (no callback)."""
        if not self._started:
            self._last = await asyncio.to_thread(self._fingerprint, None)
            self._started = True
        while not self._closed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval)
            self._wake.clear()
            if self._closed:
                break
            await self.poll_once()

    async def poll_once(self) -> bool:
        """Check now; True when on_change was called."""
        if not self._started:
            self._last = await asyncio.to_thread(self._fingerprint, None)
            self._started = True
            if not self._forced:
                return False
        forced, self._forced = self._forced, False
        current = await asyncio.to_thread(self._fingerprint, self._last)
        if not forced and (current is None or current == self._last):
            return False
        # Debounce: editors and ConfigMap updates can touch the file more than once.
        while not self._closed:
            await asyncio.sleep(self.debounce)
            again = await asyncio.to_thread(self._fingerprint, current)
            if again == current:
                break
            current = again
        if current is None and not forced:
            return False
        changed_content = (
            current is None or self._last is None or (current.digest != self._last.digest)
        )
        self._last = current
        if not (forced or changed_content):
            return False
        try:
            await self.on_change()
        except Exception:  # the reload callback must never kill the watcher
            log.exception("config reload callback failed for %s", self.path)
        return True

    def _fingerprint(self, previous: _Fingerprint | None) -> _Fingerprint | None:
        """None when the file is missing (e.g. mid-swap); content is hashed only if the stat
        key moved since ``previous``."""
        try:
            st = os.stat(self.path)  # follows symlinks (..data swaps)
            key = _StatKey(
                os.path.realpath(self.path), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size
            )
            if previous is not None and previous.stat == key:
                return previous
            digest = hashlib.sha256(self.path.read_bytes()).hexdigest()
        except OSError:
            return None
        return _Fingerprint(key, digest)


def install_sighup(
    loop: asyncio.AbstractEventLoop, callback: Callable[[], None]
) -> Callable[[], None]:
    """Run ``callback`` on SIGHUP (in the loop); returns a function that uninstalls it."""
    loop.add_signal_handler(signal.SIGHUP, callback)

    def uninstall() -> None:
        loop.remove_signal_handler(signal.SIGHUP)

    return uninstall
