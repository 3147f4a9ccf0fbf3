"""Fuzz the wire decoder with deeply nested and recursive frames: every input is either
decoded or refused with ``DecodeError``, and the work spent on it is bounded by a
constant times its length.

Messages nest through ``object`` fields (a redundant-ring packet carries a single-ring
message, a reliable-unicast frame its payload). A hostile frame can nest them as deep
as its length allows, end in an unknown type, garbage or a truncation, or carry a copy
of a whole frame (itself) where a message should be. A decoder that retries a failed
nested message at every level spends time exponential in the depth: 16 levels froze a
node for half a minute. The budget here is in work, not seconds: the Python and C
function calls one ``decode()`` makes (counted with ``sys.setprofile``), which is
deterministic on any machine.
"""

from __future__ import annotations

import dataclasses
import struct
import sys
import typing
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ringcast.core import codec
from ringcast.core.codec import MAX_NESTING, DecodeError, decode, encode

from .fuzzing import all_wire_types, message_strategy

WORK_PER_BYTE = 3
"""Function calls one decode may make per byte of its input (plus WORK_BASE)."""
WORK_BASE = 400
_U16 = struct.Struct("!H")


def decode_work(data: bytes) -> tuple[int, Any]:
    """The function calls (Python and C) one ``decode(data)`` makes, and what it returned
    (a frame, or the DecodeError raised)."""
    calls = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(count)
    try:
        result: Any = decode(data)
    except DecodeError as e:
        result = e
    finally:
        sys.setprofile(None)
    return calls, result


def assert_within_budget(data: bytes) -> Any:
    work, result = decode_work(data)
    budget = WORK_BASE + WORK_PER_BYTE * len(data)
    assert work <= budget, f"decoding {len(data)} bytes took {work} calls (budget {budget})"
    return result


def carriers() -> list[tuple[type, int]]:
    """Registered messages with an ``object`` field whose other fields are all ints: the
    type and the index of that field (every family's envelopes: ``RrpPacket``, ``RtData``)."""
    out = []
    for cls in all_wire_types():
        hints = typing.get_type_hints(cls)
        kinds = [hints[f.name] for f in dataclasses.fields(cls)]
        if kinds.count(object) == 1 and all(k in (int, object) for k in kinds):
            out.append((cls, kinds.index(object)))
    return out


CARRIERS = carriers()


def nested_frame(chain: list[tuple[type, int]], leaf: bytes, *, sender: str = "A") -> bytes:
    """A frame of ``chain[0]`` carrying ``chain[1]`` ... each in its ``object`` field, the
    last one carrying ``leaf`` (a type id and a body, or anything at all)."""
    body = leaf
    for cls, at in reversed(chain[1:]):
        body = _U16.pack(codec.type_id_of(cls)) + _body(cls, at, body)
    top, at = chain[0]
    body = _body(top, at, body)
    head = codec._HEAD.pack(codec.MAGIC, codec.WIRE_VERSION, codec.type_id_of(top), 0, len(sender))
    return head + sender.encode() + struct.pack("!I", len(body)) + body


def _body(cls: type, at: int, inner: bytes) -> bytes:
    """The body of a carrier whose ``object`` field (index ``at``) holds ``inner``."""
    n = len(dataclasses.fields(cls))
    return (
        struct.pack("!" + "q" * at, *range(1, at + 1))
        + inner
        + struct.pack("!" + "q" * (n - at - 1), *range(n - at - 1))
    )


def test_there_are_carriers_to_nest() -> None:
    names = {c.__name__ for c, _ in CARRIERS}
    assert {"RrpPacket", "RtData"} <= names, names


@pytest.mark.parametrize("depth", [16, 24, 64, 1000])
@pytest.mark.parametrize("leaf", ["unknown", "valid", "truncated"])
def test_deeply_nested_frames_are_refused_within_a_linear_budget(depth: int, leaf: str) -> None:
    rrp = next(c for c in CARRIERS if c[0].__name__ == "RrpPacket")
    tail = {
        "unknown": _U16.pack(0xFFFF),
        "valid": _U16.pack(codec.type_id_of(rrp[0])) + _body(rrp[0], rrp[1], _U16.pack(0xFFFF)),
        "truncated": _U16.pack(codec.type_id_of(rrp[0])) + b"\x00\x00",
    }[leaf]
    frame = nested_frame([rrp] * depth, tail)
    result = assert_within_budget(frame)
    assert isinstance(result, DecodeError)
    assert f"nested more than {MAX_NESTING} deep" in str(result)


def test_nesting_up_to_the_limit_decodes() -> None:
    rrp = next(c for c in CARRIERS if c[0].__name__ == "RrpPacket")
    cls = rrp[0]
    # MAX_NESTING messages inside the top one, each in its container's ``object`` field
    msg: Any = _leaf_message()
    for k in range(MAX_NESTING - 1):
        msg = cls(k, k, msg)
    msg = cls(-1, -1, msg)
    frame = encode(msg, sender="A")
    result = assert_within_budget(frame)
    assert result == codec.Frame(codec.type_id_of(cls), 0, "A", msg)
    too_deep = encode(cls(0, 0, msg), sender="A")
    assert isinstance(assert_within_budget(too_deep), DecodeError)


def _leaf_message() -> Any:
    """A registered message without an ``object`` field (the innermost of a nest)."""
    for cls in all_wire_types():
        if not dataclasses.fields(cls):
            return cls()
    raise AssertionError("no registered message without fields")


def _leaves(messages: st.SearchStrategy[Any]) -> st.SearchStrategy[Callable[[bytes], bytes]]:
    """What the innermost carrier holds, as a function of the whole frame so far (for the
    recursive kind): a valid message, an unknown type, garbage, nothing, or a frame."""
    valid = messages.map(
        lambda m: lambda _f, m=m: _U16.pack(codec.type_id_of(type(m))) + codec.encode_body(m)
    )
    return st.one_of(
        valid,
        st.just(lambda _f: _U16.pack(0xFFFF)),
        st.binary(max_size=40).map(lambda b: lambda _f, b=b: b),
        st.just(lambda _f: b""),
        st.just(lambda f: f),  # a frame where a message should be: itself
        st.just(lambda f: _U16.pack(0x0501) + f),
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_nested_and_recursive_frames_decode_or_refuse_within_budget(data: st.DataObject) -> None:
    chain = data.draw(st.lists(st.sampled_from(CARRIERS), min_size=1, max_size=80))
    leaf = data.draw(_leaves(message_strategy(all_wire_types())))
    inner = nested_frame(chain, b"")
    frame = nested_frame(chain, leaf(inner))
    if data.draw(st.booleans()):  # then corrupt a byte or cut it short
        pos = data.draw(st.integers(0, len(frame) - 1))
        if data.draw(st.booleans()):
            frame = frame[:pos]
        else:
            b = bytearray(frame)
            b[pos] ^= data.draw(st.integers(1, 255))
            frame = bytes(b)
    result = assert_within_budget(frame)
    assert isinstance(result, DecodeError | codec.Frame)
    if len(chain) > MAX_NESTING + 1:
        assert isinstance(result, DecodeError)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=2000))
def test_random_bytes_decode_within_budget(data: bytes) -> None:
    assert_within_budget(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(msg=message_strategy(all_wire_types()))
def test_every_genuine_message_decodes_within_budget(msg: Any) -> None:
    frame = encode(msg, sender="B", cluster_id=3)
    result = assert_within_budget(frame)
    assert isinstance(result, codec.Frame)
    assert encode(result.msg, sender="B", cluster_id=3) == frame  # (NaN != NaN: compare bytes)
