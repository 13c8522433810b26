"""--allow-remote-bind: refused without it, in words true to the transport; loud warning with it."""

from __future__ import annotations

import argparse

import pytest

from kubesim import cli
from kubesim.cluster import Cluster


def parse(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="kubesim")
    cli.add_arguments(parser)
    return parser.parse_args(["--port", "0", "--no-controllers", *flags])


@pytest.mark.parametrize(
    ("flags", "said", "not_said"),
    [
        ((), "over https with a self-signed certificate", "no TLS"),
        (("--insecure-http",), "over plain HTTP (--insecure-http): no TLS", "https"),
    ],
)
def test_a_remote_address_is_refused_saying_what_it_would_expose(
    capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], said: str, not_said: str
) -> None:
    assert cli.main(parse("--host", "0.0.0.0", *flags)) == 2
    err = capsys.readouterr().err
    assert err.startswith("kubesim: refusing to listen on non-loopback address 0.0.0.0: ")
    assert said in err and not_said not in err
    assert err.rstrip().endswith("pass --allow-remote-bind to do it anyway")


@pytest.mark.parametrize(
    ("flags", "warning"),
    [
        (
            ("--host", "0.0.0.0", "--allow-remote-bind"),
            "kubesim: WARNING: listening on non-loopback address 0.0.0.0 (--allow-remote-bind): "
            "the API on 0.0.0.0 is reachable from other hosts over https with a self-signed "
            "certificate",
        ),
        (
            ("--host", "0.0.0.0", "--allow-remote-bind", "--insecure-http"),
            "kubesim: WARNING: listening on non-loopback address 0.0.0.0 (--allow-remote-bind): "
            "the API on 0.0.0.0 is reachable from other hosts over plain HTTP (--insecure-http)",
        ),
        (("--allow-remote-bind",), None),  # loopback: nothing to warn about
    ],
)
async def test_allow_remote_bind_warns_loudly_naming_the_address_and_transport(
    capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], warning: str | None
) -> None:
    cluster = Cluster(cli.config_from_args(parse("--no-storage-controllers", *flags)))
    await cluster.start()
    await cluster.stop()
    warnings = [line for line in capsys.readouterr().err.splitlines() if "WARNING" in line]
    if warning is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and warnings[0].startswith(warning), warnings
