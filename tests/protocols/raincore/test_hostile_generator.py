"""The shared hostile scenario generator (ringcast.sim.hostile): ranges, validity, TOML."""

from __future__ import annotations

import itertools
import tomllib

import pytest

from ringcast.core.units import MS
from ringcast.sim import parse_scenario
from ringcast.sim.hostile import HOSTILE, hostile_scenario

TT = 120 * MS


@pytest.mark.parametrize("protocol", ["raincore", "totem"])
def test_hostile_runs_are_valid_harsh_and_round_trip_through_toml(protocol: str) -> None:
    kinds: set[str] = set()
    three_way = False
    for seed in range(60):
        run = hostile_scenario(seed, protocol, token_timeout=TT)
        sc = run.scenario
        net = sc.network
        assert HOSTILE.nodes[0] <= len(sc.nodes) <= HOSTILE.nodes[1]
        assert HOSTILE.loss[0] <= net.loss <= HOSTILE.loss[1]
        assert 0 <= net.duplication <= HOSTILE.duplication[1]
        assert 0 <= net.reorder <= HOSTILE.reorder[1]
        assert all(rule.loss is not None and rule.loss >= net.loss for rule in net.links)
        assert 2 <= len(run.episodes) <= 7
        kinds |= {a.action for a in sc.nemesis}
        three_way |= any(len(a.groups) == 3 for a in sc.nemesis)
        # at least a majority is up at the end, and the run ends quiet
        assert 2 * len(run.live) > len(sc.nodes)
        assert sc.duration - run.quiet_from >= 10 * TT
        assert all(a.at <= run.quiet_from for a in sc.nemesis)
        again = parse_scenario(tomllib.loads(run.toml()), "again")
        assert (again.nemesis, again.network, again.settings, again.workloads) == (
            sc.nemesis,
            sc.network,
            sc.settings,
            sc.workloads,
        )
        assert hostile_scenario(seed, protocol, token_timeout=TT).doc == run.doc
    assert {"crash", "restart", "pause", "resume", "partition", "heal"} <= kinds
    assert three_way


def test_flapping_partitions_are_recut_every_token_timeout() -> None:
    found = 0
    for seed in range(80):
        run = hostile_scenario(seed, "raincore", token_timeout=TT)
        cuts = [a.at for a in run.scenario.nemesis if a.action == "partition"]
        found += any(b - a == TT for a, b in itertools.pairwise(cuts))
    assert found >= 5


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="token_timeout"):
        hostile_scenario(1, "raincore", token_timeout=0)
    for nodes in (0, 101):  # 1 to 100 members, named A to Z, then N26 to N99
        with pytest.raises(ValueError, match="nodes must be between 1 and 100"):
            hostile_scenario(1, "raincore", token_timeout=TT, nodes=nodes)
    names = hostile_scenario(1, "raincore", token_timeout=TT, nodes=28).doc["nodes"]
    assert names[:3] == ["A", "B", "C"] and names[-3:] == ["Z", "N26", "N27"]
    with pytest.raises(ValueError):
        hostile_scenario(1, "nosuchprotocol", token_timeout=TT)
