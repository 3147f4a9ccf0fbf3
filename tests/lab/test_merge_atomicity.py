"""merge_atomicity on Spark: the check agrees with its plain-Python reference
(``ringcast.lab.reference``) run by run, and a sweep catches the planted merge
bug (:func:`lab_buggy.register_gms_first_coord`) with it."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any

import lab_buggy
import pytest

from ringcast.lab.checks import run_checks
from ringcast.lab.grid import load_sweep
from ringcast.lab.load import load_traces
from ringcast.lab.pipeline import check_paths
from ringcast.lab.sweep import run_sweep
from ringcast.protocols import registry
from ringcast.sim import Simulation, load_scenario
from ringcast.sim.hostile import hostile_scenario
from ringcast.trace.schema import COLUMNS

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from ringcast.lab.reference import merge_atomicity  # noqa: E402

sys.path.remove(str(ROOT))
try:
    from pyspark import cloudpickle
except ImportError:  # pragma: no cover
    import cloudpickle  # type: ignore[no-redef]

cloudpickle.register_pickle_by_value(lab_buggy)

SPLIT = ROOT / "scenarios" / "gms" / "jgroups" / "split_8_into_4.toml"
BUNDLED = ("gms/partition_merge", "gms/regress_overlapping_merges", "tribes/partition_heal")
HOSTILE = (
    ("gms", 221),
    ("gms", 1454),
    ("gms", 3494),
    ("tribes", 19),
    ("tribes", 22),
    ("totem", 70),
)
"""Hostile runs that violate the property (Tribes and Totem do not claim it) and so
exercise every clause on real traces; and two that do not: GMS seed 1454 (F, which
missed the exclusion A:5 of A:4, installs A:6, which admits the restarted C: a join,
whose two sources are one subgroup before and after the exclusion) and GMS seed 3494
(C, which missed A:5 = A:3 less E plus D, installs A:6 from A:3, A from A:5: A:6 admits
the restarted E; A:3 and A:5 are not inside one another but A installed both, A:3
first, and C is a member of A:5: one subgroup, a join)."""

Event = tuple[int, str, str, Any]
"""(ms, node, regular view or fault action, the view's members or the fault's detail)."""

CUT = {"groups": [["D"], ["B"], ["A", "C", "E"]]}
LINEAGE: dict[str, list[Event]] = {
    # seed 3494's shape: A:5 = A:3 less E plus D; C misses it and installs A:6 from
    # A:3: a join of the restarted E, although B, on another side of the healed
    # partition, is alive in a view of its own
    "lineage/join": [
        *[(0, n, "A:3", ["A", "C", "E"]) for n in "ACE"],
        (0, "B", "B:2", ["B"]),
        (1, "A", "partition", CUT),
        (2, "A", "heal", {}),
        (5, "E", "crash", {}),
        (10, "D", "join", {}),
        (20, "A", "A:5", ["A", "C", "D"]),
        (20, "D", "A:5", ["A", "C", "D"]),
        (30, "E", "restart", {}),
        *[(400, n, "A:6", ["A", "C", "D", "E"]) for n in "ACDE"],
    ],
    # A:5 excludes E and F, which stay in A:3, alive; A:6 takes E back from A:3 and
    # leaves F, still in A:3: a merge of one lineage's two views, and a partial one
    "lineage/excluded_return": [
        *[(0, n, "A:3", ["A", "C", "E", "F"]) for n in "ACEF"],
        (10, "D", "join", {}),
        *[(20, n, "A:5", ["A", "C", "D"]) for n in "ACD"],
        *[(40, n, "A:6", ["A", "C", "D", "E"]) for n in "ACDE"],
    ],
    # A:5 merges A:3 and C:3 less D, which was paused while it was decided and
    # resumed 10 ms before its installation (a first phase restarted without the
    # member that never acknowledged): not partial; resumed 300 ms before, it is
    "resumed/within_grace": [
        *[(0, n, "A:3", ["A", "B"]) for n in "AB"],
        *[(0, n, "C:3", ["C", "D"]) for n in "CD"],
        (5, "D", "pause", {}),
        (300, "D", "resume", {}),
        *[(310, n, "A:5", ["A", "B", "C"]) for n in "ABC"],
    ],
    "resumed/after_grace": [
        *[(0, n, "A:3", ["A", "B"]) for n in "AB"],
        *[(0, n, "C:3", ["C", "D"]) for n in "CD"],
        (5, "D", "pause", {}),
        (300, "D", "resume", {}),
        *[(600, n, "A:5", ["A", "B", "C"]) for n in "ABC"],
    ],
    # A:5 merges A:3 and C:3 less D, alive: partial unless the network healed less
    # than the grace before (the merge may have been decided while D was cut off)
    "healed/within_grace": [
        *[(0, n, "A:3", ["A", "B"]) for n in "AB"],
        *[(0, n, "C:3", ["C", "D"]) for n in "CD"],
        (5, "A", "partition", {"groups": [["A", "B", "C"], ["D"]]}),
        (200, "A", "heal", {}),
        *[(300, n, "A:5", ["A", "B", "C"]) for n in "ABC"],
    ],
    "healed/after_grace": [
        *[(0, n, "A:3", ["A", "B"]) for n in "AB"],
        *[(0, n, "C:3", ["C", "D"]) for n in "CD"],
        (5, "A", "partition", {"groups": [["A", "B", "C"], ["D"]]}),
        (200, "A", "heal", {}),
        *[(500, n, "A:5", ["A", "B", "C"]) for n in "ABC"],
    ],
    # A:5 merges A:3 and C:3 while D is paused; B crashes; a second merge takes A and C
    # from A:5 and D, resumed, from C:3. Led by A, which installed A:5 first, it is a
    # later merge of A's lineage; led by D, which never installed A:5, it overlaps A:5
    "lineage/later_merge": [
        *[(0, n, "A:3", ["A", "B"]) for n in "AB"],
        *[(0, n, "C:3", ["C", "D"]) for n in "CD"],
        (5, "D", "pause", {}),
        *[(100, n, "A:5", ["A", "B", "C"]) for n in "ABC"],
        (300, "D", "resume", {}),
        (350, "B", "crash", {}),
        *[(700, n, "A:7", ["A", "C", "D"]) for n in "ACD"],
    ],
    "overlap/concurrent": [
        *[(0, n, "A:3", ["A", "B"]) for n in "AB"],
        *[(0, n, "C:3", ["C", "D"]) for n in "CD"],
        (5, "D", "pause", {}),
        *[(100, n, "A:5", ["A", "B", "C"]) for n in "ABC"],
        (300, "D", "resume", {}),
        (350, "B", "crash", {}),
        *[(700, n, "D:7", ["A", "C", "D"]) for n in "ACD"],
    ],
}
"""Hand-written GMS traces. One coordinator's lineage: two sources of a view, one
installed by the coordinator before the other, are one subgroup only when the nodes
that came from the older one are members of the newer one. A member resumed just
before a merge that left it out: partial only once the grace after the resume is
over, and a member cut off until just before a merge, until the grace after the heal
is over. Two merges that share a source: concurrent (overlapping) unless one came
before the other in its creator's lineage."""


