"""The load generator's payloads: a payload of any size reads back its submit time, or
None when it is too short to hold it (a scenario's ``size = 8`` keeps only the magic;
a node's latency consumer once failed on it at the end of a live run)."""

from __future__ import annotations

import time

import pytest

from ringcast.runtime.node import load_payload, stamp_of


@pytest.mark.parametrize("size", [0, 1, 8, 15])
def test_a_payload_too_short_for_its_stamp_reads_none(size: int) -> None:
    payload = load_payload(size)
    assert len(payload) == size and stamp_of(payload) is None


@pytest.mark.parametrize("size", [16, 100, 1000])
def test_a_payload_reads_back_its_submit_time(size: int) -> None:
    before = time.monotonic_ns()
    payload = load_payload(size)
    after = time.monotonic_ns()
    sent = stamp_of(payload)
    assert len(payload) == size and sent is not None and before <= sent <= after


def test_an_application_payload_has_no_stamp() -> None:
    assert stamp_of(b"x" * 40) is None
