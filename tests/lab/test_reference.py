"""The fast path and the plain reference agree.

The plain reference is ``run_checks(..., certify=False)``: every run through every
property's exact check. The fast path, ``run_checks``' default, first clears the runs
that the screen (:mod:`ringcast.lab.checks.screen`) finds holding, then proves
total_order, fifo and integrity with the certificate (:mod:`ringcast.lab.checks.certify`)
for the others, and sends only what is left through the exact checks. Both are
applied, with every property claimed by every protocol, in one pass each, to one set of
traces:

- every bundled scenario simulated with a fixed seed, and corruptions of two of them
  (rows reordered in the file, a duplicated delivery, a missing delivery, two
  deliveries swapped at one node, a configuration installed with other members at one
  node than at another);
- the lab's corruption catalogue (``lab_traces.MUTATIONS``: a clean run and one run
  per corruption, each breaking exactly one property), with total order scoped to the
  run and, as Totem's, to a configuration;
- the certificate's shapes (``test_certify.SHAPES``: runs it must not prove, whether
  or not a property breaks).

Their verdicts, violation counts and counterexamples must be the same, and each
corruption must be found where it was planted. The certificate alone (the screen in
front of the properties it does not prove) is checked on the synthetic runs, and must
give the plain reference's counts and counterexamples there. The traces are written as ``ringcast
sim`` writes them and read without their ``summary.json``: the trace files name their
protocol themselves.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lab_traces import MUTATIONS, clean_trace, to_table
from test_certify import NOT_CERTIFIED, RUN_SCOPED, SHAPES, steady

from ringcast.lab.checks import run_checks, screen
from ringcast.lab.checks.runner import READS_DELIVERIES, VIOLATED
from ringcast.lab.load import load_traces
from ringcast.lab.properties import PROPERTIES
from ringcast.sim import Simulation, load_scenario
from ringcast.trace import SCHEMA, ParquetTraceWriter

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "scenarios").glob("**/*.toml"))
SEED = 1
SOURCES = ("raincore/crash", "totem/crash")
"""The scenarios whose traces are corrupted."""
SCOPES = (RUN_SCOPED, "totem")
"""The protocols the corruption catalogue is checked as: total order over the whole
run, and within each configuration."""
STEADY = "steadyproto"
"""The protocol of the certificate's shapes (run-scoped, like :data:`RUN_SCOPED`; a
name of its own so that the catalogue's runs can be counted apart)."""

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


def _counts(result: Any, protocols: Iterable[str] | None = None) -> dict[str, Any]:
    """Runs checked and violations of each of ``protocols`` (default: every one)."""
    return {
        p: (e["runs_checked"], e.get("violations", 0))
        for p, e in result.protocols.items()
        if protocols is None or p in protocols
    }


def _examples(result: Any, runs: str | tuple[str, ...] = "") -> list[tuple[Any, ...]]:
    """The counterexamples of the runs whose names start with ``runs``, sorted."""
    return sorted(
        (c["run"], c["t"], c["note"], tuple(c["nodes"]), tuple(c["msgs"]))
        for c in result.counterexamples
        if c["run"].startswith(runs)
    )


def _outcome(results: Iterable[Any]) -> dict[str, Any]:
    return {
        r.property: (
            r.status,
            r.runs_checked,
            r.runs_violated,
            r.violations,
            _counts(r),
            _examples(r),
        )
        for r in results
    }


Targets = dict[tuple[str, str], dict[str, Any]]


def _write(path: Path, rows: Rows, protocol: str) -> None:
    with ParquetTraceWriter(path, protocol=protocol) as w:
        w.write_batch(to_table(rows))


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Targets]:
    """Every bundled scenario simulated with seed 1 and written as ``ringcast sim``
    does, without its ``summary.json``; the corruptions of :data:`SOURCES`, each a
    run of its own; the corruption catalogue as each of :data:`SCOPES` (runs
    ``{protocol}:clean`` and ``{protocol}:m:{name}``); the certificate's shapes (runs
    ``shape:{name}``). Returns the directory, each run's protocol, and what each
    catalogue corruption targets, by (protocol, name)."""
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
    targets: Targets = {}
    for protocol in SCOPES:
        rows = clean_trace(f"{protocol}:clean")
        for name, (fn, _) in MUTATIONS.items():
            corrupted, targets[protocol, name] = fn(clean_trace(f"{protocol}:m:{name}"))
            rows += corrupted
        _write(out / f"catalogue-{protocol}.parquet", rows, protocol)
    rows = steady("shape:clean")
    for name, (fn, _) in SHAPES.items():
        rows += fn(steady(f"shape:{name}"))
    _write(out / "shapes.parquet", rows, STEADY)
    for r in rows:
        protocols[r["run"]] = STEADY
    for protocol in SCOPES:
        protocols[f"{protocol}:clean"] = protocol
        protocols.update((f"{protocol}:m:{name}", protocol) for name in MUTATIONS)
    return out, protocols, targets


class Checked(NamedTuple):
    plain: dict[str, Any]
    certified: dict[str, Any]
    fast: dict[str, Any]


SYNTHETIC = ("catalogue-*.parquet", "shapes.parquet")
"""The files of the synthetic runs (the catalogue and the certificate's shapes)."""


