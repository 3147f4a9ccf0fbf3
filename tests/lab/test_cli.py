"""The ``ringcast lab`` command line: exit codes, one-line errors, ``lab run`` end to end,
the Java checks and the report's HTML. In-process calls share the session fixture's
SparkSession; one subprocess test covers the installed entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lab_traces import MUTATIONS, clean_trace, to_table

from ringcast.cli.main import main
from ringcast.lab.errors import LabError
from ringcast.lab.report import render_report
from ringcast.lab.session import check_java, java_version, parse_java_version
from ringcast.lab.spacetime import run_file_name

ROOT = Path(__file__).resolve().parents[2]
# two properties keep each check short; the full suite is test_reference.py's business
CLAIMS = ["--protocol", "totem", "--claims", "totem=total_order+integrity"]


@pytest.fixture(autouse=True)
def _keep_session_settings(spark: Any) -> Any:
    """``main`` reuses the fixture's session but sizes its shuffle to the machine: undo."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    yield
    spark.conf.set("spark.sql.shuffle.partitions", before)


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cli")
    clean = d / "clean.parquet"
    pq.write_table(to_table(clean_trace("clean")), clean)
    swapped, _ = MUTATIONS["swap"][0](clean_trace("bad"))
    bad = d / "swapped.parquet"
    pq.write_table(to_table(swapped), bad)
    short = d / "short.parquet"
    pq.write_table(pa.table({"run": ["r"], "node": ["A"], "t": [0]}), short)
    return {"clean": clean, "bad": bad, "short": short}


