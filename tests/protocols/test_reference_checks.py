"""The plain-Python checker's keywords, where the families' traces differ: a node that
starts afresh when it restarts (``per_incarnation``), views compared by members
(``on_members``), a view kept across a restart (``keep_across_restart``), and live
components read from the trace."""

from __future__ import annotations

from typing import Any

from ringcast.lab import reference

Row = dict[str, Any]
_i = iter(range(10**6))


def row(t: int, node: str, kind: str, **fields: Any) -> Row:
    base: Row = {"t": t, "i": next(_i), "node": node, "kind": kind, "msg": None}
    base.update(order=None, view=None, members=None, transitional=None, size=None, detail={})
    base.update(fields)
    return base


def fault(t: int, node: str, action: str, **detail: Any) -> Row:
    return row(t, node, "fault", detail={"action": action, **detail})


def test_a_delivery_repeated_after_a_restart_counts_only_without_per_incarnation() -> None:
    rows = [
        row(0, "A", "submit", msg="A:1", size=10),
        row(1, "B", "deliver", msg="A:1", size=10),
        fault(2, "B", "restart"),
        row(3, "B", "deliver", msg="A:1", size=10),
    ]
    assert reference.integrity(rows) == ["B delivered A:1 twice"]
    assert reference.integrity(rows, per_incarnation=True) == []
    assert reference.fifo(rows) != []
    assert reference.fifo(rows, per_incarnation=True) == []


def test_integrity_holds_the_size_and_the_submit() -> None:
    rows = [row(0, "A", "submit", msg="A:1", size=10), row(1, "B", "deliver", msg="A:1", size=9)]
    assert reference.integrity(rows) == ["B delivered A:1 with 9 bytes, submitted 10"]
    assert reference.integrity([row(1, "B", "deliver", msg="A:2")]) == [
        "B delivered A:2, never submitted"
    ]


def test_view_agreement_compares_members_and_the_transitional_flag() -> None:
    same = [
        row(0, "A", "view", view="1", members=["A", "B"], transitional=False),
        row(0, "B", "view", view="1", members=["A", "B"], transitional=False),
    ]
    assert reference.view_agreement(same) == []
    other = [*same, row(1, "C", "view", view="1", members=["A", "B"], transitional=True)]
    assert len(reference.view_agreement(other)) == 1


def test_convergence_on_members_and_across_a_restart() -> None:
    rows = [
        row(0, "A", "view", view="7", members=["A", "B"]),
        row(0, "B", "view", view="8", members=["B", "A"]),
        fault(5, "B", "restart"),
    ]
    live = {"A", "B"}
    assert reference.convergence(rows, live) != []  # B's view cleared by its restart
    assert reference.convergence(rows, live, keep_across_restart=True) != []  # 7 and 8
    assert reference.convergence(rows, live, on_members=True, keep_across_restart=True) == []


def test_convergence_reads_the_live_components_from_the_trace() -> None:
    rows = [
        fault(0, "A", "partition", groups=[["A"], ["B", "C"]]),
        row(1, "A", "view", view="a", members=["A"]),
        row(1, "B", "view", view="b", members=["B", "C"]),
        row(1, "C", "view", view="b", members=["C", "B"]),
        *(row(2, n, "stats", detail={"state": "up"}) for n in "ABC"),
    ]
    assert reference.live_components(rows) == [{"A"}, {"B", "C"}]
    assert reference.convergence(rows) == []
    rows.append(fault(3, "A", "heal"))
    assert reference.convergence(rows) != []


def test_total_order_finds_two_nodes_that_disagree() -> None:
    rows = [row(0, "A", "submit", msg=m) for m in ("A:1", "A:2")]
    rows += [row(1, "B", "deliver", msg="A:1"), row(2, "B", "deliver", msg="A:2")]
    rows += [row(1, "C", "deliver", msg="A:2"), row(2, "C", "deliver", msg="A:1")]
    assert reference.total_order(rows) == ["B and C disagree on the order at A:1 / A:2"]
