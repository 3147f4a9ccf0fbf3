from __future__ import annotations

from pathlib import Path

from ringcast.runtime.storage import Reservation, StateStore


def test_store_roundtrip(tmp_path: Path) -> None:
    s = StateStore(tmp_path / "st")
    s.put("rt.incarnation", b"3")
    s.put("a/b c", b"\x00\x01")
    s.put("rt.incarnation", b"4")
    again = StateStore(tmp_path / "st")
    assert again.load() == {"rt.incarnation": b"4", "a/b c": b"\x00\x01"}
    assert not [p for p in (tmp_path / "st").iterdir() if p.name.startswith(".tmp")]


def test_reservation_never_repeats_across_restarts(tmp_path: Path) -> None:
    store = StateStore(tmp_path, fsync=False)
    r = Reservation(store, "c", block=10, floor=1)
    first = [r.take() for _ in range(25)]
    assert first == list(range(1, 26))
    # A "crash": a new incarnation starts beyond anything the old one could have used.
    r2 = Reservation(StateStore(tmp_path, fsync=False), "c", block=10)
    assert r2.take() > max(first)
