"""The fast path and the plain reference agree.

The plain reference is ``run_checks(..., certify=False)``: every run through every
property's exact check. The fast path, ``run_checks``' default, first clears the runs
that the screen (:mod:`ringcast.lab.checks.screen`) finds holding, then proves
total_order, fifo and integrity with the certificate (:mod:`ringcast.lab.checks.certify`)
for the others, and sends only what is left through the exact checks. Both are applied, with every
property claimed by every protocol, to every bundled scenario simulated with a fixed
seed and to corruptions of two of them (rows reordered in the file, a duplicated
delivery, a missing delivery, two deliveries swapped at one node, a configuration
installed with other members at one node than at another): their verdicts,
violation counts and counterexamples must be the same.

The traces are written as ``ringcast sim`` writes them and read without their
``summary.json``: the trace files name their protocol themselves.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ringcast.lab.checks import run_checks
from ringcast.lab.load import load_traces
from ringcast.lab.properties import PROPERTIES
from ringcast.sim import Simulation, load_scenario
from ringcast.trace import SCHEMA, ParquetTraceWriter

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "scenarios").glob("**/*.toml"))
SEED = 1
SOURCES = ("raincore/crash", "totem/crash")
"""The scenarios whose traces are corrupted."""

Rows = list[dict[str, Any]]


def _deliveries(rows: Rows, node: str) -> list[dict[str, Any]]:
    return sorted(
        (r for r in rows if r["kind"] == "deliver" and r["node"] == node), key=lambda r: r["i"]
    )


def _busiest(rows: Rows) -> str:
    nodes = sorted({r["node"] for r in rows if r["kind"] == "deliver"})
    return max(nodes, key=lambda n: len(_deliveries(rows, n)))


def reordered(rows: Rows, rng: random.Random) -> Rows:
    """The same rows in another order in the file: nothing changes."""
    rows = list(rows)
    rng.shuffle(rows)
    return rows


def duplicated(rows: Rows, rng: random.Random) -> Rows:
    """A node delivers one message a second time, right after the first."""
    node = _busiest(rows)
    victim = rng.choice(_deliveries(rows, node))
    for r in rows:
        if r["node"] == node and r["i"] > victim["i"]:
            r["i"] += 1
    return [*rows, dict(victim, i=victim["i"] + 1)]


def missing(rows: Rows, rng: random.Random) -> Rows:
    """A node never delivers one message."""
    victim = rng.choice(_deliveries(rows, _busiest(rows)))
    return [r for r in rows if r is not victim]


def swapped(rows: Rows, rng: random.Random) -> Rows:
    """A node delivers two consecutive messages of different senders the other way."""
    ds = _deliveries(rows, _busiest(rows))
    pairs = [
        (a, b)
        for a, b in itertools.pairwise(ds)
        if a["msg"].rpartition(":")[0] != b["msg"].rpartition(":")[0]
    ]
    a, b = rng.choice(pairs)
    for f in ("msg", "order", "size"):
        a[f], b[f] = b[f], a[f]
    return rows


def other_members(rows: Rows, rng: random.Random) -> Rows:
    """A node installs a regular configuration with other members than the others."""
    views = [r for r in rows if r["kind"] == "view" and not r["transitional"] and r["members"]]
    shared = [v for v in views if sum(w["view"] == v["view"] for w in views) >= 2]
    victim = rng.choice(shared)
    victim["members"] = [*victim["members"], "Z"]
    return rows


CORRUPTIONS: dict[str, Callable[[Rows, random.Random], Rows]] = {
    "reordered": reordered,
    "duplicated": duplicated,
    "missing": missing,
    "swapped": swapped,
    "members": other_members,
}


def _outcome(results: list[Any]) -> dict[str, Any]:
    return {
        r.property: (
            r.status,
            r.runs_checked,
            r.runs_violated,
            r.violations,
            {p: (e["runs_checked"], e.get("violations", 0)) for p, e in r.protocols.items()},
            sorted(
                (c["run"], c["t"], c["note"], tuple(c["nodes"]), tuple(c["msgs"]))
                for c in r.counterexamples
            ),
        )
        for r in results
    }


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Every bundled scenario simulated with seed 1 and written as ``ringcast sim``
    does, without its ``summary.json``; and the corruptions of :data:`SOURCES`, each a
    run of its own. Returns the directory and each run's protocol."""
    out = tmp_path_factory.mktemp("reference")
    protocols: dict[str, str] = {}
    for k, path in enumerate(SCENARIOS):
        name = f"{path.parent.name}/{path.stem}"
        result = Simulation(load_scenario(path), seed=SEED, run_id=f"{name}:{SEED}").run()
        protocol = result.scenario.protocol
        protocols[result.run_id] = protocol
        result.write(out / f"{k:02d}")
        (out / f"{k:02d}" / "summary.json").unlink()
        if name not in SOURCES:
            continue
        clean = result.table().to_pylist()
        for c, (what, corrupt) in enumerate(CORRUPTIONS.items()):
            run = f"{name}#{what}:{SEED}"
            rows = corrupt([dict(r, run=run) for r in clean], random.Random(c))
            with ParquetTraceWriter(out / f"{k:02d}-{what}.parquet", protocol=protocol) as w:
                w.write_batch(pa.Table.from_pylist(rows, schema=SCHEMA))
            protocols[run] = protocol
    return out, protocols


