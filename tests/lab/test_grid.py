"""The parameter grid: resizing keeps a scenario's faults meaningful, and worked examples
that declare themselves fixed run only as they are."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from ringcast.lab.grid import apply_point, is_fixed, parse_sweep
from ringcast.sim import Simulation, parse_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"

PARTITION = """
name = "p"
protocol = "raincore"
nodes = ["A", "B", "C", "D", "E"]
duration = "3s"

[[nemesis]]
at = "1s"
action = "partition"
groups = [["A", "B"], ["C", "D", "E"]]

[[nemesis]]
at = "2s"
action = "heal"
"""


def test_growing_a_partition_adds_the_new_nodes_to_the_largest_group() -> None:
    doc = tomllib.loads(PARTITION)
    grown = apply_point(doc, {"nodes": 7})
    assert grown["nodes"] == list("ABCDEFG")
    assert grown["nemesis"][0]["groups"] == [["A", "B"], ["C", "D", "E", "F", "G"]]
    assert grown["nemesis"][1] == {"at": "2s", "action": "heal"}
    # the document itself is untouched, and the grown one is a valid scenario
    assert doc["nemesis"][0]["groups"] == [["A", "B"], ["C", "D", "E"]]
    sc = parse_scenario(grown, "p.toml")
    assert len(sc.nodes) == 7


def test_growing_a_tied_partition_fills_the_last_group() -> None:
    doc = tomllib.loads(PARTITION.replace('[["A", "B"], ["C", "D", "E"]]', '[["A"], ["B"]]'))
    doc["nodes"] = ["A", "B"]
    assert apply_point(doc, {"nodes": 4})["nemesis"][0]["groups"] == [["A"], ["B", "C", "D"]]


def test_same_size_and_shrinking_leave_partition_groups_alone() -> None:
    doc = tomllib.loads(PARTITION)
    assert apply_point(doc, {"nodes": 5}) == doc
    assert apply_point(doc, {"nodes": 3})["nemesis"][0]["groups"] == [["A", "B"], ["C", "D", "E"]]


def test_grown_partition_heal_keeps_a_majority_side_that_commits() -> None:
    # 2|3 of five grown to six: 2|4, the majority side commits during the partition
    # (before: 2|3|1, no side had a majority and nobody committed until the heal)
    doc = tomllib.loads((SCENARIOS / "raincore" / "partition_heal.toml").read_text())
    sc = parse_scenario(apply_point(doc, {"nodes": 6}), "partition_heal.toml")
    rows = Simulation(sc, seed=1).run().events(kind="view")
    cut, heal = 1_000_000_000, 2_000_000_000
    during = {r["node"]: tuple(r["members"]) for r in rows if cut < r["t"] < heal}
    assert during == dict.fromkeys("CDEF", ("C", "D", "E", "F"))


def test_fixed_is_a_scenario_key() -> None:
    for name in ("fig12_no_failure", "fig13_crash", "fig14_recovery"):
        doc = tomllib.loads((SCENARIOS / "raincore" / f"{name}.toml").read_text())
        assert is_fixed(doc), name
    assert not is_fixed(tomllib.loads((SCENARIOS / "raincore" / "crash.toml").read_text()))


def test_fixed_scenarios_run_only_at_points_that_leave_them_unchanged() -> None:
    sweep = parse_sweep(
        {
            "scenarios": ["scenarios/raincore/fig1*.toml", "scenarios/raincore/crash.toml"],
            "seeds": 2,
            "grid": {"nodes": ["as_is", 3, 4, 6], "network.loss": [0.0, 0.02]},
        },
        base=ROOT,
    )
    points = {(r.scenario, r.point) for r in sweep.runs}
    for fig in ("fig12_no_failure", "fig13_crash", "fig14_recovery"):
        # as is, and its own size (4) without loss: the same scenario
        assert {p for s, p in points if s == fig} == {
            "nodes=as_is,network.loss=0.0",
            "nodes=4,network.loss=0.0",
        }
    assert len([p for s, p in points if s == "raincore_crash"]) == 8
    fixed_skips = [s for s in sweep.skipped if "fixed = true" in s]
    assert len(fixed_skips) == 3 * 6
    assert all(s.startswith("fig1") for s in fixed_skips)


def test_fixed_scenarios_keep_their_exact_runs() -> None:
    # the default sweep's fig13 point is the figure itself: B is gone from the final view
    sweep = parse_sweep(
        {"scenarios": ["scenarios/raincore/fig13_crash.toml"], "grid": {"nodes": ["as_is", 6]}},
        base=ROOT,
    )
    (run,) = sweep.runs
    sc = parse_scenario(sweep.documents[run.scenario_index], "fig13_crash.toml")
    views = Simulation(sc, seed=run.seed).run().events(kind="view")
    last = {r["node"]: tuple(r["members"]) for r in views}
    assert last == {
        "A": ("A", "C", "D"),
        "B": ("A", "B", "C", "D"),
        **dict.fromkeys("CD", ("A", "C", "D")),
    }


def test_a_generator_sweep_draws_one_scenario_per_protocol_and_seed() -> None:
    from ringcast.lab.errors import LabError

    doc = {"protocols": ["raincore", "totem", "nope"], "seeds": 2, "generator": {"kind": "hostile"}}
    sweep = parse_sweep(doc, "hostile.toml")
    assert [(r.protocol, r.seed) for r in sweep.runs] == [
        ("raincore", 1),
        ("raincore", 2),
        ("totem", 1),
        ("totem", 2),
    ]
    assert any("nope" in s for s in sweep.skipped)
    for r in sweep.runs:  # every generated document is a valid scenario of its protocol
        assert parse_scenario(sweep.documents[r.scenario_index]).protocol == r.protocol
    # the same seed draws the same scenario
    assert parse_sweep(doc, "again.toml").documents == sweep.documents
    for bad, msg in (
        ({"seeds": 1, "generator": {"kind": "hostile"}}, "protocols"),
        ({"protocols": ["totem"], "generator": {"kind": "gentle"}}, "kind"),
        ({"protocols": ["totem"], "generator": {"kind": "hostile", "x": 1}}, "unknown key"),
        ({"protocols": ["totem"], "generator": {"kind": "hostile", "garble": 2}}, "garble"),
    ):
        with pytest.raises(LabError, match=msg):
            parse_sweep(bad, "bad.toml")


def test_a_generator_can_add_members_gone_bad_and_keeps_the_other_faults() -> None:
    doc = {"protocols": ["totem"], "seeds": 3, "generator": {"kind": "hostile"}}
    plain = parse_sweep(doc, "hostile.toml")
    bad = parse_sweep({**doc, "generator": {"kind": "hostile", "garble": 0.3}}, "bad.toml")
    for p, b in zip(plain.documents, bad.documents, strict=True):
        garbles = [a for a in b["nemesis"] if a["action"] in ("garble", "ungarble")]
        assert garbles and all(a.get("share", 0.3) == 0.3 for a in garbles)
        assert [a for a in b["nemesis"] if a not in garbles] == p["nemesis"]
        assert parse_scenario(b).protocol == "totem"


GMS_CASE_A = "scenarios/gms/case_a_new_coord_no_takeover.toml"
PLAIN = {
    "protocol": "gms",
    "where": {"settings.view_install": "plain"},
    "violates": ["convergence"],
    "why": "the control",
}


def _gms_sweep(*expect: dict[str, Any], **grid: list[Any]) -> dict[str, Any]:
    return {
        "scenarios": [GMS_CASE_A],
        "grid": {"settings.view_install": ["plain", "acks"], "network.loss": [0.0, 0.02], **grid},
        "expect": list(expect),
    }


def test_a_sweep_declares_its_expected_violations() -> None:
    sweep = parse_sweep(
        _gms_sweep(PLAIN, {**PLAIN, "where": {"network.loss": 0}, "violates": "view_agreement"}),
        "s.toml",
        base=ROOT,
    )
    plain, lossless = sweep.expect
    assert (plain.protocol, plain.where, plain.violates) == (
        "gms",
        {"settings.view_install": "plain"},
        ("convergence",),
    )
    # the grid's own value: 0 names the point of 0.0, as the run table spells it
    assert lossless.where == {"network.loss": 0.0}
    assert isinstance(lossless.where["network.loss"], float)
    assert lossless.violates == ("view_agreement",)
    covered = {r.run for r in sweep.runs if plain.matches(r.protocol, json.loads(r.params))}
    assert covered == {r.run for r in sweep.runs if "view_install=plain" in r.point}
    assert len(covered) == 2
    assert parse_sweep(_gms_sweep(), "s.toml", base=ROOT).expect == []


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ({**PLAIN, "violate": ["convergence"]}, r"#1: violate: unknown key \(known: protocol,"),
        ({**PLAIN, "violates": ["convergance"]}, "#1: violates: unknown property 'convergance'"),
        ({**PLAIN, "violates": []}, "#1: violates: expected a non-empty list"),
        ({**PLAIN, "protocol": "gmss"}, "#1: protocol: unknown protocol 'gmss'"),
        ({**PLAIN, "where": {"view_install": "plain"}}, r"#1: where.view_install: not a key of"),
        (
            {**PLAIN, "where": {"settings.view_install": "plian"}},
            r"where.settings.view_install: 'plian' is not a value of the grid \('plain', 'acks'\)",
        ),
        ({**PLAIN, "where": {"network.loss": 0.5}}, "where.network.loss: 0.5 is not a value"),
        (
            {**PLAIN, "protocol": "raincore"},
            "where.settings.view_install: not a setting of protocol raincore",
        ),
        ({k: v for k, v in PLAIN.items() if k != "why"}, "#1: why: missing"),
        ({**PLAIN, "why": " "}, "#1: why: expected a sentence"),
        ({**PLAIN, "where": "plain"}, "#1: where: expected a table"),
    ],
)
def test_a_mistyped_expectation_is_one_line_naming_the_file_and_field(
    expect: dict[str, Any], message: str
) -> None:
    from ringcast.lab.errors import LabError

    with pytest.raises(LabError, match=message) as err:
        parse_sweep(_gms_sweep(expect), "mine.toml", base=ROOT)
    assert str(err.value).startswith("mine.toml: [[expect]] #1: ")
    assert "\n" not in str(err.value)
    # the second table is named as the second
    with pytest.raises(LabError, match=r"mine.toml: \[\[expect\]\] #2: "):
        parse_sweep(_gms_sweep(PLAIN, expect), "mine.toml", base=ROOT)


def test_expect_must_be_tables() -> None:
    from ringcast.lab.errors import LabError

    doc = {**_gms_sweep(), "expect": {"protocol": "gms"}}
    with pytest.raises(LabError, match=r"s.toml: expect: expected \[\[expect\]\] tables"):
        parse_sweep(doc, "s.toml", base=ROOT)


@pytest.mark.parametrize("name", ["default", "catalogue_full"])
def test_the_bundled_sweeps_declare_the_gms_control(name: str) -> None:
    from ringcast.lab.grid import load_sweep

    sweep = load_sweep(ROOT / "sweeps" / f"{name}.toml")
    (plain,) = sweep.expect
    assert plain.where == {"settings.view_install": "plain"}
    assert plain.violates == ("convergence", "delivery_progress")


def test_a_generator_draws_larger_groups_and_a_longer_quiet_end() -> None:
    from ringcast.lab.errors import LabError

    doc = {
        "protocols": ["gms"],
        "seeds": 4,
        "generator": {"kind": "hostile", "nodes": [16, 40], "quiet": 30},
    }
    sweep = parse_sweep(doc, "scale.toml")
    sizes = [r.nodes for r in sweep.runs]
    assert all(16 <= k <= 40 for k in sizes) and len(set(sizes)) > 1
    for r in sweep.runs:
        names = sweep.documents[r.scenario_index]["nodes"]
        assert names[:8] == list("ABCDEFGH") and len(set(names)) == r.nodes
        assert parse_scenario(sweep.documents[r.scenario_index]).protocol == "gms"
    fixed = parse_sweep({**doc, "generator": {"kind": "hostile", "nodes": 12}}, "f.toml")
    assert {r.nodes for r in fixed.runs} == {12}
    # a longer quiet end lengthens the run and changes nothing before it
    short = parse_sweep({**doc, "generator": {"kind": "hostile", "nodes": [16, 40]}}, "s.toml")
    for a, b in zip(short.documents, sweep.documents, strict=True):
        assert a["nemesis"] == b["nemesis"]
        assert parse_scenario(b).duration > parse_scenario(a).duration
    for bad in (0, 101, [8, 4], [3], "16", True, [3, 200]):
        with pytest.raises(LabError, match=r"generator\.nodes: expected a group size"):
            parse_sweep({**doc, "generator": {"kind": "hostile", "nodes": bad}}, "bad.toml")
    for bad in (0, "40", True, 5000):
        with pytest.raises(LabError, match=r"generator\.quiet: expected a number of timeouts"):
            parse_sweep({**doc, "generator": {"kind": "hostile", "quiet": bad}}, "bad.toml")


@pytest.mark.parametrize("name", ["default", "catalogue_full"])
def test_the_default_sweep_saturates_every_protocol(name: str) -> None:
    """Every registered protocol has points of the default sweep (and of the whole
    catalogue) with a saturating workload (rate = 0), so the simulator's half of the lab
    sees flow control at its limit as the live half does."""
    from ringcast.lab.grid import load_sweep
    from ringcast.protocols import registry

    sweep = load_sweep(ROOT / "sweeps" / f"{name}.toml")
    saturated = {
        r.protocol
        for r in sweep.runs
        if any(w.rate == 0 for w in parse_scenario(sweep.documents[r.scenario_index]).workloads)
    }
    assert saturated == set(registry.builtin_names())


def test_the_default_sweep_is_a_small_sample_of_every_family_and_fault() -> None:
    """The main job's sweep stays a fixed, small sample (its size sets how long `./dev
    run` takes) that still runs every family, a hostile slice of every family, and every
    fault and network impairment the whole catalogue applies."""
    from ringcast.lab.grid import load_sweep
    from ringcast.protocols import registry

    def faults(sweep: Any) -> tuple[set[str], set[str]]:
        actions = {f["action"] for d in sweep.documents for f in d.get("nemesis", [])}
        network = {k for d in sweep.documents for k, v in d.get("network", {}).items() if v}
        return actions, network

    default = load_sweep(ROOT / "sweeps" / "default.toml")
    full = load_sweep(ROOT / "sweeps" / "catalogue_full.toml")
    assert len(default.runs) <= 150 < len(full.runs)
    families = set(registry.builtin_names())
    assert {r.protocol for r in default.runs} == families
    assert {r.protocol for r in default.runs if r.point == "generated"} == families
    actions, network = faults(default)
    full_actions, full_network = faults(full)
    assert actions >= full_actions and network >= full_network
