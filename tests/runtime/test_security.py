from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringcast.runtime.security import (
    REPLAY_WINDOW,
    Dropped,
    KeyFileError,
    Opener,
    Sealer,
    read_key_file,
    write_key_file,
)

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))


@pytest.mark.parametrize("mode", ["hmac", "aes-gcm"])
def test_roundtrip_and_refusals(mode: str) -> None:
    s = Sealer(KEY, mode, 7, "A")
    o = Opener(KEY, mode, 7, ["A", "B"])
    p1 = s.seal(b"frame-1", 100)
    assert o.open(p1) == ("A", b"frame-1")
    if mode == "aes-gcm":
        assert b"frame-1" not in p1  # encrypted
    # replay of the same packet
    with pytest.raises(Dropped, match="replay"):
        o.open(p1)
    # flipped bit anywhere: bad tag (or a header check before it)
    for i in range(len(p1)):
        bad = bytearray(s.seal(b"frame-x", 200 + i))
        bad[i] ^= 0x01
        with pytest.raises(Dropped):
            o.open(bytes(bad))
    # another key
    with pytest.raises(Dropped, match="bad_tag"):
        o.open(Sealer(OTHER_KEY, mode, 7, "A").seal(b"frame", 10_000))
    # another cluster
    with pytest.raises(Dropped, match="foreign_cluster"):
        o.open(Sealer(KEY, mode, 8, "A").seal(b"frame", 10_001))
    # a sender not in the cluster
    with pytest.raises(Dropped, match="unknown_sender"):
        o.open(Sealer(KEY, mode, 7, "Z").seal(b"frame", 1))
    # truncated
    with pytest.raises(Dropped, match="truncated"):
        o.open(p1[:10])
    p2 = s.seal(b"frame-2", 20_000)
    with pytest.raises(Dropped):
        o.open(p2[:-1])
    assert o.open(p2) == ("A", b"frame-2")


def test_mode_mismatch_is_dropped() -> None:
    o = Opener(KEY, "hmac", 7, ["A"])
    with pytest.raises(Dropped, match="bad_mode"):
        o.open(Sealer(KEY, "aes-gcm", 7, "A").seal(b"frame", 1))


def test_mode_none_checks_all_but_a_tag() -> None:
    s = Sealer(KEY, "none", 7, "A")
    o = Opener(OTHER_KEY, "none", 7, ["A", "B"])  # no tag: the key plays no part
    p = s.seal(b"frame-1", 100)
    assert p.endswith(b"frame-1")  # the frame, in clear, and nothing after it
    assert o.open(p) == ("A", b"frame-1")
    with pytest.raises(Dropped, match="replay"):
        o.open(p)
    with pytest.raises(Dropped, match="foreign_cluster"):
        o.open(Sealer(KEY, "none", 8, "A").seal(b"frame", 101))
    with pytest.raises(Dropped, match="unknown_sender"):
        o.open(Sealer(KEY, "none", 7, "Z").seal(b"frame", 1))
    with pytest.raises(Dropped, match="truncated"):
        o.open(p[: len(p) - len(b"frame-1")])  # a header without a body
    with pytest.raises(Dropped, match="bad_mode"):
        Opener(KEY, "hmac", 7, ["A"]).open(s.seal(b"frame", 102))
    with pytest.raises(Dropped, match="bad_mode"):
        o.open(Sealer(KEY, "hmac", 7, "A").seal(b"frame", 103))


def test_replay_window() -> None:
    s = Sealer(KEY, "hmac", 1, "A")
    o = Opener(KEY, "hmac", 1, ["A"])
    old = [s.seal(b"x", n) for n in range(10)]
    o.open(s.seal(b"x", 5 * REPLAY_WINDOW))  # a new incarnation, far ahead
    for p in old:  # an old ring's packets
        with pytest.raises(Dropped, match="replay"):
            o.open(p)
    o.open(s.seal(b"x", 5 * REPLAY_WINDOW - 3))  # reordered but new: accepted once
    with pytest.raises(Dropped, match="replay"):
        o.open(s.seal(b"x", 5 * REPLAY_WINDOW - 3))


