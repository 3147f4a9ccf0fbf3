"""The load generator's payloads (ringcast.runtime.node): a node reads the time back
from its own, whatever the workload's size. A workload of 8-byte messages (the hostile
generator draws such sizes) made every node of a live run exit with a struct.error on
its first own delivery: the payload was the stamp's magic without its time."""

from __future__ import annotations

import time

import pytest

from ringcast.runtime.node import load_payload, load_stamp


@pytest.mark.parametrize("size", [0, 1, 8, 15, 16, 17, 100, 1000])
def test_a_payload_of_any_size_is_read_back_or_ignored(size: int) -> None:
    before = time.monotonic_ns()
    payload = load_payload(size)
    assert len(payload) == size
    stamp = load_stamp(payload)
    if size >= 16:
        assert stamp is not None and stamp >= before
    else:
        assert stamp is None


def test_an_application_payload_is_not_a_stamp() -> None:
    assert load_stamp(b"hello, world, sixteen+") is None
    assert load_stamp(b"") is None