def _write_rows(out: Path, run_id: str, events: list[Event]) -> list[dict[str, Any]]:
    """``events`` as a trace file of GMS under ``out``; the rows as the reference reads
    them."""
    from ringcast.trace.writer import open_writer

    index: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    for ms, node, what, more in sorted(events, key=lambda e: e[0]):
        i = index[node] = index.get(node, -1) + 1
        view = isinstance(more, list)
        rows.append(
            {
                "run": run_id, "node": node, "t": ms * 1_000_000, "i": i,
                "kind": "view" if view else "fault", "msg": None, "order": None,
                "view": what if view else None, "members": more if view else None,
                "transitional": False if view else None, "size": None,
                "detail": {} if view else {"action": what, **more}, "network": None,
            }
        )  # fmt: skip
    out.mkdir(parents=True)
    with open_writer(out / "trace.parquet", "parquet", protocol="gms") as w:
        w.write(
            tuple(
                json.dumps(r[c]) if c == "detail" and r[c] else (None if c == "detail" else r[c])
                for c in COLUMNS
            )
            for r in rows
        )
    return rows


CLAUSES = ("partial merge after the heal", "partial merge", "overlapping merges")


def _key(note: str) -> tuple[str, str]:
    """(clause, first view named) of a counterexample, whoever wrote it."""
    clause = next(c for c in CLAUSES if note.startswith(c))
    view = re.search(r"(?:installed|merges:) (\S+)", note)
    return clause, view.group(1) if view else ""


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]]]:
    """Bundled scenarios, the planted bug and hostile runs, written as ``ringcast sim``
    writes them; and the reference's verdict per run."""
    lab_buggy.register_gms_first_coord()
    out = tmp_path_factory.mktemp("merge_atomicity")
    ref: dict[str, list[str]] = {}

    def write(scenario: Any, seed: int, run_id: str) -> None:
        res = Simulation(scenario, seed=seed, run_id=run_id).run()
        res.write(out / f"{len(ref):03d}")
        ref[run_id] = merge_atomicity(res.events())

    for name in BUNDLED:
        write(load_scenario(ROOT / "scenarios" / f"{name}.toml"), 1, f"{name}:1")
    buggy = dataclasses.replace(load_scenario(SPLIT), protocol=lab_buggy.GMS_FIRST_COORD)
    write(buggy, 1, "first_coord:1")
    for protocol, seed in HOSTILE:
        timeout = registry.get(protocol).timeout_ns({})
        run = hostile_scenario(seed, protocol, token_timeout=timeout)
        write(run.scenario, seed, f"hostile/{protocol}:{seed}")
    for run_id, events in LINEAGE.items():
        ref[run_id] = merge_atomicity(_write_rows(out / f"{len(ref):03d}", run_id, events))
    return out, ref


