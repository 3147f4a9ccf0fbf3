"""Expected violations declared in a sweep file: a sweep whose only violations are the
declared control passes (exit 0) with them counted apart and still shown; a violation
the file does not declare fails (exit 1); an expectation no run fulfils is a warning.

JGRP-136's case A under GMS: plain fails convergence in every run by construction
(the lost VIEW, constant latency), acks never does. Only convergence is claimed, to
keep each check short; its bound is 5 failure-detection timeouts (1 s), so that the
scenario's 1.8 s after its last fault can show plain's split."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ringcast.cli.main import main
from ringcast.lab.expect import Expectation
from ringcast.lab.pipeline import check_paths

ROOT = Path(__file__).resolve().parents[2]
CASE_A = ROOT / "scenarios" / "gms" / "case_a_new_coord_no_takeover.toml"
BOUND = 5.0
CLAIMS = ["--claims", "gms=convergence", "--convergence-bound", str(BOUND)]
WHY = "plain does not wait for acknowledgements (the control)"


@pytest.fixture(autouse=True)
def _keep_session_settings(spark: Any) -> Any:
    """``main`` reuses the fixture's session but sizes its shuffle to the machine: undo."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    yield
    spark.conf.set("spark.sql.shuffle.partitions", before)


def _sweep_file(d: Path, grid: str, expect: str) -> Path:
    f = d / "sweep.toml"
    f.write_text(
        f'name = "control"\nscenarios = ["{CASE_A.as_posix()}"]\nseeds = 1\n'
        f"[grid]\n{grid}\n{expect}"
    )
    return f


PLAIN = f"""
[[expect]]
protocol = "gms"
where = {{ "settings.view_install" = "plain" }}
violates = ["convergence"]
why = "{WHY}"
"""

ACKS = """
[[expect]]
protocol = "gms"
where = { "settings.view_install" = "acks" }
violates = ["convergence"]
why = "a control that does not fail"
"""


@pytest.fixture(scope="module")
def control_run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str, str]:
    """``lab run`` on plain and acks, two runs, plain's convergence declared expected,
    and acks' too (which does not happen): (out, exit code, stdout, stderr)."""
    d = tmp_path_factory.mktemp("control")
    sweep = _sweep_file(d, '"settings.view_install" = ["plain", "acks"]', PLAIN + ACKS)
    out = d / "out"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["lab", "run", "--out", str(out), "--sweep", str(sweep), "-q", *CLAIMS])
    return out, code, stdout.getvalue(), stderr.getvalue()


def test_only_expected_violations_pass_with_them_counted_apart(
    control_run: tuple[Path, int, str, str],
) -> None:
    out, code, printed, _ = control_run
    assert code == 0
    swept = json.loads((out / "sweep.json").read_text())
    assert swept["expect"][0] == {
        "protocol": "gms",
        "where": {"settings.view_install": "plain"},
        "violates": ["convergence"],
        "why": WHY,
    }
    check = json.loads((out / "check.json").read_text())
    assert check["ok"] is True
    conv = check["properties"]["convergence"]
    assert conv["status"] == "violated as expected"
    assert (conv["runs_checked"], conv["runs_violated"], conv["violations"]) == (2, 0, 0)
    assert conv["runs_expected"] == 1 and conv["expected_violations"] >= 1
    gms = conv["protocols"]["gms"]
    assert gms["violations"] == 0 and gms["runs_expected"] == 1
    # the control's counterexamples are still there, marked expected
    assert conv["counterexamples"]
    for c in conv["counterexamples"]:
        assert c["expected"] is True and c["expect"] == 0
        assert "view_install=plain" in c["run"]
    plain, acks = check["expectations"]
    assert plain["runs_violated"] == {"convergence": 1}
    assert acks["runs_violated"] == {"convergence": 0}
    # the expectation that did not materialize is a warning, not a failure
    (warning,) = check["warnings"]
    assert warning == (
        "expected gms at settings.view_install=acks to violate convergence, "
        "but none of its 1 runs did"
    )
    assert "violated as expected" in printed and "runs expected" in printed
    assert "convergence (expected): gms_case_a@settings.view_install=plain:1" in printed
    assert "0 violated, 1 violated as expected" in printed
    assert "VIOLATED" not in printed
    assert (
        f"EXPECTED: convergence violated by gms at settings.view_install=plain in 1 runs: {WHY}"
        in printed
    )
    assert f"WARNING: {warning}" in printed


def test_the_report_shows_the_expected_violations_and_why(
    control_run: tuple[Path, int, str, str],
) -> None:
    out, _, _, _ = control_run
    html = (out / "report.html").read_text()
    assert "no unexpected violation" in html and "violations found" not in html
    assert "class='expected'>violated as expected" in html
    assert "Expected violations (declared in the sweep file)" in html
    assert WHY in html
    assert "<div class='cx expected'" in html
    assert "class='warning'>Warning: expected gms at settings.view_install=acks" in html
    assert "convergence (expected)" in html  # the runs table


def test_lab_check_of_the_sweep_output_knows_the_expectations(
    control_run: tuple[Path, int, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    out, _, _, _ = control_run
    assert main(["lab", "check", str(out), *CLAIMS]) == 0
    printed = capsys.readouterr().out
    assert "violated as expected" in printed and "WARNING: expected gms" in printed


def test_an_undeclared_violation_in_the_same_sweep_fails(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """plain at both losses; only the lossless point is declared: the lossy one's
    violation fails the check, and comes first among the counterexamples."""
    expect = PLAIN.replace(
        '"settings.view_install" = "plain"',
        '"settings.view_install" = "plain", "network.loss" = 0.0',
    )
    sweep = _sweep_file(
        tmp_path, '"settings.view_install" = ["plain"]\n"network.loss" = [0.0, 0.02]', expect
    )
    out = tmp_path / "out"
    assert main(["lab", "sweep", str(sweep), "--out", str(out), "-q"]) == 0
    capsys.readouterr()
    assert main(["lab", "check", str(out), *CLAIMS, "--json", str(tmp_path / "c.json")]) == 1
    printed = capsys.readouterr().out
    check = json.loads((tmp_path / "c.json").read_text())
    assert check["ok"] is False and check["warnings"] == []
    conv = check["properties"]["convergence"]
    assert conv["status"] == "violated"
    assert (conv["runs_violated"], conv["runs_expected"]) == (1, 1)
    assert conv["violations"] >= 1 and conv["expected_violations"] >= 1
    first, *rest = conv["counterexamples"]
    assert first["expected"] is False and "network.loss=0.02" in first["run"]
    assert any(c["expected"] for c in rest)
    assert re.search(r"convergence\s+violated\s+2\s+1\s", printed)  # checked, violated
    where = "network.loss=0.0,settings.view_install=plain"  # sweep.json sorts its keys
    assert f"EXPECTED: convergence violated by gms at {where} in 1 runs" in printed
    # the same runs checked with nothing expected: both count as violations
    doc = check_paths(
        spark, [out], overrides={"gms": {"convergence"}}, expectations=[], convergence_bound=BOUND
    )
    assert doc["properties"]["convergence"]["runs_violated"] == 2
    assert doc["expectations"] == [] and doc["ok"] is False
    # and with every plain run expected (the check's own argument): ok again
    doc = check_paths(
        spark,
        [out],
        overrides={"gms": {"convergence"}},
        expectations=[
            Expectation("gms", ("convergence",), WHY, {"settings.view_install": "plain"})
        ],
        convergence_bound=BOUND,
    )
    assert doc["ok"] is True and doc["properties"]["convergence"]["runs_expected"] == 2
