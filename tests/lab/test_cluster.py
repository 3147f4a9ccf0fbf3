"""The lab beyond one machine: ``ringcast lab`` on a real Spark standalone cluster and
through Spark Connect gives the same ``check.json``, ``metrics.json`` and traces as on
``local[2]``, with ringcast shipped to executors whose Python lacks it, and a sweep
survives a worker killed in its middle.

Every run is a ``ringcast lab`` subprocess (one SparkSession per process: the test
session's own, local, cannot also connect to the cluster). They share the session's
one cluster (``conftest.py``) and a tiny sweep: six runs of three protocols.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import ringcast.lab.driver
from ringcast.lab.localcluster import ConnectServer, LocalCluster, spark_home
from ringcast.lab.session import (
    Where,
    expected_executors,
    is_connect,
    job_context,
    resolve_remote,
)
from ringcast.lab.ship import build_zip
from ringcast.protocols import registry

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ("totem/p2_missing_m3", "raincore/crash", "basic/crash_restart")
RUN_TIMEOUT = 900
# two executors of one core and 512 MiB: the session waits for both before its first job
CLUSTER_CONF = (
    "--conf", "spark.executor.memory=512m",
    "--conf", "spark.executor.cores=1",
    "--conf", "spark.cores.max=2",
)  # fmt: skip


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SPARK_REMOTE", "SPARK_MASTER", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
    }
    # the master these tests start is there: on a loaded machine registering with it can
    # take longer than the 10 s after which a user is told none is listening
    env.update(
        RINGCAST_DRIVER_MEMORY="1g",
        SPARK_LOCAL_IP="127.0.0.1",
        RINGCAST_MASTER_WAIT_S="120",
        **extra,
    )
    return env


def _lab(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return _spawn(cwd, [sys.executable, "-m", "ringcast.cli.main", "lab", *args], env)


def _spawn(cwd: Path, cmd: list[str], env: dict[str, str] | None) -> subprocess.Popen[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env or _env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    out, err = proc.communicate(timeout=RUN_TIMEOUT)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out[-3000:]}\n{err[-3000:]}"
    return out, err


def _cluster_args(cluster: LocalCluster, python: Path) -> list[str]:
    return [
        "--master",
        cluster.master,
        *CLUSTER_CONF,
        "--conf",
        f"spark.pyspark.python={python}",
    ]


def trace_rows(out: Path) -> list[tuple[Any, ...]]:
    """Every trace row of a sweep output with its protocol and scenario, sorted."""
    table = ds.dataset(out / "traces", format="parquet", partitioning="hive").to_table()
    rows = [tuple(sorted((k, repr(v)) for k, v in row.items())) for row in table.to_pylist()]
    return sorted(rows)


def _approximate(doc: Any, path: str = "") -> Any:
    """``metrics.json`` with its percentiles (Spark's ``percentile_approx``, whose
    answer within its rank error can depend on the order partial aggregates merge
    in) rounded to 0.1 ms; everything else as it is."""
    if isinstance(doc, dict):
        return {k: _approximate(v, k) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_approximate(v, path) for v in doc]
    if isinstance(doc, float) and path.startswith(("p50", "p95", "p99", "token_rotation")):
        return round(doc, 1)
    return doc


def assert_same_results(
    got: Path, want: Path, *, checked: bool = True, exact_percentiles: bool = True
) -> None:
    """Same traces (sorted rows) and run table; with ``checked``, the same
    ``check.json`` byte for byte and the same ``metrics.json`` (byte for byte, or
    with its approximate percentiles to 0.1 ms)."""
    assert trace_rows(got) == trace_rows(want)
    assert pq.read_table(got / "runs.parquet").equals(pq.read_table(want / "runs.parquet"))
    if checked:
        assert (got / "check.json").read_text() == (want / "check.json").read_text()
        metrics = [(d / "metrics.json").read_text() for d in (got, want)]
        if exact_percentiles:
            assert metrics[0] == metrics[1]
        else:
            assert _approximate(json.loads(metrics[0])) == _approximate(json.loads(metrics[1]))


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cluster-sweep")
    paths = ", ".join(f'"{(ROOT / "scenarios" / s).as_posix()}.toml"' for s in SCENARIOS)
    (d / "tiny.toml").write_text(f'name = "tiny"\nscenarios = [{paths}]\nseeds = 2\n')
    return d / "tiny.toml"


@pytest.fixture(scope="module")
def local_run(sweep_file: Path) -> tuple[Path, str]:
    """The reference: ``lab run`` on ``local[2]`` (its output directory, its stderr)."""
    cwd = sweep_file.parent / "local"
    args = ["run", "--sweep", str(sweep_file), "--out", "out", "--partitions", "6", "-q"]
    _out, err = _finish(_lab(cwd, *args, "--master", "local[2]"))
    return cwd / "out", err


def test_the_shipped_zip_imports_and_finds_the_protocols(
    executor_python: tuple[Path, Path],
) -> None:
    """The zip the driver ships is enough for a Python without ringcast: the package
    (``ringcast/lab``, a namespace package in the source, gets an ``__init__.py``) and
    its entry points, through which the protocols are found."""
    path, files = build_zip()
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
    assert len(names) == files
    assert {"ringcast/__init__.py", "ringcast/lab/__init__.py", "ringcast/sim/__init__.py"} <= names
    assert any(n.endswith(".dist-info/entry_points.txt") for n in names)
    assert build_zip()[0] == path  # same content, same file
    python, _log = executor_python
    code = (
        "import ringcast, sys; from ringcast.protocols import registry; "
        "assert ringcast.__file__.startswith(sys.argv[1]), ringcast.__file__; "
        "print(' '.join(registry.builtin_names()))"
    )
    proc = subprocess.run(
        [python, "-c", code, str(path)],
        env={**_env(), "PYTHONPATH": str(path)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == registry.builtin_names()


def test_where_lines() -> None:
    assert Where("local[2]", 1, 2).line() == (
        "Spark master local[2]: the driver's own executor, 2 cores"
    )
    two = Where("spark://h:7077", 2, 2)
    assert two.line() == "Spark master spark://h:7077: 2 executors, 2 cores"
    connect = Where("local[2]", None, 2, "sc://h:15002")
    assert connect.line() == "Spark Connect sc://h:15002 (server master local[2], 2 cores)"


def test_the_report_header_says_where_it_ran() -> None:
    from ringcast.lab.report import render_report

    sweep = Where("spark://h:7077", 2, 2).as_dict()
    checks = Where("local[2]", None, 2, "sc://h:15002").as_dict()
    ran = {"sweep": sweep, "checks": checks}
    html = render_report({"ok": True, "properties": {}}, {}, None, ran)
    assert (
        "Ran: sweep on Spark master spark://h:7077: 2 executors, 2 cores; "
        "checks on Spark Connect sc://h:15002 (server master local[2], 2 cores)."
    ) in html


def test_checks_under_connect_get_a_context_that_sets_nothing() -> None:
    """Spark Connect has no SparkContext: the checks' pool and job descriptions are
    set on a stand-in that does nothing."""

    class Remote:
        __module__ = "pyspark.sql.connect.session"

    assert is_connect(Remote())
    sc = job_context(Remote())
    sc.setLocalProperty("spark.scheduler.pool", "certificate")
    sc.setJobDescription("ringcast check")


def test_executors_expected_from_the_settings() -> None:
    assert expected_executors({"spark.executor.instances": "8"}) == 8
    assert expected_executors({"spark.cores.max": "4", "spark.executor.cores": "2"}) == 2
    assert expected_executors({"spark.cores.max": "4"}) is None
    assert expected_executors({}) is None


def test_remote_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert resolve_remote(None) is None
    monkeypatch.setenv("SPARK_REMOTE", "sc://h:1")
    assert resolve_remote(None) == "sc://h:1"
    assert resolve_remote("sc://other:2") == "sc://other:2"


def test_master_and_remote_together_is_one_line(tmp_path: Path) -> None:
    args = ["check", str(tmp_path), "--master", "local[1]", "--remote", "sc://127.0.0.1:1"]
    proc = _lab(tmp_path, *args)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert err.strip().splitlines() == [
        "ringcast lab: error: --master local[1] and --remote sc://127.0.0.1:1: give one of them"
    ]


def test_local_run_says_where_and_ships_nothing(local_run: tuple[Path, str]) -> None:
    out, err = local_run
    assert "ringcast lab: Spark master local[2]: the driver's own executor, 2 cores" in err
    assert "shipped" not in err
    where = json.loads((out / "where.json").read_text())
    assert where["sweep"]["master"] == where["checks"]["master"] == "local[2]"


def test_standalone_cluster_gives_the_local_results(
    spark_cluster: LocalCluster,
    executor_python: tuple[Path, Path],
    sweep_file: Path,
    local_run: tuple[Path, str],
) -> None:
    """``lab run --master spark://...`` on two one-core workers whose Python has no
    ringcast: the driver ships it, says so and where it runs, and the sweep, check
    and metrics are those of ``local[2]``; the report's header says where."""
    python, starts = executor_python
    cwd = sweep_file.parent / "standalone"
    args = ["run", "--sweep", str(sweep_file), "--out", "out", "--partitions", "6", "-q"]
    _out, err = _finish(_lab(cwd, *args, *_cluster_args(spark_cluster, python)))
    line = f"ringcast lab: Spark master {spark_cluster.master}: 2 executors, 2 cores"
    assert line in err, err[-3000:]
    assert "ringcast lab: shipped ringcast-" in err and "by addPyFile" in err
    assert starts.read_text().strip(), "the executors did not run the Python without ringcast"
    out = cwd / "out"
    assert_same_results(out, local_run[0])
    html = (out / "report.html").read_text()
    assert f"Ran: sweep on Spark master {spark_cluster.master}: 2 executors, 2 cores" in html
    assert f"checks on Spark master {spark_cluster.master}" in html


