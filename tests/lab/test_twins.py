"""The simulator and real processes side by side in the report: runs paired by id,
verdicts and measures compared, differences flagged; the measures it reads (per run
convergence, undelivered messages, the runs a property is violated in) from small
synthetic traces; ``lab report --twin`` refusing two outputs of one kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lab_traces import MS, _row, renumber, to_table

from ringcast.cli.main import main
from ringcast.lab.checks import run_checks
from ringcast.lab.metrics import compute_metrics
from ringcast.lab.report import render_report
from ringcast.lab.twins import compare, mode_of, side_of

ABC = ["A", "B", "C"]


def _prop(violated: list[str], checked: int = 1) -> dict[str, Any]:
    return {
        "status": "violated" if violated else "holds",
        "violated_runs": violated,
        "counterexamples": [],
        "protocols": {"tribes": {"claimed": True, "runs_checked": checked}},
    }


def _side(
    *, crash: float, heal: float | None, rate: float, lost: int, violated: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    check = {
        "properties": {
            "view_agreement": _prop(violated),
            "mutual_exclusion": _prop([], checked=0),
        }
    }
    runs = [
        {"run": r, "protocol": "tribes", "scenario": "s", "seed": 1, "deliveries_per_s": rate}
        | {"undelivered": lost}
        for r in ("s:1", "s:2")
    ]
    conv = [{"run": "s:1", "action": "crash", "p50_ms": crash}]
    if heal is not None:
        conv.append({"run": "s:1", "action": "heal", "p50_ms": heal})
    return check, {"runs": runs, "run_convergence": conv}


def test_verdicts_and_measures_are_compared_and_flagged() -> None:
    doc = compare(
        {
            "sim": _side(crash=100.0, heal=50.0, rate=1000.0, lost=0, violated=[]),
            "live": _side(crash=180.0, heal=400.0, rate=400.0, lost=3, violated=["s:2"]),
        }
    )
    one, two = doc["pairs"]
    assert one["run"] == "s:1" and two["run"] == "s:2"
    # 1.8x is within the factor; 8x, 0.4x and 0 against 3 are not
    assert one["measures"]["crash_ms"] == {
        "label": "crash to the survivors' view (detection), ms",
        "sim": 100.0,
        "live": 180.0,
        "ratio": 1.8,
        "differs": False,
    }
    assert one["differs"] == ["heal_ms", "deliveries_per_s", "undelivered"]
    assert one["measures"]["failover_ms"]["sim"] is None  # no network went down
    assert one["verdicts"]["view_agreement"] == {"sim": "holds", "live": "holds", "differs": False}
    assert one["verdicts"]["mutual_exclusion"]["sim"] == "n/a"
    assert two["verdicts"]["view_agreement"] == {
        "sim": "holds",
        "live": "violated",
        "differs": True,
    }
    assert "view_agreement" in two["differs"] and "crash_ms" not in two["differs"]
    html = render_report({"ok": True, "properties": {}}, {}, twins=doc)
    assert "Simulated and live, side by side" in html
    assert "differs: heal_ms, deliveries_per_s, undelivered" in html
    assert "mutual_exclusion" not in html.split("id='properties'")[0]  # n/a both sides


def test_runs_without_a_twin_are_listed() -> None:
    sim = _side(crash=1.0, heal=None, rate=1.0, lost=0, violated=[])
    live = _side(crash=1.0, heal=None, rate=1.0, lost=0, violated=[])
    live[1]["runs"] = live[1]["runs"][:1]
    doc = compare({"sim": sim, "live": live})
    assert [p["run"] for p in doc["pairs"]] == ["s:1"]
    del sim[1]["runs"][0]["seed"]  # a single run's output: the seed from its run id
    assert compare({"sim": sim, "live": live})["pairs"][0]["seed"] == 1
    assert doc["only_sim"] == ["s:2"] and doc["only_live"] == []
    assert doc["pairs"][0]["differs"] == []


def _out(path: Path, summary: dict[str, Any]) -> Path:
    path.mkdir()
    (path / "summary.json").write_text(json.dumps(summary))
    check, metrics = _side(crash=1.0, heal=None, rate=1.0, lost=0, violated=[])
    (path / "check.json").write_text(json.dumps({"ok": True, **check}))
    (path / "metrics.json").write_text(json.dumps(metrics))
    return path


def test_report_twin_needs_one_simulated_and_one_live_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _out(tmp_path / "a", {"protocol": "tribes"})
    b = _out(tmp_path / "b", {"protocol": "tribes"})
    assert (mode_of(a), mode_of(_out(tmp_path / "c", {"mode": "live"}))) == ("sim", "live")
    rc = main(["lab", "report", str(a), "--twin", str(b), "--out", str(tmp_path / "r.html")])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "are both sim outputs; give one simulated and one live, or a live run of ringcast "
        "and one of a reference system"
    )
    assert "\n" not in err


def test_the_measures_a_side_by_side_reads(spark: Any) -> None:
    """C crashes at 100 ms and A and B install a view of two at 160 ms; one of A's
    messages is never delivered; B and C disagree on a view's members."""
    from pyspark.sql import functions as F

    rows: list[dict[str, Any]] = []
    for run in ("ok", "bad"):
        rows += [_row(run, n, 0, "view", view="v1", members=ABC, transitional=False) for n in ABC]
        rows.append(_row(run, "A", 10 * MS, "submit", msg="A:1", order="agreed", size=10))
        rows += [_row(run, n, 11 * MS, "deliver", msg="A:1", order="agreed", size=10) for n in ABC]
        rows.append(_row(run, "A", 20 * MS, "submit", msg="A:2", order="agreed", size=10))
        rows.append(_row(run, "C", 100 * MS, "fault", detail={"action": "crash"}))
        last = ["A", "B"] if run == "ok" else ["A"]
        rows += [
            _row(run, n, 160 * MS, "view", view="v2", members=last if n == "A" else ["A", "B"])
            | {"transitional": False}
            for n in ("A", "B")
        ]
        rows += [_row(run, n, 1000 * MS, "stats", detail={"state": "up"}) for n in ABC]
    trace = (
        spark.createDataFrame(to_table(renumber(rows)))
        .withColumn("protocol", F.lit("tribes"))
        .withColumn("scenario", F.lit("synthetic"))
    )
    m = compute_metrics(trace)
    assert {(r["run"], r["action"], r["p50_ms"]) for r in m["run_convergence"]} == {
        ("ok", "crash", 60.0),
        ("bad", "crash", 60.0),
    }
    assert {r["run"]: r["undelivered"] for r in m["runs"]} == {"ok": 1, "bad": 1}
    (va,) = run_checks(trace, properties=["view_agreement"])
    assert va.violated_runs == ["bad"]


