"""Sweeps on Spark: grid expansion, traces written by tasks, a planted bug caught."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lab_buggy
import pyarrow.parquet as pq
import pytest

from ringcast.lab.errors import LabError
from ringcast.lab.grid import apply_point, load_sweep, parse_sweep
from ringcast.lab.load import load_traces
from ringcast.lab.pipeline import check_paths, metrics_paths
from ringcast.lab.sweep import run_sweep
from ringcast.sim import Simulation, parse_scenario

try:
    from pyspark import cloudpickle
except ImportError:  # pragma: no cover - pyspark always bundles it
    import cloudpickle  # type: ignore[no-redef]

cloudpickle.register_pickle_by_value(lab_buggy)


@pytest.fixture(scope="module")
def buggy_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lab_buggy.register_arrival()
    lab_buggy.claim_total_order()
    d = tmp_path_factory.mktemp("sweep")
    (d / "arrival.toml").write_text(lab_buggy.SCENARIO)
    (d / "sweep.toml").write_text(
        'name = "bug"\nscenarios = ["arrival.toml"]\nseeds = 2\n'
        '[grid]\nnodes = [3, 4]\n"settings.rto" = ["15ms"]\n'
    )
    return d / "sweep.toml"


@pytest.fixture(scope="module")
def swept(spark: Any, buggy_sweep: Path) -> tuple[Path, dict[str, Any]]:
    out = buggy_sweep.parent / "out"
    seen: list[float] = []
    notes: list[str] = []
    summary = run_sweep(
        spark,
        load_sweep(buggy_sweep),
        out,
        partitions=3,
        progress=lambda f, note: (seen.append(f), notes.append(note)),
        setup=lab_buggy.register_arrival,
    )
    assert seen and seen[-1] == 1.0
    # the last line counts the runs, not only the Spark tasks
    assert notes[-1] == f"3/3 partitions, {summary['runs']}/{summary['runs']} runs"
    return out, summary


def test_grid_expands_points_and_refuses_a_setting_no_protocol_has(buggy_sweep: Path) -> None:
    sweep = load_sweep(buggy_sweep)
    # nodes x rto x seeds
    assert len(sweep.runs) == 4
    assert {r.point for r in sweep.runs} == {
        "nodes=3,settings.rto=15ms",
        "nodes=4,settings.rto=15ms",
    }
    assert {r.nodes for r in sweep.runs} == {3, 4}
    assert len({r.run for r in sweep.runs}) == 4
    typo = buggy_sweep.with_name("typo.toml")
    typo.write_text(buggy_sweep.read_text() + '"settings.nope" = [1, 2]\n')
    with pytest.raises(LabError, match=r"'settings.nope': 'nope' is a setting of none"):
        load_sweep(typo)


def test_apply_point_nodes_and_faults() -> None:
    doc = {"nodes": ["A", "B"], "nemesis": [{"at": "1s", "action": "crash", "node": "B"}]}
    assert apply_point(doc, {"nodes": 4})["nodes"] == ["A", "B", "C", "D"]
    assert apply_point(doc, {"nodes": 1})["nodes"] == ["A"]
    assert "nemesis" not in apply_point(doc, {"faults": "none"})
    assert apply_point(doc, {"network.loss": 0.1})["network"] == {"loss": 0.1}
    assert doc["nodes"] == ["A", "B"]  # the original is untouched


def test_bad_sweeps_are_named(tmp_path: Path) -> None:
    with pytest.raises(LabError, match="matches no file"):
        parse_sweep({"scenarios": ["none*.toml"]}, "s.toml", base=tmp_path)
    with pytest.raises(LabError, match="unknown key"):
        parse_sweep({"scenarios": ["x"], "sedes": 3}, "s.toml", base=tmp_path)
    (tmp_path / "a.toml").write_text(lab_buggy.SCENARIO)
    with pytest.raises(LabError, match="seeds"):
        parse_sweep({"scenarios": ["a.toml"], "seeds": 0}, "s.toml", base=tmp_path)


def test_sweep_writes_partitioned_traces_identical_to_the_simulator(
    swept: tuple[Path, dict[str, Any]],
) -> None:
    out, summary = swept
    assert summary["runs"] == 4 and summary["partitions"] == 3
    part = out / "traces" / "protocol=arrival" / "scenario=arrival_burst"
    files = sorted(part.glob("*.parquet"))
    assert files
    table = pq.ParquetDataset([str(f) for f in files]).read()
    runs = pq.read_table(out / "runs.parquet").to_pylist()
    assert len(runs) == 4
    one = next(r for r in runs if r["nodes"] == 3 and r["seed"] == 2)
    doc = apply_point(__import__("tomllib").loads(lab_buggy.SCENARIO), json.loads(one["params"]))
    doc["settings"] = {"rto": "15ms"}
    expected = Simulation(parse_scenario(doc, "arrival"), 2, run_id=one["run"]).run().table()
    got = table.filter(__import__("pyarrow.compute").compute.equal(table["run"], one["run"]))
    got = got.sort_by([("node", "ascending"), ("i", "ascending")])
    exp = expected.sort_by([("node", "ascending"), ("i", "ascending")])
    assert got.num_rows == exp.num_rows > 100
    for col in ("node", "t", "i", "kind", "msg", "detail"):
        assert got[col].to_pylist() == exp[col].to_pylist(), col


def test_planted_total_order_bug_is_caught(spark: Any, swept: tuple[Path, dict[str, Any]]) -> None:
    out, _ = swept
    doc = check_paths(
        spark, [out], properties=["total_order", "integrity", "fifo", "mutual_exclusion"]
    )
    to = doc["properties"]["total_order"]
    assert to["status"] == "violated" and to["runs_checked"] == 4 and to["runs_violated"] == 4
    c = to["counterexamples"][0]
    assert c["protocol"] == "arrival" and len(c["nodes"]) == 2 and len(c["msgs"]) == 2
    assert doc["properties"]["integrity"]["status"] == "holds"
    assert doc["properties"]["fifo"]["status"] == "holds"
    assert doc["properties"]["mutual_exclusion"]["status"] == "not applicable"
    assert doc["ok"] is False


def test_metrics_of_a_sweep(spark: Any, swept: tuple[Path, dict[str, Any]]) -> None:
    out, _ = swept
    m = metrics_paths(spark, [out])
    groups = {g["point"]: g for g in m["groups"]}
    assert set(groups) == {"nodes=3,settings.rto=15ms", "nodes=4,settings.rto=15ms"}
    g3, g4 = groups["nodes=3,settings.rto=15ms"], groups["nodes=4,settings.rto=15ms"]
    assert g3["nodes"] == 3 and g3["runs"] == 2
    # 200 msg/s per node for 0.7 s over a 1 s run: ~140 msgs per node per second
    assert g4["messages_per_s"] == pytest.approx(4 * 140, rel=0.05)
    assert g4["packets_per_message"] > 3  # at least one packet per other member
    lat = [r for r in m["latency"] if r["point"] == "nodes=4,settings.rto=15ms"]
    assert len(lat) == 1 and lat[0]["order"] == "agreed"
    assert 0 <= lat[0]["p50_ms"] <= lat[0]["p95_ms"] <= lat[0]["p99_ms"] <= lat[0]["max_ms"]
    assert lat[0]["p95_ms"] < 10


def test_load_names_bad_inputs(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(LabError, match="no such file"):
        load_traces(spark, [tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(LabError, match="holds no"):
        load_traces(spark, [tmp_path / "empty"])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(LabError, match=r"x\.parquet: not a readable Parquet"):
        load_traces(spark, [bad])
    import pyarrow as pa

    short = tmp_path / "short"
    short.mkdir()
    pq.write_table(pa.table({"run": ["r"], "node": ["A"]}), short / "y.parquet")
    with pytest.raises(LabError, match=r"y\.parquet: missing columns: detail, i, kind"):
        load_traces(spark, [short])


LOSSY = Path(__file__).resolve().parents[2] / "scenarios" / "totem" / "lossy.toml"


@pytest.fixture(scope="module")
def no_rtr_swept(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One sweep over the bundled lossy Totem scenario, run by Totem and by Totem with
    the planted bug (:func:`lab_buggy.register_totem_no_rtr`), three seeds each."""
    lab_buggy.register_totem_no_rtr()
    lab_buggy.claim_totem_properties()
    d = tmp_path_factory.mktemp("no_rtr")
    text = LOSSY.read_text()
    (d / "totem.toml").write_text(text)
    buggy = text.replace('protocol = "totem"', f'protocol = "{lab_buggy.TOTEM_NO_RTR}"')
    (d / "buggy.toml").write_text(buggy.replace('"totem_lossy"', '"totem_lossy_no_rtr"'))
    (d / "sweep.toml").write_text(
        'name = "no_rtr"\nscenarios = ["totem.toml", "buggy.toml"]\nseeds = 3\n'
    )
    out = d / "out"
    run_sweep(
        spark, load_sweep(d / "sweep.toml"), out, partitions=2,
        setup=lab_buggy.register_totem_no_rtr,
    )  # fmt: skip
    return out