@pytest.fixture(scope="module")
def checked(spark: Any, traces: tuple[Path, dict[str, str], Targets]) -> Checked:
    """The traces checked, every counterexample kept (no cap), each result by
    property: all of them by the plain reference (no screen, no certificate) and by the
    fast path (the screen, then the certificate); the synthetic runs alone by the
    certificate alone (the screen in front of the properties it does not prove; only
    the properties that read deliveries: the certificate decides nothing of the others,
    which run the same plan either way)."""
    out, protocols, _ = traces
    frame = load_traces(spark, [out])
    got = {(r.run, r.protocol) for r in frame.select("run", "protocol").distinct().collect()}
    assert got == set(protocols.items())  # named by the files alone
    claims = {"*": PROPERTIES}
    many = 1_000_000
    plain = run_checks(frame, overrides=claims, examples=many, certify=False)
    fast = run_checks(frame, overrides=claims, examples=many)
    synthetic = load_traces(spark, [f for pattern in SYNTHETIC for f in out.glob(pattern)])
    certified = run_checks(
        synthetic,
        overrides=claims,
        examples=many,
        screen=NOT_CERTIFIED,
        properties=READS_DELIVERIES,
    )
    return Checked(*({r.property: r for r in rs} for rs in (plain, certified, fast)))


def _synthetic(results: Iterable[Any]) -> dict[str, Any]:
    """:func:`_outcome` of the synthetic runs alone: the counts of the protocols that
    have no other runs, and the counterexamples of the synthetic runs."""
    runs = (*(f"{p}:" for p in SCOPES), "shape:")
    return {r.property: (_counts(r, (RUN_SCOPED, STEADY)), _examples(r, runs)) for r in results}


def _runs(result: Any, prefix: str) -> set[str]:
    return {c["run"] for c in result.counterexamples if c["run"].startswith(prefix)}


def test_fast_path_and_reference_agree(checked: Checked) -> None:
    assert set(checked.plain) == set(checked.fast) == set(PROPERTIES)
    assert _outcome(checked.fast.values()) == _outcome(checked.plain.values())
    assert all(r.runs_certified == r.runs_screened == 0 for r in checked.plain.values())
    assert checked.fast["total_order"].runs_screened > 0  # the fast path took its shortcut
    for name in screen.SCREENS:  # the clean runs cleared, at least
        r = checked.fast[name]
        assert r.runs_screened >= 2 or not r.runs_checked, name


def test_the_certificate_alone_agrees_with_the_reference(checked: Checked) -> None:
    """On the synthetic runs: the same counts and counterexamples as the plain
    reference's, and the certificate did prove runs."""
    assert set(checked.certified) == set(READS_DELIVERIES)
    plain = {p: o for p, o in _synthetic(checked.plain.values()).items() if p in READS_DELIVERIES}
    assert _synthetic(checked.certified.values()) == plain
    assert all(checked.certified[p].protocols[RUN_SCOPED]["runs_checked"] for p in plain)
    for name in ("total_order", "fifo", "integrity"):
        assert checked.certified[name].runs_certified > 0, name


def test_corruptions_of_bundled_scenarios_are_found(checked: Checked) -> None:
    for source in SOURCES:
        # which properties see each corruption of this source, and its clean run
        seen = {p: _runs(r, source) for p, r in checked.fast.items()}
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


def test_the_certificates_shapes_break_exactly_their_properties(checked: Checked) -> None:
    """Runs the certificate cannot prove are left to the exact checks, which find what
    each breaks, and nothing in the runs that break nothing (a gap, a late joiner)."""
    for name, (_, broken) in SHAPES.items():
        hit = {p for p, r in checked.fast.items() if f"shape:{name}" in _runs(r, "shape:")}
        assert hit == broken, name
    assert not any(_runs(r, "shape:clean") for r in checked.fast.values())


def test_every_property_checked_on_every_catalogue_run(checked: Checked) -> None:
    """Every property applies to every run of the catalogue: the run-scoped protocol has
    no other runs; Totem's also include the bundled scenarios'."""
    catalogue = len(MUTATIONS) + 1
    for r in checked.fast.values():
        assert r.protocols[RUN_SCOPED]["runs_checked"] == catalogue, r.property
        assert r.protocols["totem"]["runs_checked"] >= catalogue, r.property


def test_the_catalogues_clean_runs_have_no_counterexample(checked: Checked) -> None:
    for r in checked.fast.values():
        assert r.status == VIOLATED  # each property is broken by some corruption
        for protocol in SCOPES:
            assert not _runs(r, f"{protocol}:clean"), r.property


@pytest.mark.parametrize("name", sorted(MUTATIONS))
@pytest.mark.parametrize("protocol", SCOPES)
def test_corruption_breaks_exactly_its_property(
    checked: Checked, traces: tuple[Path, dict[str, str], Targets], protocol: str, name: str
) -> None:
    """In either scope, the catalogue's corruption is found by its property alone, and
    each counterexample points at what was corrupted."""
    run = f"{protocol}:m:{name}"
    broken = {p for p, r in checked.fast.items() if run in _runs(r, run)}
    expected = MUTATIONS[name][1]
    assert broken == {expected}
    target = traces[2][protocol, name]
    examples = [c for c in checked.fast[expected].counterexamples if c["run"] == run]
    for c in examples:
        for field in ("nodes", "msgs", "views", "times"):
            if field in target:
                assert set(c[field]) & target[field], (field, c)
        assert c["note"]


def test_traces_name_their_protocol(
    spark: Any, traces: tuple[Path, dict[str, str], Targets]
) -> None:
    """Without ``summary.json`` a trace is checked for its own protocol's claims, read
    from its file: Totem's swapped deliveries break total order. The same file written
    before the metadata existed still reads: as the protocol the caller names, else as
    ``unknown``, held to the default claims (total order not applicable). A file that
    names its protocol keeps it whatever the caller says."""
    from ringcast.lab.checks.runner import NOT_APPLICABLE, VIOLATED

    out = traces[0]
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
