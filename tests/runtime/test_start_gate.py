"""The start gate of ``cluster up`` and the judgement of a cluster's views, without
processes: a node waits at the gate until it opens and joins at the instant it names;
``judge`` counts the views before and after a kill."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from ringcast.runtime.node import pass_start_gate
from ringcast.runtime.steady import Installed, judge


def test_a_node_waits_at_the_gate_until_it_opens(tmp_path: Path) -> None:
    gate = tmp_path / "gate"

    async def go() -> int:
        task = asyncio.create_task(pass_start_gate(gate, "n1", poll=0.001))
        while not (gate / "n1.armed").exists():
            await asyncio.sleep(0)  # yield to the node: nothing timed
        assert json.loads((gate / "n1.armed").read_text())["pid"] > 0
        assert not task.done()  # armed, not through
        at = time.monotonic_ns() + 20_000_000
        (gate / "start").write_text(json.dumps({"start_ns": at}))
        await task
        return at

    at = asyncio.run(go())
    assert time.monotonic_ns() >= at  # not through before the instant named


def _v(node: str, t: int, view: str, *members: str) -> Installed:
    return Installed(node, t, view, frozenset(members))


def test_judge_counts_views_before_and_after_the_kill() -> None:
    nodes = ["n1", "n2", "n3"]
    steady = {
        "n1": [_v("n1", 1, "a", *nodes), _v("n1", 90, "b", "n1", "n2")],
        "n2": [_v("n2", 2, "a", *nodes), _v("n2", 91, "b", "n1", "n2")],
        "n3": [_v("n3", 1, "a", *nodes)],
    }
    v = judge(steady, nodes, 50, "n3")
    assert v.formed and v.settled and v.extra_at_start == 0 and v.extra_after == 0
    # Totem's start on processes started one by one: {n1,n2} first, then all three
    staged = dict(steady, n1=[_v("n1", 0, "x", "n1", "n2"), *steady["n1"]])
    assert judge(staged, nodes, 50, "n3").extra_at_start == 1
    # a second view of the same survivors after the crash's (Raincore under load)
    again = dict(steady, n2=[*steady["n2"], _v("n2", 99, "c", "n1", "n2")])
    v = judge(again, nodes, 50, "n3")
    assert v.extra_after == 1 and not v.settled  # n1's b and n2's c are not one view
    # a killed node whose trace was lost with it is judged on the others
    lost = {n: vs for n, vs in steady.items() if n != "n3"}
    assert judge(lost, nodes, 50, "n3").formed
    # never formed: a node's last view before the kill lacks a member
    split = dict(steady, n2=[_v("n2", 2, "s", "n2")])
    assert not judge(split, nodes, 50, "n3").formed


def test_judge_ignores_the_views_of_the_stop() -> None:
    nodes = ["n1", "n2"]
    views = {
        "n1": [_v("n1", 1, "a", *nodes)],
        "n2": [_v("n2", 1, "a", *nodes), _v("n2", 100, "z", "n2")],  # n1 left first
    }
    assert judge(views, nodes, None, None).extra_at_start == 1
    assert judge(views, nodes, None, None, until=90).extra_at_start == 0
