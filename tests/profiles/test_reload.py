"""ConfigWatcher: plain edits, ConfigMap-style ..data symlink swaps, no-op touches, SIGHUP."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from profiles.reload import ConfigWatcher, install_sighup


class Counter:
    def __init__(self) -> None:
        self.calls = 0
        self.changed = asyncio.Event()

    async def __call__(self) -> None:
        self.calls += 1
        self.changed.set()


def make_watcher(path: Path, counter: Counter) -> ConfigWatcher:
    return ConfigWatcher(path, counter, interval=0.01, debounce=0.01)


async def test_edit_triggers_once_and_touch_does_not(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("a: 1\n")
    counter = Counter()
    w = make_watcher(f, counter)
    assert await w.poll_once() is False  # baseline
    f.write_text("a: 2\n")
    assert await w.poll_once() is True
    assert await w.poll_once() is False
    os.utime(f, ns=(1, 1))  # new mtime, same content
    assert await w.poll_once() is False
    assert counter.calls == 1


def _configmap_dir(root: Path, stamp: str, content: str) -> None:
    d = root / stamp
    d.mkdir()
    (d / "config.yaml").write_text(content)
    tmp = root / "..data_tmp"
    tmp.symlink_to(stamp)
    os.replace(tmp, root / "..data")  # atomic swap, as the kubelet does


async def test_configmap_symlink_swap(tmp_path: Path) -> None:
    _configmap_dir(tmp_path, "..2024_01_01_00_00_00.1", "a: 1\n")
    (tmp_path / "config.yaml").symlink_to("..data/config.yaml")
    counter = Counter()
    w = make_watcher(tmp_path / "config.yaml", counter)
    assert await w.poll_once() is False
    _configmap_dir(tmp_path, "..2024_01_01_00_01_00.2", "a: 2\n")
    assert await w.poll_once() is True
    assert counter.calls == 1


async def test_configmap_update_as_the_kubelet_writes_it(tmp_path: Path) -> None:
    """The kubelet's AtomicWriter (pkg/volume/util/atomic_writer.go), as deploy/kubernetes mounts
    the ConfigMap: the new content goes to a fresh timestamped directory with the same mtime and
    size as the old, `..data` is swapped to it, then the old directory is removed. The file's
    own path (`config.yaml -> ..data/config.yaml`) never changes."""
    _configmap_dir(tmp_path, "..2024_01_01_00_00_00.1", "profile: a\n")
    (tmp_path / "config.yaml").symlink_to("..data/config.yaml")
    old_stat = (tmp_path / "..2024_01_01_00_00_00.1" / "config.yaml").stat()
    counter = Counter()
    w = make_watcher(tmp_path / "config.yaml", counter)
    assert await w.poll_once() is False

    new_dir = tmp_path / "..2024_01_01_00_01_00.2"
    new_dir.mkdir()
    (new_dir / "config.yaml").write_text("profile: b\n")
    os.utime(new_dir / "config.yaml", ns=(old_stat.st_atime_ns, old_stat.st_mtime_ns))
    (tmp_path / "..data_tmp").symlink_to(new_dir.name)
    os.replace(tmp_path / "..data_tmp", tmp_path / "..data")
    for leftover in (tmp_path / "..2024_01_01_00_00_00.1").iterdir():
        leftover.unlink()
    (tmp_path / "..2024_01_01_00_00_00.1").rmdir()

    assert await w.poll_once() is True
    assert await w.poll_once() is False
    assert counter.calls == 1


async def test_missing_file_mid_swap_is_ignored(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("a: 1\n")
    counter = Counter()
    w = make_watcher(f, counter)
    await w.poll_once()
    f.unlink()
    assert await w.poll_once() is False
    f.write_text("a: 3\n")
    assert await w.poll_once() is True


async def test_trigger_forces_a_reload(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("a: 1\n")
    counter = Counter()
    w = make_watcher(f, counter)
    task = asyncio.create_task(w.run())
    await asyncio.sleep(0.03)
    w.trigger()
    await asyncio.wait_for(counter.changed.wait(), 2)
    counter.changed.clear()
    f.write_text("a: 2\n")
    await asyncio.wait_for(counter.changed.wait(), 2)
    await w.close()
    await asyncio.wait_for(task, 2)
    assert counter.calls == 2


async def test_failing_callback_does_not_stop_the_watcher(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("a: 1\n")
    calls = 0

    async def boom() -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("bad config")

    w = ConfigWatcher(f, boom, interval=0.01, debounce=0.01)
    await w.poll_once()
    f.write_text("a: 2\n")
    assert await w.poll_once() is True
    f.write_text("a: 3\n")
    assert await w.poll_once() is True
    assert calls == 2


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX only")
async def test_install_sighup() -> None:
    loop = asyncio.get_running_loop()
    hit = asyncio.Event()
    uninstall = install_sighup(loop, hit.set)
    try:
        os.kill(os.getpid(), signal.SIGHUP)
        await asyncio.wait_for(hit.wait(), 2)
    finally:
        uninstall()