def test_ringcast_beside_a_reference_compares_only_what_both_check(tmp_path: Path) -> None:
    """A live run of ringcast's totem and one of corosync (same run id): a property
    corosync does not claim is no difference; one both check and that differs is."""

    def side(protocol: str, props: dict[str, list[str] | None]) -> Any:
        check = {
            "properties": {
                name: {
                    "status": "violated" if violated else "holds",
                    "violated_runs": violated or [],
                    "counterexamples": [],
                    "protocols": {protocol: {"runs_checked": 0 if violated is None else 1}},
                }
                for name, violated in props.items()
            }
        }
        metrics = {
            "runs": [
                {
                    "run": "c:1",
                    "protocol": protocol,
                    "scenario": "c",
                    "seed": 1,
                    "deliveries_per_s": 480.0,
                    "undelivered": 0,
                }
            ],
            "run_convergence": [
                {"run": "c:1", "action": "crash", "p50_ms": 210.0 if protocol == "totem" else 447.0}
            ],
        }
        return check, metrics

    ours = side("totem", {"safe_delivery": [], "total_order": [], "integrity": []})
    theirs = side("corosync", {"safe_delivery": None, "total_order": ["c:1"], "integrity": []})
    doc = compare({"corosync": theirs, "live": ours})
    assert doc["sides"] == ["live", "corosync"]
    (pair,) = doc["pairs"]
    assert pair["protocols"] == {"live": "totem", "corosync": "corosync"}
    assert pair["verdicts"]["safe_delivery"]["differs"] is False  # n/a at corosync
    assert pair["verdicts"]["total_order"] == {
        "live": "holds",
        "corosync": "violated",
        "differs": True,
    }
    assert pair["measures"]["crash_ms"]["ratio"] == 2.13
    assert pair["differs"] == ["total_order", "crash_ms"]
    html = render_report({"properties": {}}, {}, twins=doc)
    assert "Ringcast (live) and corosync, side by side" in html
    a = _out(tmp_path / "a", {"mode": "live", "system": "corosync"})
    assert side_of(a) == "corosync" and side_of(_out(tmp_path / "b", {"mode": "live"})) == "live"