@pytest.mark.parametrize("mode", ["hmac", "aes-gcm", "none"])
def test_a_unicast_is_bound_to_its_receiver(mode: str) -> None:
    """A unicast from A to B, captured and resent to C, names B: C refuses it as the
    replay it is; B takes it once. A multicast (no receiver) is taken by each member once."""
    a = Sealer(KEY, mode, 7, "A")
    b, c = (Opener(KEY, mode, 7, ["A", "B", "C"], receiver=n) for n in "BC")
    to_b = a.seal(b"token", 100, "B")
    with pytest.raises(Dropped, match="replay"):
        c.open(to_b)
    assert b.open(to_b) == ("A", b"token")
    with pytest.raises(Dropped, match="replay"):
        b.open(to_b)
    everyone = a.seal(b"frame", 101)
    assert b.open(everyone) == ("A", b"frame") and c.open(everyone) == ("A", b"frame")
    with pytest.raises(Dropped, match="replay"):
        c.open(everyone)
    if mode != "none":  # the receiver is authenticated: rewriting it breaks the tag
        forged = bytearray(a.seal(b"token", 102, "B"))
        at = bytes(forged).index(b"\x01B", 17)
        forged[at + 1] = ord("C")
        with pytest.raises(Dropped, match="bad_tag"):
            c.open(bytes(forged))


def test_a_packet_from_the_receiver_itself_is_dropped_as_own() -> None:
    a = Sealer(KEY, "hmac", 7, "A")
    opener = Opener(KEY, "hmac", 7, ["A", "B"], receiver="A")
    with pytest.raises(Dropped, match="own_packet"):
        opener.open(a.seal(b"looped back", 1))
    with pytest.raises(Dropped, match="own_packet"):
        opener.open(a.seal(b"bounced", 2, "A"))


def test_an_envelope_of_another_version_is_refused_with_what_to_do() -> None:
    packet = bytearray(Sealer(KEY, "hmac", 7, "A").seal(b"frame", 1, "B"))
    packet[2] = 1  # the version before receivers were bound
    with pytest.raises(Dropped, match="version") as e:
        Opener(KEY, "hmac", 7, ["A", "B"], receiver="B").open(bytes(packet))
    assert "version 1" in e.value.detail and "speaks 2" in e.value.detail


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_garbage_only_raises_dropped(data: bytes) -> None:
    o = Opener(KEY, "hmac", 7, ["A"])
    with pytest.raises(Dropped):
        o.open(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=64), st.integers(0, 80), st.binary(max_size=8))
def test_mutated_packets_only_raise_dropped(frame: bytes, cut: int, junk: bytes) -> None:
    packet = Sealer(KEY, "aes-gcm", 7, "A").seal(frame, 99)
    mutated = packet[:cut] + junk + packet[cut + len(junk) :]
    o = Opener(KEY, "aes-gcm", 7, ["A"])
    if mutated == packet:
        assert o.open(mutated) == ("A", frame)
    else:
        with pytest.raises(Dropped):
            o.open(mutated)


def test_key_files(tmp_path: Path) -> None:
    p = write_key_file(tmp_path / "k.key")
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    key = read_key_file(p)
    assert len(key) == 32
    with pytest.raises(KeyFileError, match="exists"):
        write_key_file(p)
    assert read_key_file(write_key_file(p, force=True)) != key
    os.chmod(p, 0o644)
    with pytest.raises(KeyFileError, match="too open"):
        read_key_file(p)
    os.chmod(p, 0o600)
    p.write_text("zz")
    with pytest.raises(KeyFileError, match="hex"):
        read_key_file(p)
    with pytest.raises(KeyFileError, match="no such key file"):
        read_key_file(tmp_path / "missing.key")