@pytest.fixture(scope="module")
def connect_server(
    tmp_path_factory: pytest.TempPathFactory, executor_python: tuple[Path, Path]
) -> Iterator[ConnectServer]:
    """A Spark Connect server (``start-connect-server.sh``, master ``local[2]``) whose
    Python workers lack ringcast."""
    server = ConnectServer(tmp_path_factory.mktemp("spark-connect"), python=executor_python[0])
    try:
        server.start()
        yield server
    finally:
        server.stop()


def test_spark_connect_gives_the_local_results(
    connect_server: ConnectServer, sweep_file: Path, local_run: tuple[Path, str]
) -> None:
    """``SPARK_REMOTE=sc://...``: the sweep, check, metrics and report go through Spark
    Connect with ringcast uploaded as an artifact, and give the local results; what
    Connect lacks (a SparkContext: scheduler pools, job descriptions) is said."""
    cwd = sweep_file.parent / "connect"
    args = ["run", "--sweep", str(sweep_file), "--out", "out", "--partitions", "6", "-q"]
    _out, err = _finish(_lab(cwd, *args, env=_env(SPARK_REMOTE=connect_server.url)))
    assert f"ringcast lab: Spark Connect {connect_server.url} (server master local[2]" in err
    assert "ringcast lab: shipped ringcast-" in err and "by artifact" in err
    assert "without a scheduler pool of their own" in err
    out = cwd / "out"
    # the server plans the metrics' aggregations its own way: percentile_approx may
    # answer another sample within its error (docs/lab.md, Running on a cluster)
    assert_same_results(out, local_run[0], exact_percentiles=False)
    assert f"Ran: sweep on Spark Connect {connect_server.url}" in (out / "report.html").read_text()


