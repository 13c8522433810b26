"""The framed protocol between the scheduler and its API I/O workers (scheduler/client/framing.py).

A byte stream cut anywhere gives back the frames that were written, in order; request payloads
carry method, path, query, content type and body bytes unchanged; garbage is refused with a
ProtocolError rather than read as a huge or unknown frame.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, cast

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


event_text = st.text(max_size=40)


@given(fields=st.lists(event_text, min_size=9, max_size=9))
def test_an_event_survives_its_frame(fields: list[str]) -> None:
    assert list(framing.parse_event(framing.event_payload(fields))) == fields


@given(
    written=st.integers(0, 10_000),
    dropped=st.dictionaries(st.sampled_from(["queue_full", "refused"]), st.integers(1, 99)),
    last=st.none() | event_text,
    requests=st.lists(
        st.tuples(st.none() | st.integers(100, 599), st.floats(0, 60, allow_nan=False))
    ),
)
def test_event_outcomes_survive_their_frame(
    written: int,
    dropped: dict[str, int],
    last: str | None,
    requests: list[tuple[int | None, float]],
) -> None:
    outcomes = framing.EventOutcomes(written, dropped, last, requests)
    assert framing.parse_event_outcomes(framing.event_outcomes_payload(outcomes)) == outcomes


def test_event_configuration_survives_its_frame() -> None:
    config = framing.EventConfig(50.0, 100, 1000, 4, 120.0, 0.5, 5.0, "host-a")
    assert framing.parse_event_config(framing.event_config_payload(config)) == config


@pytest.mark.parametrize(
    ("parse", "payload", "message"),
    [
        (framing.parse_event, b"{", "malformed event"),
        (framing.parse_event, b'["a"]', "event must be a list of 9 items"),
        (framing.parse_event, b'["a","b","c","d","e","f","g","h",1]', "must be a string"),
        (framing.parse_event_config, b"[1,2,3,4,5,6,7,8]", None),
        (framing.parse_event_config, b'["x",2,3,4,5,6,7,"h"]', "malformed event configuration"),
        (framing.parse_event_outcomes, b'[1,{"a":"x"},null,[]]', "malformed event outcomes"),
        (framing.parse_event_outcomes, b"[1,2]", "outcomes must be a list of 4 items"),
    ],
)
def test_malformed_event_frames_are_refused(
    parse: Any, payload: bytes, message: str | None
) -> None:
    if message is None:  # well formed
        parse(payload)
        return
    with pytest.raises(framing.ProtocolError, match=message):
        parse(payload)


class RecordingTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return False


async def test_frames_of_one_loop_iteration_leave_in_one_write_in_order() -> None:
    transport = RecordingTransport()
    writer = framing.FrameWriter(cast(asyncio.Transport, transport))
    writer.send(framing.REQUEST, 1, b"bind")
    writer.send(framing.EVENT, 0, b"event")
    writer.send(framing.CREDIT, 2)
    assert transport.writes == []  # nothing before the loop turns
    await asyncio.sleep(0)
    expected = [
        (framing.REQUEST, 1, b"bind"),
        (framing.EVENT, 0, b"event"),
        (framing.CREDIT, 2, b""),
    ]
    assert len(transport.writes) == 1
    assert list(framing.FrameReader().feed(transport.writes[0])) == expected
    writer.send(framing.CANCEL, 1)
    writer.flush()  # at once, as before closing
    assert len(transport.writes) == 2
    await asyncio.sleep(0)
    assert len(transport.writes) == 2  # the queued callback finds nothing left to write
