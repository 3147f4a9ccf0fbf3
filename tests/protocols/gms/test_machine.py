"""GMS units: the docs' diagrams, settings, bad input and hostile messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from ringcast.core.effects import InstallView, Record
from ringcast.core.events import Received, Start, Submit, TimerFired
from ringcast.core.machine import MachineContext
from ringcast.protocols.gms import SPEC, render_mermaid
from ringcast.protocols.gms import _messages as M
from ringcast.protocols.gms._state import TABLES
from ringcast.protocols.gms.machine import GmsMachine, parse_injected

DOC = Path(__file__).resolve().parents[3] / "docs" / "protocols" / "gms.md"


def test_doc_contains_exactly_the_rendered_diagrams() -> None:
    text = DOC.read_text()
    rendered = render_mermaid()
    assert text.count("```mermaid") == len(rendered) == 4
    for diagram in rendered.values():
        assert f"```mermaid\n{diagram}```" in text


def _machine(node: str = "A", **settings: object) -> GmsMachine:
    s = SPEC.resolve_settings(settings)
    return GmsMachine(MachineContext(node, ("A", "B", "C"), ("A", "B", "C")), s)


def test_bad_mode_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="view_install: 'paxos' is not one of"):
        _machine(view_install="paxos")


def test_bad_injected_view_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"inject_views\[0\].*counter"):
        parse_injected("A@B=B,A", "A")
    assert parse_injected("A@B:5=B,A,C; B@C:5=C,A,B", "B").members == ("C", "A", "B")


def test_every_state_has_a_table() -> None:
    for state, table in TABLES.items():
        assert state in table.states


HOSTILE = [
    M.ViewMsg("nonsense", ("A", "B")),
    M.ViewMsg("B:x", ("A",)),
    M.ViewMsg("B:9", ()),
    M.ViewMsg("B:9", ("B", "B")),
    M.ViewMsg("B:9", ("B", "has space")),
    M.PrepareView("B:9", ("B", "C")),  # does not list this node
    M.CommitView("", ("A",)),
    M.StatusView("A:-1", ("A",)),
    M.JoinRsp("B:1", ("B",)),
    M.Suspect(""),
    M.MergeInfo("A", "A"),
    M.MergeReq("x"),
    M.MergeRsp("A:1", "zz", ("A",)),
    M.Msg("A:1", 0, "B:1", b"", "fifo"),
    M.Msg("A:1", 1, "B:1", b"", "chaos"),
    M.XmitReq("A:1", 5, 1),
    M.XmitReq("A:1", 1, 10**9),
    M.Stable("A:1", ("A", "B", "C"), 3, (1,)),
    M.Stable("??", ("A",), 3, (1,)),
    M.FindMbrsRsp("", "A:1"),
    M.Join(-1),
    M.Join("x"),  # type: ignore[arg-type]
    "not a message at all",
    3.5,
]


@pytest.mark.parametrize("mode", ["plain", "acks", "two_phase"])
def test_malformed_or_foreign_messages_are_dropped_never_crash(mode: str) -> None:
    m = _machine("A", view_install=mode)
    out = m.handle(Start(), 0)
    assert any(isinstance(e, InstallView) for e in out)
    before = (m.state, m.view, m.prepared)
    for i, msg in enumerate(HOSTILE):
        out = m.handle(Received("B", msg), 1000 + i)
        assert not any(isinstance(e, InstallView) for e in out), msg
        assert not [e for e in out if isinstance(e, Record) and e.kind == "invariant"], msg
    assert (m.state, m.view, m.prepared) == before
    assert m.dropped >= 15
    # and it still works
    out = m.handle(Submit("A:1", b"x", "fifo"), 10_000)
    assert any(type(e).__name__ == "Deliver" for e in out)


def _restarted(node: str = "A", counter: int = 5) -> GmsMachine:
    """``node`` restarting: its earlier incarnation booted once and saw counter 5."""
    s = SPEC.resolve_settings({})
    storage = {"gms.boots": b"1", "gms.counter": str(counter).encode()}
    ctx = MachineContext(node, ("A", "B", "C"), ("A", "B", "C"), storage=storage)
    return GmsMachine(ctx, s)


def test_a_restarted_node_never_installs_a_view_of_its_earlier_incarnation() -> None:
    m = _restarted()
    out = m.handle(Start(), 0)
    assert [e.msg for e in out if type(e).__name__ == "Multicast"] == [M.FindMbrs(True)]
    m.handle(Received("B", M.FindMbrsRsp("B", "B:5")), 1)
    out = m.handle(TimerFired("gms:discovery"), 30_000_000)
    assert [(e.dst, e.msg) for e in out if type(e).__name__ == "Send"] == [("B", M.Join(5))]
    # a view its earlier incarnation may have installed: refused, in every form
    for msg in (M.CommitView("B:5", ("B", "A", "C")), M.PrepareView("B:4", ("B", "A"))):
        out = m.handle(Received("B", msg), 40_000_000)
        assert not any(isinstance(e, InstallView) for e in out)
    out = m.handle(Received("B", M.JoinRsp("B:5", ("B", "C", "A"))), 41_000_000)
    assert not any(isinstance(e, InstallView) for e in out)
    assert any(isinstance(e, Record) and e.kind == "drop" for e in out)
    out = m.handle(Received("B", M.JoinRsp("B:6", ("B", "C", "A"))), 42_000_000)
    assert [e.view.view_id for e in out if isinstance(e, InstallView)] == ["B:6"]


def test_the_view_that_admits_a_restarted_joiner_is_above_its_floor() -> None:
    m = _machine("A")
    m.handle(Start(), 0)
    out = m.handle(Received("D", M.Join(9)), 1_000_000)
    casts = [e for e in out if isinstance(e, Record) and e.kind == "cast_view"]
    assert [c.fields["view"] for c in casts] == ["A:10"]


def test_find_mbrs_from_a_restarted_member_suspects_its_previous_incarnation() -> None:
    m = _machine("A")
    m.handle(Start(), 0)
    out = m.handle(Received("C", M.FindMbrs(False)), 1_000_000)
    assert not [e for e in out if isinstance(e, Record) and e.kind == "cast_view"]
    out = m.handle(Received("C", M.FindMbrs(True)), 2_000_000)
    kinds = [e.kind for e in out if isinstance(e, Record)]
    assert kinds[:2] == ["restarted", "cast_view"]
    cast = next(e for e in out if isinstance(e, Record) and e.kind == "cast_view")
    assert cast.fields["members"] == ["A", "B"]