def test_the_check_and_its_reference_agree(
    spark: Any, traces: tuple[Path, dict[str, list[str]]]
) -> None:
    out, ref = traces
    frame = load_traces(spark, [out])
    (result,) = run_checks(
        frame,
        properties=["merge_atomicity"],
        overrides={"*": ["merge_atomicity"]},
        examples=10_000,
        screen=False,  # the screen judges merges by the reference: the exact check alone
    )
    got: dict[str, list[tuple[str, str]]] = {run: [] for run in ref}
    for c in result.counterexamples:
        got[c["run"]].append(_key(c["note"]))
    assert {run: sorted(got[run]) for run in ref} == {
        run: sorted(_key(m) for m in msgs) for run, msgs in ref.items()
    }
    # every clause is exercised, and the planted bug and the fixed GMS differ
    assert {k[0] for keys in got.values() for k in keys} >= set(CLAUSES[:2])
    assert got["first_coord:1"] and not got["gms/partition_merge:1"]
    assert not got["gms/regress_overlapping_merges:1"]
    assert not got["hostile/gms:1454"] and not ref["hostile/gms:1454"]
    assert not got["hostile/gms:3494"] and not ref["hostile/gms:3494"]
    assert not got["lineage/join"] and not ref["lineage/join"]
    assert got["lineage/excluded_return"] == [("partial merge", "A:6")]
    assert not got["resumed/within_grace"] and not ref["resumed/within_grace"]
    assert got["resumed/after_grace"] == [("partial merge", "A:5")]
    assert not got["healed/within_grace"] and not ref["healed/within_grace"]
    assert got["healed/after_grace"] == [("partial merge", "A:5")]
    assert not got["lineage/later_merge"] and not ref["lineage/later_merge"]
    assert got["overlap/concurrent"] == [("overlapping merges", "A:5")]


def test_the_screen_sends_exactly_the_runs_its_reference_finds_partial(
    traces: tuple[Path, dict[str, list[str]]],
) -> None:
    """The screen judges a run with a merge by the reference: it sends to the exact
    check the runs the reference finds violating and clears the others, merges
    included (no Spark: the screen reads one run's rows)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from ringcast.lab.checks import screen
    from ringcast.trace.reader import trace_protocol

    out, ref = traces
    flagged: dict[str, bool] = {}
    merged: set[str] = set()
    for path in sorted(out.glob("*/trace.parquet")):
        protocol = trace_protocol(path) or "gms"
        table = pq.read_table(path)
        table = table.append_column("protocol", pa.array([protocol] * len(table), pa.string()))
        params = screen.params(_Bounds(), [protocol])  # type: ignore[arg-type]
        for run in sorted(set(table.column("run").to_pylist())):
            one = table.filter(pc.equal(table.column("run"), run))
            flagged[run] = screen.screen_run(one, params, ("merge_atomicity",)) != []
            if screen._has_merge(screen.Run(one, params)):
                merged.add(run)
    assert flagged == {run: bool(msgs) for run, msgs in ref.items()}
    # merges that hold are cleared, not only runs without one
    assert {"gms/partition_merge:1", "lineage/join"} <= merged - {
        run for run, bad in flagged.items() if bad
    }


class _Bounds:
    convergence_bound = 10.0
    progress_bound = 1_000_000_000


@pytest.fixture(scope="module")
def first_coord_swept(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One sweep over JGroups' 8 members in 4 partitions, run by GMS and by GMS with the
    planted merge bug, two seeds each."""
    lab_buggy.register_gms_first_coord()
    d = tmp_path_factory.mktemp("first_coord")
    text = SPLIT.read_text()
    (d / "gms.toml").write_text(text)
    buggy = text.replace('protocol = "gms"', f'protocol = "{lab_buggy.GMS_FIRST_COORD}"')
    (d / "buggy.toml").write_text(buggy.replace('"gms_split_8_into_4"', '"gms_split_buggy"'))
    (d / "sweep.toml").write_text(
        'name = "first_coord"\nscenarios = ["gms.toml", "buggy.toml"]\nseeds = 2\n'
    )
    out = d / "out"
    run_sweep(
        spark, load_sweep(d / "sweep.toml"), out, partitions=2,
        setup=lab_buggy.register_gms_first_coord,
    )  # fmt: skip
    return out


def test_a_merge_of_the_first_coordinator_only_is_caught(
    spark: Any, first_coord_swept: Path
) -> None:
    """The planted bug merges the first subgroup that answers and leaves the other two
    out: merge_atomicity fails every run of it and none of GMS's."""
    doc = check_paths(spark, [first_coord_swept], properties=["merge_atomicity"])
    prop = doc["properties"]["merge_atomicity"]
    assert prop["status"] == "violated"
    assert prop["protocols"]["gms"] == {"claimed": True, "runs_checked": 2, "violations": 0}
    assert prop["protocols"][lab_buggy.GMS_FIRST_COORD]["runs_violated"] == 2
    for c in prop["counterexamples"]:
        assert c["protocol"] == lab_buggy.GMS_FIRST_COORD
        assert c["note"].startswith("partial merge after the heal")