def _committed_tasks(out: Path) -> int:
    return len(list((out / "traces" / "_temporary").glob("*/task_*")))


def test_zz_spark_submit_with_a_worker_killed_mid_sweep_gives_the_local_results(
    spark_cluster: LocalCluster,
    executor_python: tuple[Path, Path],
    sweep_file: Path,
    local_run: tuple[Path, str],
) -> None:
    """``spark-submit`` of the lab's driver program to the standalone master (client
    mode): the session keeps the submitted master and ships ringcast. ``kill -9`` of
    one worker's JVM once the sweep has committed a task and before it ends: its
    executor goes with it, its tasks are run again on the other worker, and the traces
    and run table are those of the undisturbed sweep on ``local[2]`` (no run lost or
    written twice). Runs last: the cluster has one worker after it."""
    python, _starts = executor_python
    cwd = sweep_file.parent / "submitted"
    out = cwd / "out"
    cmd = [
        str(spark_home() / "bin" / "spark-submit"),
        "--master", spark_cluster.master,
        "--driver-memory", "1g",
        *CLUSTER_CONF,
        "--conf", f"spark.pyspark.python={python}",
        "--conf", f"spark.pyspark.driver.python={sys.executable}",
        ringcast.lab.driver.__file__,
        "lab", "sweep", str(sweep_file), "--out", "out", "--partitions", "6", "-q",
    ]  # fmt: skip
    proc = _spawn(cwd, cmd, _env())
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        while _committed_tasks(out) == 0 and proc.poll() is None:
            assert time.monotonic() < deadline, "no task committed"
            time.sleep(0.05)
        assert proc.poll() is None and not (out / "traces" / "_SUCCESS").exists(), (
            "the sweep ended before a worker could be killed"
        )
        committed = _committed_tasks(out)
        assert committed < 6
        spark_cluster.kill("worker1")
        stdout, stderr = _finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    said = stdout + stderr  # spark-submit merges the driver program's stderr into its stdout
    assert f"ringcast lab: Spark master {spark_cluster.master}: 2 executors, 2 cores" in said
    assert "ringcast lab: shipped ringcast-" in said
    assert (out / "traces" / "_SUCCESS").exists()
    assert_same_results(out, local_run[0], checked=False)
    runs = ds.dataset(out / "traces", format="parquet", partitioning="hive").to_table(["run"])
    assert len(set(runs.column("run").to_pylist())) == 6
