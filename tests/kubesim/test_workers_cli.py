"""`aiosched cluster --workers N`: the flag's checks, its default by core count, and what the
store does when front-ends die."""

from __future__ import annotations

import argparse
import asyncio

import pytest

from kubesim import cli, workers
from kubesim.cluster import Cluster, ClusterConfig
from kubesim.controllers.options import ControllerOptions
from kubesim.storage.controllers import StorageOptions


def parse(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="aiosched cluster")
    cli.add_arguments(parser)
    return parser.parse_args(["--port", "0", *flags])


def test_workers_must_be_one_or_more(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse("--workers", "0")
    assert "argument --workers: must be 1 or more, got 0" in capsys.readouterr().err
    assert parse("--workers", "3").workers == 3
    assert parse().workers is None  # the default depends on the machine


@pytest.mark.parametrize(
    ("cores", "expected"), [(1, 1), (2, 1), (3, 2), (4, 2), (8, 2), (12, 4), (16, 5), (64, 6)]
)
def test_default_is_one_process_on_small_machines(
    monkeypatch: pytest.MonkeyPatch, cores: int, expected: int
) -> None:
    monkeypatch.setattr(workers.os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert workers.default_workers() == expected


def test_a_remote_address_is_refused_before_any_process_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(parse("--workers", "2", "--host", "0.0.0.0")) == 2
    assert "refusing to listen on non-loopback address 0.0.0.0" in capsys.readouterr().err


# a front-end that serves for a moment, then dies: it reads the store's greeting and snapshot,
# says it is ready, and exits with status 3
DYING_FRONTEND = """
import asyncio, socket, sys
from kubesim import ipc

async def main():
    fd = int(sys.argv[sys.argv.index("--store-fd") + 1])
    reader, writer = await asyncio.open_unix_connection(sock=socket.socket(fileno=fd))
    while True:
        message = await ipc.read_message(reader)
        if isinstance(message, dict) and "ready" in message:
            break
    writer.write(ipc.encode({"op": "ready", "id": 1}))
    await writer.drain()
    await asyncio.sleep(0.05)
    sys.exit(3)

asyncio.run(main())
"""


async def test_front_ends_that_keep_dying_end_the_cluster(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = ClusterConfig(
        tls=False, controllers=ControllerOptions(enabled=False), storage=StorageOptions(False)
    )
    frontends = workers.Workers(Cluster(config), 2, ("-c", DYING_FRONTEND))
    try:
        await frontends.start()
        why = await asyncio.wait_for(frontends.failed, 120)
    finally:
        await frontends.stop()
    assert why.startswith("kubesim-api-") and "exited with status 3, 6 times within 60 s" in why
    assert "exited with status 3; starting it again" in capsys.readouterr().err


async def test_a_front_end_that_cannot_start_fails_the_start() -> None:
    config = ClusterConfig(
        tls=False, controllers=ControllerOptions(enabled=False), storage=StorageOptions(False)
    )
    frontends = workers.Workers(Cluster(config), 1, ("-c", "import sys; sys.exit(4)"))
    try:
        with pytest.raises(workers.FrontendFailed, match=r"kubesim-api-1 did not start \(exit"):
            await frontends.start()
    finally:
        await frontends.stop()
