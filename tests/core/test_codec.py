"""The wire codec: round trips for every registered type, and nothing but DecodeError on junk."""

from __future__ import annotations

import contextlib
import enum
import struct
import typing
from dataclasses import dataclass, fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ringcast.protocols.registry as registry
from ringcast.core import codec
from ringcast.core.codec import DecodeError, EncodeError, decode, encode, wire

registry.names()  # import every built-in protocol so their messages are registered


class Color(enum.IntEnum):
    RED = 1
    BLUE = 2


@wire(0xFF01)
@dataclass(frozen=True, slots=True)
class Inner:
    a: int
    b: str


@wire(0xFF02)
@dataclass(frozen=True, slots=True)
class Everything:
    i: int
    flag: bool
    x: float
    s: str
    raw: bytes
    color: Color
    inner: Inner
    items: tuple[Inner, ...]
    names: tuple[str, ...]
    maybe: int | None
    anything: object


_HOSTILE = st.sampled_from(
    [
        *(2**63, -(2**63) - 1, 2**64, True, 1.5, None, Color.BLUE),
        *("x", "é", "\ud800", b"x", bytearray(b"ab"), memoryview(b"abc"), [1], (1,), ()),
        *(object(), Inner(1, "x"), Inner(2**63, "")),
    ]
)
"""Values a field may hold against its annotation: some the encoder takes all the same (a
bool for an int, a bytearray for bytes), most it refuses with EncodeError or another error."""


def _strategy_for(tp: typing.Any, hostile: bool = False) -> st.SearchStrategy[typing.Any]:
    """Values of type ``tp``; with ``hostile``, any value in it may be one of ``_HOSTILE``."""
    if hostile:
        return _strategy_for(tp) | _HOSTILE if tp not in codec._CODECS else _hostile_message(tp)
    if tp is object:
        return st.builds(Inner, st.integers(-(2**63), 2**63 - 1), st.text(max_size=5))
    if tp is int:
        return st.integers(-(2**63), 2**63 - 1)
    if tp is bool:
        return st.booleans()
    if tp is float:
        return st.floats(allow_nan=False)
    if tp is str:
        return st.text(max_size=20)
    if tp is bytes:
        return st.binary(max_size=40)
    if isinstance(tp, type) and issubclass(tp, enum.IntEnum):
        return st.sampled_from(list(tp))
    if isinstance(tp, type) and tp in codec._CODECS:
        hints = typing.get_type_hints(tp)
        return st.builds(tp, *[_strategy_for(hints[f.name]) for f in fields(tp)])
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is tuple:
        return st.lists(_strategy_for(args[0]), max_size=4).map(tuple)
    if type(None) in args:
        inner = args[0] if args[1] is type(None) else args[1]
        return st.none() | _strategy_for(inner)
    raise AssertionError(f"no strategy for {tp!r}")


def _hostile_message(cls: type) -> st.SearchStrategy[typing.Any]:
    hints = typing.get_type_hints(cls)
    fields_ = [_strategy_for(hints[f.name], hostile=True) for f in fields(cls)]
    return st.builds(cls, *fields_) | _HOSTILE


ALL_TYPES = sorted(codec.registered_types().items())