def test_fast_path_and_reference_agree(spark: Any, traces: tuple[Path, dict[str, str]]) -> None:
    out, protocols = traces
    frame = load_traces(spark, [out])
    got = {(r.run, r.protocol) for r in frame.select("run", "protocol").distinct().collect()}
    assert got == set(protocols.items())  # named by the files alone
    claims = {"*": PROPERTIES}
    # every counterexample kept (no cap), so that each corrupted run's are all there
    fast = run_checks(frame, overrides=claims, examples=1_000_000)
    # the plain reference: every run through every property's exact check, no screen
    # and no certificate
    plain = run_checks(frame, overrides=claims, examples=1_000_000, certify=False)
    assert _outcome(fast) == _outcome(plain)
    by = {r.property: r for r in fast}
    assert all(r.runs_certified == r.runs_screened == 0 for r in plain)
    assert by["total_order"].runs_screened > 0  # the fast path did take its shortcut
    for source in SOURCES:
        # which properties see each corruption of this source, and its clean run
        seen = {
            r.property: {c["run"] for c in r.counterexamples if c["run"].startswith(source)}
            for r in fast
        }
        hit = {
            what: {p for p, runs in seen.items() if f"{source}#{what}:{SEED}" in runs}
            for what in CORRUPTIONS
        }
        clean = {p for p, runs in seen.items() if f"{source}:{SEED}" in runs}
        assert hit["reordered"] == clean, source
        assert "integrity" in hit["duplicated"], source
        # two deliveries of different senders swapped at one node: another node delivered
        # the pair the other way round in the same configuration
        assert "total_order" in hit["swapped"], source
        assert "view_agreement" in hit["members"], source


def test_traces_name_their_protocol(spark: Any, traces: tuple[Path, dict[str, str]]) -> None:
    """Without ``summary.json`` a trace is checked for its own protocol's claims, read
    from its file: Totem's swapped deliveries break total order. The same file written
    before the metadata existed still reads: as the protocol the caller names, else as
    ``unknown``, held to the default claims (total order not applicable). A file that
    names its protocol keeps it whatever the caller says."""
    from ringcast.lab.checks.runner import NOT_APPLICABLE, VIOLATED

    out, _protocols = traces
    named = out / f"{SCENARIOS.index(ROOT / 'scenarios/totem/crash.toml'):02d}-swapped.parquet"
    old = out.parent / "old.parquet"
    pq.write_table(pq.read_table(named).replace_schema_metadata(None), old)
    for path, protocol, status in (
        (named, None, VIOLATED),
        (named, "basic", VIOLATED),
        (old, "totem", VIOLATED),
        (old, None, NOT_APPLICABLE),
    ):
        frame = load_traces(spark, [path], protocol=protocol)
        (result,) = run_checks(frame, properties=["total_order"])
        assert result.status == status, (path.name, protocol)
        expected = "unknown" if status == NOT_APPLICABLE else "totem"
        assert set(result.protocols) == {expected}
