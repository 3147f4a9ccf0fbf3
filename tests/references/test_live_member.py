"""What ``ringcast live --system`` refuses before anything is made, the settling time,
and the settings a reference takes from a scenario (no process is started)."""

from __future__ import annotations

from typing import Any

import pytest

from ringcast.live.settle import settled
from ringcast.live.tools import LiveError
from ringcast.references import corosync
from ringcast.references.live import check, member, systems
from ringcast.sim.scenario import parse_scenario


def _sc(protocol: str = "totem", **extra: Any) -> Any:
    doc: dict[str, Any] = {
        "name": "t",
        "protocol": protocol,
        "nodes": ["A", "B", "C"],
        "duration": "2s",
        "workload": [{"nodes": "all", "rate": 50, "duration": "2s"}],
    }
    doc.update(extra)
    return parse_scenario(doc, "t.toml")


def test_the_systems_are_ringcast_and_the_three_references() -> None:
    assert systems() == ("ringcast", "corosync", "tomcat-tribes", "jgroups")
    with pytest.raises(LiveError, match=r"--system 'zookeeper': expected one of ringcast, "):
        member("zookeeper")


@pytest.mark.parametrize(
    "extra,says",
    [
        ({"network": {"networks": 2}}, r"network.networks = 2: a reference system runs on one"),
        (  # (a family that offers the lock: Raincore)
            {
                "protocol": "raincore",
                "workload": [{"nodes": "all", "kind": "lock", "rate": 5, "duration": "2s"}],
            },
            r"workload\[0\].kind: corosync is given multicast workloads only",
        ),
        (
            {"workload": [{"nodes": "all", "rate": 0, "count": 100}]},
            r"workload\[0\].count: .* when it saturates",
        ),
        (
            {
                "workload": [
                    {"nodes": "all", "rate": 50, "duration": "2s"},
                    {"nodes": ["A"], "rate": 50, "start": "1s", "duration": "1s"},
                ]
            },
            r"node A's workloads start or end apart",
        ),
    ],
)
def test_what_a_reference_cannot_run_is_refused_naming_it(extra: dict, says: str) -> None:
    with pytest.raises(LiveError, match=says) as e:
        check("corosync", _sc(**extra))
    assert str(e.value).startswith("t.toml: ") and "\n" not in str(e.value)


def test_workloads_of_one_window_pass() -> None:
    two = [
        {"nodes": "all", "rate": 50, "duration": "2s"},
        {"nodes": ["A"], "rate": 20, "order": "safe", "duration": "2s"},
    ]
    check("jgroups", _sc(workload=two))


def test_settling_moves_the_schedule_not_the_boot() -> None:
    sc = _sc(nemesis=[{"at": "1s", "action": "crash", "node": "B"}])
    moved = settled(sc, 5_000_000_000)
    assert moved.duration == sc.duration + 5_000_000_000
    assert moved.nemesis[0].at == 6_000_000_000
    assert moved.workloads[0].start == sc.workloads[0].start + 5_000_000_000
    assert settled(sc, 0) is sc
    with pytest.raises(ValueError):
        settled(sc, -1)


def test_corosync_takes_totems_timeouts_from_a_totem_scenario_only() -> None:
    totem = _sc(settings={"token_timeout": "300ms", "consensus_timeout": "360ms"})
    assert corosync.live_settings(totem) == {
        "transport": "udpu",
        "token_ms": 300,
        "consensus_ms": 360,
    }
    gms = parse_scenario({"protocol": "gms", "nodes": ["A", "B"], "duration": "1s"}, "g.toml")
    assert corosync.live_settings(gms)["token_ms"] == 1000  # corosync's own default