@pytest.mark.parametrize("type_id,cls", ALL_TYPES, ids=[c.__name__ for _, c in ALL_TYPES])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_round_trip_every_registered_type(type_id: int, cls: type, data: st.DataObject) -> None:
    msg = data.draw(_strategy_for(cls))
    sender = data.draw(st.text(min_size=1, max_size=10).filter(lambda s: len(s.encode()) < 256))
    cluster = data.draw(st.integers(0, 2**32 - 1))
    frame = decode(encode(msg, sender=sender, cluster_id=cluster))
    assert frame.msg == msg
    assert frame.msg_type == type_id
    assert frame.sender == sender
    assert frame.cluster_id == cluster


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_only_raise_decode_error(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        decode(data)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_truncated_and_corrupted_frames_only_raise_decode_error(data: st.DataObject) -> None:
    msg = data.draw(_strategy_for(Everything))
    raw = encode(msg, sender="node-1", cluster_id=7)
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(DecodeError):
        decode(raw[:cut])
    pos = data.draw(st.integers(0, len(raw) - 1))
    flipped = bytearray(raw)
    flipped[pos] ^= data.draw(st.integers(1, 255))
    with contextlib.suppress(DecodeError):
        decode(bytes(flipped))


def test_header_errors_name_the_problem() -> None:
    good = encode(Inner(1, "x"), sender="A")
    with pytest.raises(DecodeError, match="magic"):
        decode(b"XX" + good[2:])
    with pytest.raises(DecodeError, match="version"):
        decode(good[:2] + b"\x09" + good[3:])
    with pytest.raises(DecodeError, match=r"unknown message type"):
        decode(good[:3] + struct.pack("!H", 0xFFFE) + good[5:])
    with pytest.raises(DecodeError, match=r"trailing|length"):
        decode(good + b"\x00")
    with pytest.raises(DecodeError, match="shorter"):
        decode(b"RC")


def test_huge_counts_are_refused_without_allocating() -> None:
    # A tuple count of 2**32-1 in a short frame must fail fast as truncated.
    body = struct.pack("!q", 1) + b"\x01" + struct.pack("!d", 0.0)
    body += struct.pack("!I", 0) + struct.pack("!I", 0) + struct.pack("!q", 1)
    body += struct.pack("!q", 0) + struct.pack("!I", 0)
    body += struct.pack("!I", 0xFFFFFFFF)
    head = struct.pack("!2sBHIB", b"RC", 1, 0xFF02, 0, 1) + b"A" + struct.pack("!I", len(body))
    with pytest.raises(DecodeError, match="truncated"):
        decode(head + body)


def test_encode_rejects_unregistered_and_out_of_range() -> None:
    with pytest.raises(EncodeError, match="not a registered"):
        encode(object(), sender="A")
    with pytest.raises(EncodeError, match="out of 64-bit range"):
        encode(Inner(2**70, "x"), sender="A")


def test_type_id_collision_is_refused() -> None:
    with pytest.raises(ValueError, match="already used"):

        @wire(0xFF01)
        @dataclass(frozen=True)
        class Clash:
            a: int


def _calls_other_codecs(fn: typing.Any) -> list[str]:
    """The names in a generated function bound to another message's codec wrapper."""
    return [n for n in fn.__code__.co_names if hasattr(fn.__globals__.get(n), "generic")]


def test_nested_messages_are_written_inline_and_take_the_fast_path() -> None:
    """A Totem frame (ring id and chunks nested) and its recovery wrapper (a whole frame
    nested) are encoded and decoded by one generated function each, calling no other
    message's codec, and without falling back to the generic path."""
    from ringcast.protocols.totem._messages import Chunk, Mcast, RecoveryMcast, RingId

    frame = Mcast(RingId(7, "n1"), 42, "n2", True, (Chunk("n2:1", b"x" * 100), Chunk("n2:2", b"")))
    for msg in (frame, RecoveryMcast(RingId(8, "n1"), 3, "n1", frame)):
        _, enc, dec = codec._CODECS[type(msg)]
        assert _calls_other_codecs(enc.fast) == [] and _calls_other_codecs(dec.fast) == []
        out: list[bytes] = []
        enc.fast(msg, out)  # raises if the generated code cannot take it
        body = b"".join(out)
        assert dec.fast(memoryview(body), 0) == (msg, len(body))


@pytest.mark.parametrize("type_id,cls", ALL_TYPES, ids=[c.__name__ for _, c in ALL_TYPES])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_generated_codec_matches_the_generic_one(
    type_id: int, cls: type, data: st.DataObject
) -> None:
    _, enc, dec = codec._CODECS[cls]
    if not hasattr(enc, "generic"):
        pytest.skip("generated codecs are switched off")
    msg = data.draw(_strategy_for(cls))
    fast: list[bytes] = []
    slow: list[bytes] = []
    enc(msg, fast)
    enc.generic(msg, slow)
    body = b"".join(fast)
    assert body == b"".join(slow)
    buf = memoryview(body)
    assert dec(buf, 0) == dec.generic(buf, 0) == (msg, len(body))
    # Truncated bodies: both paths refuse them the same way.
    cut = data.draw(st.integers(0, max(len(body) - 1, 0)))
    for path in (dec, dec.generic):
        try:
            got = path(memoryview(body[:cut]), 0)
        except (DecodeError, ValueError, TypeError, struct.error):
            continue
        assert got[1] <= cut


def _outcome(fn: typing.Callable[[typing.Any], int], msg: typing.Any) -> object:
    """What ``fn(msg)`` gives: its value, or the type and text of what it raises."""
    try:
        return fn(msg)
    except Exception as e:
        return type(e), str(e)


@pytest.mark.parametrize("type_id,cls", ALL_TYPES, ids=[c.__name__ for _, c in ALL_TYPES])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_encoded_size_is_the_body_length(type_id: int, cls: type, data: st.DataObject) -> None:
    msg = data.draw(_strategy_for(cls))
    size = len(codec.encode_body(msg))
    assert codec.encoded_size(msg) == size
    if codec.FAST_CODECS:  # the generated size function counts a well-formed message itself
        assert codec._SIZES[cls](msg) == size


@pytest.mark.parametrize("type_id,cls", ALL_TYPES, ids=[c.__name__ for _, c in ALL_TYPES])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_encoded_size_of_any_field_values_is_what_encoding_gives(
    type_id: int, cls: type, data: st.DataObject
) -> None:
    """Whatever a message's fields hold, the size is the body's length when it encodes,
    and the same error is raised when it does not (the simulator counts 0 bytes for a
    message that raises EncodeError)."""
    msg = data.draw(_strategy_for(cls, hostile=True))
    assert _outcome(codec.encoded_size, msg) == _outcome(lambda m: len(codec.encode_body(m)), msg)


def test_encoded_size_edge_cases() -> None:
    for msg in (
        Inner(2**63 - 1, "é"),  # the largest int; two bytes of UTF-8
        Inner(True, "x"),  # type: ignore[arg-type]  # a bool for an int encodes as 1
        Inner(Color.RED, "x"),  # type: ignore[arg-type]
    ):
        assert codec.encoded_size(msg) == len(codec.encode_body(msg))
    for bad in (Inner(2**63, "x"), Inner(-(2**63) - 1, "x"), Inner(1, 2), object()):  # type: ignore[arg-type]
        with pytest.raises(EncodeError):
            codec.encoded_size(bad)
    with pytest.raises(UnicodeEncodeError):  # as encode_body: not an EncodeError
        codec.encoded_size(Inner(1, "\ud800"))