def test_check_exit_codes(
    spark: Any, traces: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "check.json"
    assert main(["lab", "check", str(traces["clean"]), *CLAIMS, "--json", str(out)]) == 0
    assert json.loads(out.read_text())["ok"] is True
    capsys.readouterr()
    assert main(["lab", "check", str(traces["bad"]), *CLAIMS]) == 1
    printed = capsys.readouterr().out
    assert "total_order        violated" in printed
    # input errors come before the session, so without the line saying where it runs
    assert main(["lab", "check", str(traces["short"]), *CLAIMS]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "short.parquet" in err[0] and "missing columns" in err[0]
    assert main(["lab", "check", str(tmp_path / "nowhere"), *CLAIMS]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such file" in err[0]


def test_run_on_a_tiny_sweep_writes_everything(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = ROOT / "scenarios" / "totem" / "p2_missing_m3.toml"
    sweep = tmp_path / "tiny.toml"
    sweep.write_text(f'name = "tiny"\nscenarios = ["{scenario.as_posix()}"]\nseeds = 1\n')
    out = tmp_path / "out"
    code = main(["lab", "run", "--out", str(out), "--sweep", str(sweep), "-q"])
    check = json.loads((out / "check.json").read_text())
    assert code == (0 if check["ok"] else 1)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["groups"] and metrics["groups"][0]["protocol"] == "totem"
    html = (out / "report.html").read_text()
    assert "<th>property</th>" in html and 'id="chart-latency"' in html and "total_order" in html
    assert list((out / "traces").rglob("*.parquet"))
    (run,) = [r["run"] for r in metrics["runs"]]
    diagram = out / "timelines" / run_file_name(run)
    assert diagram.is_file() and f"timelines/{run_file_name(run)}" in html
    assert (out / "timelines" / "plotly.min.js").is_file()
    printed = capsys.readouterr().out
    assert "lab run: 1 runs" in printed and f"report: {out / 'report.html'}" in printed
    assert "runs checked" in printed  # the check table
    (phases,) = [line for line in printed.splitlines() if line.startswith("phases: ")]
    for phase in ("spark start", "sweep", "check", "metrics", "report", "other"):
        assert f"{phase} " in phases, phases
    if not check["ok"]:
        assert "VIOLATED: " in printed


def test_the_session_plans_without_python_call_sites(spark: Any) -> None:
    """The lab session does not record a Python call site per DataFrame function (four
    Py4J calls each while the checks plan their frames); a bad column reference still
    fails with an error naming the column."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    with pytest.raises(AnalysisException, match="no_such_column"):
        spark.range(3).select(F.col("no_such_column") + 1).collect()


def test_the_session_does_not_checksum_shuffled_rows(spark: Any) -> None:
    """The lab session leaves out Spark's per-row checksum of shuffled rows (a hash of
    every row the certificate shuffles); the checks' stages are deterministic."""
    checksum = "spark.sql.shuffle.orderIndependentChecksum"
    assert spark.conf.get(f"{checksum}.enabled") == "false"
    assert spark.conf.get(f"{checksum}.enableFullRetryOnMismatch") == "false"


def test_a_small_trace_file_is_read_by_a_task_a_core(spark: Any, tmp_path: Path) -> None:
    """A trace written by ringcast's trace writer is small for the work in it; the lab
    session still splits it between the cores (Spark's default cost of opening a file,
    4 MB, would give the whole file to one task)."""
    from ringcast.lab.load import load_traces
    from ringcast.trace.writer import ParquetTraceWriter

    path = tmp_path / "trace.parquet"
    rows = [r for k in range(20) for r in clean_trace(f"r{k}", seed=k)]
    with ParquetTraceWriter(path, batch_rows=200) as writer:
        writer.write_batch(to_table(rows))
    assert path.stat().st_size < 1 << 20
    assert pq.ParquetFile(path).metadata.num_row_groups >= 4
    trace = load_traces(spark, [path], protocol="raincore")
    assert spark.sparkContext.defaultParallelism == 2
    assert trace.rdd.getNumPartitions() >= 2
    assert trace.count() == len(rows)


def test_java_version_parsing() -> None:
    assert parse_java_version('openjdk version "17.0.9" 2023-10-17') == 17
    assert parse_java_version('java version "1.8.0_381"') == 8
    assert parse_java_version('openjdk version "21" 2023-09-19 LTS') == 21
    with pytest.raises(LabError, match="cannot read the Java version"):
        parse_java_version("no version here")


def test_missing_or_old_java_is_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    traces: dict[str, Path],
) -> None:
    with pytest.raises(LabError, match="Java not found"):
        java_version(str(tmp_path / "no-java"))
    old = tmp_path / "java"
    old.write_text("#!/bin/sh\necho 'java version \"1.8.0_381\"' >&2\n")
    old.chmod(0o755)
    with pytest.raises(LabError, match="Java 8 is too old"):
        check_java(str(old))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nojdk"))
    assert main(["lab", "check", str(traces["clean"])]) == 2  # inputs fine, then Java
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Java not found" in err[0]


def test_report_has_property_table_and_plots() -> None:
    check = {
        "ok": False,
        "properties": {
            "total_order": {
                "status": "violated",
                "runs_checked": 2,
                "runs_violated": 1,
                "violations": 1,
                "protocols": {"totem": {"claimed": True, "runs_checked": 2, "violations": 1}},
                "counterexamples": [
                    {
                        "run": "r1",
                        "protocol": "totem",
                        "t": 5_000_000,
                        "nodes": ["A", "B"],
                        "msgs": ["A:1", "B:2"],
                        "views": ["v1"],
                        "note": "A delivered A:1 before B:2, B the other way round",
                    }
                ],
            },
            "fifo": {
                "status": "holds",
                "runs_checked": 2,
                "violations": 0,
                "protocols": {},
                "counterexamples": [],
            },
        },
    }
    metrics = {
        "latency_histogram": [
            {"protocol": "totem", "order": "agreed", "faults": "none", "bucket": 120, "count": 3}
        ],
        "latency": [],
        "groups": [{"protocol": "totem", "nodes": 3, "messages_per_s": 10.0}],
        "runs": [],
        "convergence": [
            {
                "protocol": "totem",
                "action": "crash",
                "samples": [{"took_ms": 1.0, "run": "r:1", "at_ms": 5.0}],
            }
        ],
    }
    html = render_report(check, metrics)
    assert "<th>property</th>" in html and "class='violated'>violated" in html
    assert "A delivered A:1 before B:2" in html
    assert 'id="chart-latency"' in html and 'id="chart-convergence"' in html
    assert "no runs measured" in html  # no throughput chart without runs
    assert "ringcast lab timeline OUT --run" in html  # the counterexample's diagram


def test_entry_point_exit_code_on_a_corrupted_trace(traces: dict[str, Path]) -> None:
    env = {**os.environ, "RINGCAST_DRIVER_MEMORY": "1g"}
    cmd = [sys.executable, "-m", "ringcast.cli.main", "lab", "check", str(traces["bad"])]
    proc = subprocess.run(
        [*cmd, *CLAIMS, "--master", "local[1]"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "total_order        violated" in proc.stdout
    # the JVM's and log4j's own output is hidden (--verbose shows it): the lab's lines only
    assert proc.stderr.strip().splitlines() == [
        "ringcast lab: Spark master local[1]: the driver's own executor, 1 cores"
    ]


def test_check_with_and_without_certificate(spark: Any, traces: dict[str, Path]) -> None:
    """A run-scoped protocol: the clean steady run is cleared by the screen,
    ``--no-certify`` checks it exactly, and both say the same."""
    from test_certify import steady

    d = traces["clean"].parent
    path = d / "steady.parquet"
    pq.write_table(to_table(steady("s1")), path)
    claims = ["--protocol", "certproto", "--claims", "certproto=total_order+fifo+integrity"]
    docs = []
    for extra in ([], ["--no-certify"]):
        out = d / f"steady{len(extra)}.json"
        assert main(["lab", "check", str(path), *claims, *extra, "--json", str(out)]) == 0
        docs.append(json.loads(out.read_text())["properties"])
    fast, exact = docs
    for name in ("total_order", "fifo", "integrity"):
        assert fast[name]["status"] == exact[name]["status"] == "holds"
        assert (fast[name]["runs_screened"], exact[name]["runs_screened"]) == (1, 0)
        assert fast[name]["runs_certified"] == exact[name]["runs_certified"] == 0


def test_spark_out_of_memory_is_one_line_that_says_what_to_do(tmp_path: Path) -> None:
    import argparse

    from ringcast.cli.lab import OUT_OF_MEMORY, SWEEP_OUT_OF_MEMORY, _guard
    from ringcast.cli.main import CliError

    class JobFailed(Exception):  # what PySpark raises for a failed job: the JVM's text
        pass

    def oom(args: argparse.Namespace) -> int:
        raise JobFailed(
            "An error occurred while calling o123.save.\n: org.apache.spark.SparkException: "
            "Job aborted ... org.apache.spark.memory.SparkOutOfMemoryError: "
            "[UNABLE_TO_ACQUIRE_MEMORY] Unable to acquire 16384 bytes of memory, got 0."
        )

    def other(args: argparse.Namespace) -> int:
        raise JobFailed("something else")

    with pytest.raises(CliError) as e:
        _guard(oom)(argparse.Namespace())
    assert str(e.value) == OUT_OF_MEMORY and "RINGCAST_DRIVER_MEMORY" in OUT_OF_MEMORY
    # a sweep that ran out of memory before its traces were complete says so, and what
    # to raise; once they are written, they are kept for `lab check`
    out = tmp_path / "out"
    swept = argparse.Namespace(sweep=tmp_path / "s.toml", out=out)
    with pytest.raises(CliError) as e:
        _guard(oom)(swept)
    assert str(e.value) == SWEEP_OUT_OF_MEMORY and "RINGCAST_DRIVER_MEMORY" in str(e.value)
    (out / "traces").mkdir(parents=True)
    (out / "traces" / "_SUCCESS").touch()
    with pytest.raises(CliError) as e:
        _guard(oom)(swept)
    assert str(e.value) == OUT_OF_MEMORY
    with pytest.raises(JobFailed):  # any other failure is not hidden
        _guard(other)(argparse.Namespace())


def test_a_master_port_that_does_not_answer_is_one_line(traces: dict[str, Path]) -> None:
    """Something accepts connections at the master's address but is no Spark master:
    after RINGCAST_MASTER_WAIT_S, one line naming it, not Spark's minute of retries."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # connections complete in the kernel; nothing answers
        master = f"spark://127.0.0.1:{silent.getsockname()[1]}"
        env = {**os.environ, "RINGCAST_DRIVER_MEMORY": "1g", "RINGCAST_MASTER_WAIT_S": "2"}
        cmd = [sys.executable, "-m", "ringcast.cli.main", "lab", "check", str(traces["clean"])]
        proc = subprocess.run(
            [*cmd, "--master", master],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        f"ringcast lab: error: the Spark master {master} did not register this application "
        "within 2 s: is a Spark master listening there (spark://HOST:7077, not its web UI's "
        "port)? RINGCAST_MASTER_WAIT_S sets the wait"
    ]
