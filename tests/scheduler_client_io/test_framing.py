"""The framed protocol between the scheduler and its API I/O workers (scheduler/client/framing.py).

A byte stream cut anywhere gives back the frames that were written, in order; request payloads
carry method, path, query, content type and body bytes unchanged; garbage is refused with a
ProtocolError rather than read as a huge or unknown frame.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.client import framing

KINDS = sorted(framing.KINDS)

frames_strategy = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, 2**32 - 1), st.binary(max_size=300)),
    max_size=20,
)


@given(frames=frames_strategy, cuts=st.lists(st.integers(0, 10_000), max_size=30))
def test_frames_survive_any_cut_of_the_stream(
    frames: list[tuple[int, int, bytes]], cuts: list[int]
) -> None:
    stream = b"".join(framing.frame(kind, rid, payload) for kind, rid, payload in frames)
    points = sorted({min(cut, len(stream)) for cut in cuts} | {0, len(stream)})
    reader = framing.FrameReader()
    got: list[tuple[int, int, bytes]] = []
    for start, end in itertools.pairwise(points):
        got.extend(reader.feed(stream[start:end]))
    assert [(k, r, p) for k, r, p in got] == frames
    assert reader.pending == 0


@given(
    method=st.sampled_from(["GET", "POST", "PATCH", "PUT", "DELETE"]),
    path=st.text(min_size=1, max_size=80),
    params=st.dictionaries(st.text(max_size=20), st.text(max_size=40), max_size=5),
    content_type=st.none() | st.sampled_from(["application/json", "application/merge-patch+json"]),
    body=st.binary(max_size=500),
)
def test_request_payload_round_trip(
    method: str, path: str, params: dict[str, str], content_type: str | None, body: bytes
) -> None:
    payload = framing.request_payload(method, path, params, content_type, body)
    assert framing.parse_request(payload) == (
        method,
        path,
        list(params.items()),
        content_type,
        body,
    )


@given(status=st.integers(100, 599), body=st.binary(max_size=200))
def test_status_round_trip(status: int, body: bytes) -> None:
    assert framing.parse_status(framing.status_payload(status, body)) == (status, body)


def test_a_frame_over_the_limit_is_refused_before_it_is_buffered() -> None:
    reader = framing.FrameReader(max_frame=1024)
    with pytest.raises(framing.ProtocolError, match="exceeds 1024"):
        reader.feed(framing.HEADER.pack(1025, 1, framing.RESPONSE))


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(framing.ProtocolError, match="unknown frame kind 99"):
        framing.FrameReader().feed(framing.HEADER.pack(0, 1, 99))


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"\x01", "shorter than its header length"),
        (framing.U32.pack(50) + b"[]", "header longer than its payload"),
        (framing.U32.pack(2) + b"{}", "malformed request header"),
        (framing.U32.pack(16) + b'[1,"/p",[],null]', "method and path must be strings"),
    ],
)
def test_malformed_request_payloads_say_what_is_wrong(payload: bytes, message: str) -> None:
    with pytest.raises(framing.ProtocolError, match=message):
        framing.parse_request(payload)
