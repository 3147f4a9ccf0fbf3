"""GMS keeps delivering across a rejoin: submits made while a node is not a member
(booting, rejoining after a restart or an exclusion) wait for its first view instead of
being dropped (docs/protocols/gms.md, "Decisions where JGRP-136 is silent")."""

from __future__ import annotations

import pytest

from ringcast.lab import reference as checks
from ringcast.lab.liveness import delivery_progress

from .harness import MODES, run

REJOIN = "regress_submit_while_rejoining"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_submits_while_rejoining_are_sent_in_the_first_view(mode: str, seed: int) -> None:
    """C restarts at 250 ms and submits while it finds the group again: every message it
    submitted after the restart is delivered by C, A and B (the old code dropped those
    made before C's first view: delivery_progress failed)."""
    rows = run(REJOIN, mode, seed=seed)
    assert checks.safety(rows) == []
    restart = max(r["t"] for r in checks.records(rows, "fault", "C"))
    mine = {r["msg"] for r in rows if r["kind"] == "submit" and r["t"] >= restart}
    first_view = min(r["t"] for r in checks.records(rows, "view", "C") if r["t"] >= restart)
    assert any(r["t"] < first_view for r in rows if r["kind"] == "submit" and r["t"] >= restart)
    for node in "ABC":
        got = {r["msg"] for r in rows if r["kind"] == "deliver" and r["node"] == node}
        assert mine <= got, f"{node} never delivered {sorted(mine - got)}"
    assert delivery_progress(rows) == []
    assert checks.convergence(rows, {"A", "B", "C"}) == []


def test_held_submits_hold_the_host_back_and_go_out_in_submit_order() -> None:
    """Past MAX_HELD submits while not a member the host is held back
    (Backpressure), one more is dropped and recorded; the first view sends them all,
    in submit order, and releases the host."""
    from ringcast.core.effects import Backpressure, Deliver, Record, Send
    from ringcast.core.events import Start, Submit
    from ringcast.core.machine import MachineContext
    from ringcast.protocols.gms import SPEC
    from ringcast.protocols.gms._state import St
    from ringcast.protocols.gms._views import parse_view
    from ringcast.protocols.gms.machine import MAX_HELD, GmsMachine

    ctx = MachineContext("D", ("A", "B", "C", "D"), ("A", "B", "C"), joining=True)
    m = GmsMachine(ctx, SPEC.resolve_settings({}))
    m.handle(Start(), 0)
    assert m.state is St.DISCOVERING
    for k in range(1, MAX_HELD):
        assert m.handle(Submit(f"D:{k}", b"x", "fifo"), k) == []
    assert m.handle(Submit(f"D:{MAX_HELD}", b"x", "fifo"), MAX_HELD) == [Backpressure(True)]
    (drop,) = m.handle(Submit("D:extra", b"x", "fifo"), MAX_HELD + 1)
    assert type(drop) is Record and drop.kind == "drop"
    out: list = []
    m._install(parse_view("A:2", ("A", "B", "C", "D")), out)
    delivered = [e.msg_id for e in out if type(e) is Deliver]
    assert delivered == [f"D:{k}" for k in range(1, MAX_HELD + 1)]
    assert sum(1 for e in out if type(e) is Send and type(e.msg).__name__ == "Msg") == 3 * MAX_HELD
    assert Backpressure(False) in out
    assert m.held == []