def test_totem_never_answering_rtr_is_caught_by_delivery_progress(
    spark: Any, no_rtr_swept: Path
) -> None:
    """A Totem that never answers a retransmission request stalls: its members keep one
    ring (fail sets scoped to a membership round no longer make them exclude
    each other) and deliver almost nothing. No safety property may blame it; the
    liveness property delivery_progress does, in every run of it and none of Totem's,
    and the metrics show the same stall."""
    doc = check_paths(spark, [no_rtr_swept])
    props = doc["properties"]
    assert {n for n, p in props.items() if p["status"] == "violated"} == {"delivery_progress"}
    conv = props["convergence"]
    assert conv["protocols"]["totem"] == {"claimed": True, "runs_checked": 3, "violations": 0}
    progress = props["delivery_progress"]
    assert progress["protocols"]["totem"]["violations"] == 0
    assert progress["protocols"]["totem"]["runs_checked"] == 3
    assert progress["protocols"][lab_buggy.TOTEM_NO_RTR]["runs_violated"] == 3
    for c in progress["counterexamples"]:
        assert c["protocol"] == lab_buggy.TOTEM_NO_RTR
        assert c["msgs"] and "undelivered" in c["note"]
    groups = {g["protocol"]: g for g in metrics_paths(spark, [no_rtr_swept])["groups"]}
    good, bad = groups["totem"], groups[lab_buggy.TOTEM_NO_RTR]
    assert good["retransmits"] > 0 and bad["retransmits"] == 0
    assert bad["messages_per_s"] < good["messages_per_s"] / 20


