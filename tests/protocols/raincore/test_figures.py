"""The Raincore paper's worked examples, Figures 12-14, replayed in the simulator.

Each node's history is the (localView, view state, lastTokenSeq) of its ``state`` trace
events, written as in the figures: ``ACD(r)19``. The mapping of the figures' entries to
nodes is explained in docs/protocols/raincore.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ringcast.lab.reference import global_view_vectors
from ringcast.sim import Simulation, load_scenario

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios" / "raincore"

FIG12 = {
    "A": ["ABCD(a)11", "ABCD(a)15"],
    "B": ["ABCD(a)12"],
    "C": ["ABCD(a)13"],
    "D": ["ABCD(a)14"],
}
FIG13 = {
    "A": [*FIG12["A"], "ACD(c)16", "ACD(r)19", "ACD(a)22", "ACD(a)25"],
    "B": FIG12["B"],
    "C": [*FIG12["C"], "ACD(c)17", "ACD(r)20", "ACD(a)23", "ACD(a)26"],
    "D": [*FIG12["D"], "ACD(c)18", "ACD(r)21", "ACD(a)24"],
}
FIG14 = {
    "A": [*FIG13["A"], "ACBD(c)29", "ACBD(r)33", "ACBD(a)37"],
    "B": [*FIG13["B"], "ABCD(c)13", "ACBD(c)27", "ACBD(r)31", "ACBD(a)35"],
    "C": [*FIG13["C"], "ACBD(c)30", "ACBD(r)34", "ACBD(a)38"],
    "D": [*FIG13["D"], "ACBD(c)28", "ACBD(r)32", "ACBD(a)36"],
}
ABCD, ACD, ACBD = ("A", "B", "C", "D"), ("A", "C", "D"), ("A", "C", "B", "D")


def run(name: str) -> tuple[dict[str, list[str]], dict[str, dict[int, tuple[str, ...]]], list]:
    res = Simulation(load_scenario(SCENARIOS / f"{name}.toml"), seed=1).run()
    hist = {}
    for n in "ABCD":
        hist[n] = [
            f"{''.join(d['local_view'])}({d['view_state'][0]}){d['token_seq']}"
            for d in (e["detail"] for e in res.events(kind="state", node=n))
        ]
    rows = res.events()
    return hist, global_view_vectors(rows), rows


@pytest.mark.parametrize(
    ("name", "expected", "vectors"),
    [
        ("fig12_no_failure", FIG12, {n: {1: ABCD} for n in "ABCD"}),
        (
            "fig13_crash",
            FIG13,
            {
                "A": {1: ABCD, 2: ACD},
                "B": {1: ABCD},
                "C": {1: ABCD, 2: ACD},
                "D": {1: ABCD, 2: ACD},
            },
        ),
        (
            "fig14_recovery",
            FIG14,
            {
                "A": {1: ABCD, 2: ACD, 3: ACBD},
                "B": {1: ABCD, 3: ACBD},
                "C": {1: ABCD, 2: ACD, 3: ACBD},
                "D": {1: ABCD, 2: ACD, 3: ACBD},
            },
        ),
    ],
)
def test_figure_history(name: str, expected: dict, vectors: dict) -> None:
    hist, gv, rows = run(name)
    assert hist == expected
    assert gv == vectors
    assert not [r for r in rows if r["kind"] in ("invariant", "null_commit")]


def test_fig13_a_detects_the_crash_through_the_transport() -> None:
    _, _, rows = run("fig13_crash")
    returned = [r for r in rows if r["kind"] == "token" and r["detail"]["op"] == "returned"]
    assert [(r["node"], r["detail"]["dst"], r["detail"]["seq"]) for r in returned] == [
        ("A", "B", 16)
    ]
    assert not [r for r in rows if r["kind"] == "911"]


def test_fig14_b_rejoins_through_c() -> None:
    _, _, rows = run("fig14_recovery")
    sent = [r for r in rows if r["kind"] == "911" and r["detail"]["op"] == "sent"]
    assert [(r["node"], r["detail"]["dst"], r["detail"]["seq"]) for r in sent] == [("B", "C", 13)]
    joins = [(r["node"], r["detail"]["node"]) for r in rows if r["kind"] == "join_request"]
    assert joins == [("C", "B")]
