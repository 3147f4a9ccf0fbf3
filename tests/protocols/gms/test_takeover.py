"""two_phase takeover (JGRP-136, "Two-Phase View installation"): when the coordinator
is suspected during an installation, the second in line takes it over and restarts
the first phase (it prepared a view the coordinator never committed) or the second
(it committed the coordinator's last view, which others may only have prepared).

Machines are driven by hand, message by message, so that each test shows exactly the
step the behaviour takes and what is lost without it."""

from __future__ import annotations

from typing import Any

from ringcast.core.effects import InstallView, Record, Send
from ringcast.core.events import Received, Start
from ringcast.core.machine import MachineContext
from ringcast.protocols.gms import SPEC
from ringcast.protocols.gms import _messages as M
from ringcast.protocols.gms.machine import GmsMachine

MS = 1_000_000
ABC = ("A", "B", "C")
JOINED = ("A", "B", "C", "D")  # A:2, the view admitting D, that A was installing


def _member(node: str) -> GmsMachine:
    ctx = MachineContext(node, ABC, ("A", "B", "C", "D"))
    m = GmsMachine(ctx, SPEC.resolve_settings({}))
    m.handle(Start(), 0)
    return m


def _sends(out: list[Any], kind: type) -> list[tuple[str, Any]]:
    return [(e.dst, e.msg) for e in out if isinstance(e, Send) and isinstance(e.msg, kind)]


def _installs(out: list[Any]) -> list[str]:
    return [e.view.view_id for e in out if isinstance(e, InstallView)]


def _records(out: list[Any], kind: str) -> list[Record]:
    return [e for e in out if isinstance(e, Record) and e.kind == kind]


def test_a_takeover_restarts_the_first_phase_of_the_view_it_prepared() -> None:
    """A prepared A:2 = {A, B, C, D} (D joining), collected the acks and was gone before
    committing it. B, next in line, takes over with that view less A: D is in it. (Had
    B cast its own view less A, {B, C}, D's join would be lost: D waits for A:2's
    commit, which never comes, and joins again from scratch.)"""
    b, c = _member("B"), _member("C")
    for m in (b, c):
        out = m.handle(Received("A", M.PrepareView("A:2", JOINED)), 10 * MS)
        assert _sends(out, M.ViewAck) == [("A", M.ViewAck("A:2"))]
    out = b.handle(Received("C", M.Suspect("A")), 20 * MS)
    (takeover,) = _records(out, "takeover")
    assert takeover.fields["view"] == "A:1"
    (cast,) = _records(out, "cast_view")
    assert cast.fields["members"] == ["B", "C", "D"]
    assert cast.fields["view"] == "B:3"  # above the prepared A:2
    assert not _records(out, "recommit")  # nothing was committed: no second phase
    prepares = _sends(out, M.PrepareView)
    assert sorted(dst for dst, _ in prepares) == ["C", "D"]
    # C (which prepared A:2 too) and D acknowledge; B commits B:3 and D is a member
    out = c.handle(Received("B", prepares[0][1]), 21 * MS)
    assert _sends(out, M.ViewAck) == [("B", M.ViewAck("B:3"))]
    b.handle(Received("C", M.ViewAck("B:3")), 22 * MS)
    out = b.handle(Received("D", M.ViewAck("B:3")), 22 * MS)
    assert _installs(out) == ["B:3"]
    assert ("D", M.CommitView("B:3", ("B", "C", "D"))) in _sends(out, M.CommitView)


def test_a_takeover_restarts_the_second_phase_of_the_view_it_committed() -> None:
    """A committed A:2 = {A, B, C, D} and was gone: B got the COMMIT_VIEW, C only
    prepared A:2 (its COMMIT_VIEW lost). B, taking over, first sends COMMIT_VIEW(A:2)
    again to the members it does not suspect, then casts B:3 without A: C installs A:2
    before B:3, as B and D did. (Without the recommit C would go from A:1 to B:3 and
    never install A:2, the view in which B and D delivered A's last messages.)"""
    b, c = _member("B"), _member("C")
    for m in (b, c):
        m.handle(Received("A", M.PrepareView("A:2", JOINED)), 10 * MS)
    assert _installs(b.handle(Received("A", M.CommitView("A:2", JOINED)), 12 * MS)) == ["A:2"]
    out = b.handle(Received("C", M.Suspect("A")), 20 * MS)
    (recommit,) = _records(out, "recommit")
    assert recommit.fields["view"] == "A:2"
    commits = _sends(out, M.CommitView)
    assert sorted(dst for dst, msg in commits if msg.view_id == "A:2") == ["C", "D"]
    (cast,) = _records(out, "cast_view")
    assert (cast.fields["view"], cast.fields["members"]) == ("B:3", ["B", "C", "D"])
    # the recommit reaches C before B:3's first phase: C installs A:2, then prepares B:3
    recommit_to_c = next(msg for dst, msg in commits if dst == "C")
    assert _installs(c.handle(Received("B", recommit_to_c), 21 * MS)) == ["A:2"]
    prepare = next(msg for dst, msg in _sends(out, M.PrepareView) if dst == "C")
    assert _sends(c.handle(Received("B", prepare), 22 * MS), M.ViewAck) == [("B", M.ViewAck("B:3"))]


def test_a_takeover_does_not_carry_on_a_merge_view() -> None:
    """B prepared A's merge view A:2 = {A, B, C, D} (D's subgroup merged into A:1) and A
    was gone before committing it. B takes over with A:1 less A, not with the merge view
    less A: that would merge D with part of A:1, and the merge is A's (its leader gone,
    it is given up). With the merge flag off, the same PREPARE_VIEW is a join of D, which
    B carries on (the first test above)."""
    b, c = _member("B"), _member("C")
    for m in (b, c):
        m.handle(Received("A", M.PrepareView("A:2", JOINED, True)), 10 * MS)
    out = b.handle(Received("C", M.Suspect("A")), 20 * MS)
    (cast,) = _records(out, "cast_view")
    assert cast.fields["members"] == ["B", "C"]
    assert _records(out, "recommit")  # the view it committed, A:1, is sent again