CASE_C = Path(__file__).resolve().parents[2] / "scenarios" / "gms" / "case_c_old_coord_crashes.toml"


@pytest.fixture(scope="module")
def no_status_swept(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """JGRP-136's case C, two_phase, run by GMS and by GMS with the planted bug
    (:func:`lab_buggy.register_gms_no_status`), on a 2 % lossy network, three seeds."""
    lab_buggy.register_gms_no_status()
    d = tmp_path_factory.mktemp("no_status")
    text = CASE_C.read_text()
    (d / "gms.toml").write_text(text)
    buggy = text.replace('protocol = "gms"', f'protocol = "{lab_buggy.GMS_NO_STATUS}"')
    (d / "buggy.toml").write_text(buggy.replace('"gms_case_c"', '"gms_case_c_no_status"'))
    (d / "sweep.toml").write_text(
        'name = "no_status"\nscenarios = ["gms.toml", "buggy.toml"]\nseeds = 3\n'
        '[grid]\n"network.loss" = [0.02]\n"settings.view_install" = ["two_phase"]\n'
    )
    out = d / "out"
    run_sweep(
        spark, load_sweep(d / "sweep.toml"), out, partitions=2,
        setup=lab_buggy.register_gms_no_status,
    )  # fmt: skip
    return out


def test_gms_never_answering_status_view_is_caught_by_a_sweep(
    spark: Any, no_status_swept: Path
) -> None:
    doc = check_paths(spark, [no_status_swept])
    assert doc["ok"] is False
    props = doc["properties"]
    conv = props["convergence"]
    assert conv["status"] == "violated"
    assert conv["protocols"]["gms"] == {"claimed": True, "runs_checked": 3, "violations": 0}
    assert conv["protocols"][lab_buggy.GMS_NO_STATUS]["runs_violated"] == 3
    for c in conv["counterexamples"]:
        assert c["protocol"] == lab_buggy.GMS_NO_STATUS
        assert c["run"].startswith("gms_case_c_no_status@")
    # nothing else is blamed on either, and GMS holds everything it claims
    assert {n for n, p in props.items() if p["status"] == "violated"} == {"convergence"}
    for name in ("view_agreement", "leader_agreement", "integrity", "fifo"):
        assert props[name]["protocols"]["gms"]["violations"] == 0
