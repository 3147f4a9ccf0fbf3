"""Raincore across a restart within the Transport Manager's retry window
(docs/protocols/raincore.md, decision 34), and across a stall of the next node
(decision 37).

B's acknowledgements to A are cut at 500 ms; B takes the token A sent it at 499.9 ms,
delivers what it carries, persists, and crashes at 501.5 ms while eating; it restarts
10 ms later (Starving, with its stable storage) and the cut heals 5 ms after that. A's
Transport Manager is still retransmitting the token to B's first boot.

Raincore itself never delivered twice here: its duplicate filter is persisted with each
delivery, and the token the first boot had taken is dropped by the second as a
sequence-number mis-match. But the token was then lost: the ring stood still until a
hungry timeout and a 911 regenerated it (A's first delivery after the crash at
677.9 ms). Now the Transport Manager refuses, at B's second boot, the token meant for
its first, A is told of a failure-on-delivery at once and passes the token to C
without B (the Raincore paper's "failure-on-delivery": the next node is dropped), and B rejoins
by its 911.
"""

from __future__ import annotations

from typing import Any

import pytest

from ringcast.lab import reference as checks
from ringcast.sim import Simulation, parse_scenario

from .hostile import safety

MS = 1_000_000
RESTART = 511_500_000
HUNGRY = 150 * MS


def _rows(**settings: Any) -> list[dict[str, Any]]:
    doc = {
        "name": "raincore_restart_in_the_retry_window",
        "protocol": "raincore",
        "nodes": ["A", "B", "C"],
        "duration": "2s",
        "settings": {
            "eating_timeout": "5ms",
            "hungry_timeout": "150ms",
            "starving_timeout": "50ms",
            "rto": "10ms",
            "max_tries": 6,
            **settings,
        },
        "network": {"latency": {"dist": "uniform", "low": "300us", "high": "1500us"}},
        "workload": [
            {
                "nodes": "all",
                "kind": "multicast",
                "rate": 300,
                "size": 8,
                "order": "agreed",
                "start": "50ms",
                "duration": "1800ms",
            }
        ],
        "nemesis": [
            {"at": "500ms", "action": "cut", "from": ["B"], "to": ["A"]},
            {"at": "501500us", "action": "crash", "node": "B"},
            {"at": "511500us", "action": "restart", "node": "B"},
            {"at": "516500us", "action": "heal"},
        ],
    }
    return Simulation(parse_scenario(doc), 1).run().events()


@pytest.mark.parametrize("confirmations", [0, 1])
def test_the_token_meant_for_an_earlier_boot_comes_back_to_its_sender(confirmations: int) -> None:
    """The same with decision 37's confirmation: a next node that answered as a later
    incarnation is not sent the token again (it restarted, it is not stalled)."""
    rows = _rows(token_confirmations=confirmations)
    assert not [r for r in rows if r["kind"] == "token" and r["detail"].get("op") == "confirm"]
    assert safety(rows, 2_000 * MS) == {}
    first_boot = [
        r for r in rows if r["node"] == "B" and r["kind"] == "deliver" and r["t"] < RESTART
    ]
    assert first_boot[-1]["t"] > 500 * MS  # B delivered from the token before it crashed
    refused = [
        r
        for r in rows
        if r["node"] == "B"
        and r["kind"] == "drop"
        and r["detail"].get("reason") == "for_an_earlier_incarnation"
    ]
    assert refused and all(r["t"] > RESTART for r in refused)
    returned = [
        r
        for r in rows
        if r["node"] == "A" and r["kind"] == "token" and r["detail"].get("op") == "returned"
    ]
    assert [r["detail"]["dst"] for r in returned][:1] == ["B"]
    # The ring goes on without waiting for a hungry timeout and a 911 ...
    resumed = min(
        r["t"] for r in rows if r["node"] == "A" and r["kind"] == "deliver" and r["t"] > RESTART
    )
    assert resumed < RESTART + HUNGRY
    # ... and B is back: every node's last committed view is the three of them.
    assert (
        checks.convergence(rows, {"A", "B", "C"}, on_members=True, keep_across_restart=True) == []
    )


# -- decision 37: a next node kept off the CPU is sent the token again before it is cut


def _stall(action: list[dict[str, Any]], confirmations: int) -> list[dict[str, Any]]:
    """Three nodes with the default settings (the transport gives up after 190 ms); at
    996 ms A holds the token and is about to pass it to B (it does at 999.5 ms)."""
    doc = {
        "protocol": "raincore",
        "nodes": ["A", "B", "C"],
        "duration": "2s",
        "network": {"latency": "100us"},
        "settings": {"token_confirmations": confirmations},
        "nemesis": action,
    }
    return Simulation(parse_scenario(doc), 1).run().events()


def _views_after_start(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(r["node"], r["t"]) for r in rows if r["kind"] == "view" and r["t"] > 0]


def test_a_next_node_stalled_past_the_budget_is_confirmed_not_cut() -> None:
    """B stopped for 300 ms (a process off the CPU; its arrivals and timers wait): without
    the confirmation A cuts it after 190 ms and it rejoins (five views); with it A sends
    the token to B once more, B answers when it runs again, and no view changes. A crash
    of B gives one view at each survivor either way, 190 ms later with it."""
    pause = [
        {"at": "996ms", "action": "pause", "node": "B"},
        {"at": "1296ms", "action": "resume", "node": "B"},
    ]
    assert len(_views_after_start(_stall(pause, 0))) == 5
    rows = _stall(pause, 1)
    assert _views_after_start(rows) == []
    (confirm,) = [r for r in rows if r["kind"] == "token" and r["detail"].get("op") == "confirm"]
    assert confirm["node"] == "A" and confirm["detail"]["dst"] == "B"
    assert safety(rows, 2_000 * MS) == {}
    crash = [{"at": "996ms", "action": "crash", "node": "B"}]
    before, now = _stall(crash, 0), _stall(crash, 1)
    assert [n for n, _ in _views_after_start(before)] == ["A", "C"]
    assert [n for n, _ in _views_after_start(now)] == ["A", "C"]
    assert 180 * MS < _views_after_start(now)[0][1] - _views_after_start(before)[0][1] < 200 * MS
