"""The lab's cluster fixtures: one Spark standalone cluster (a master and two workers
of one core each, on loopback, from the installed PySpark) for the whole test
session, whose executors run a Python without ringcast."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ringcast.lab.localcluster import LocalCluster, bare_python


@pytest.fixture(scope="session")
def executor_python(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the executors' Python, the file it logs each start to): the base interpreter
    with pyarrow, numpy and pandas importable and ringcast not."""
    d = tmp_path_factory.mktemp("executor-python")
    log = d / "starts.log"
    python = bare_python(d, log=log)
    lacks = subprocess.run([python, "-c", "import ringcast"], capture_output=True, text=True)
    assert lacks.returncode != 0 and "No module named 'ringcast'" in lacks.stderr
    has = subprocess.run([python, "-c", "import pyarrow, numpy, pandas"], capture_output=True)
    assert has.returncode == 0, has.stderr
    log.write_text("")
    return python, log


@pytest.fixture(scope="session")
def spark_cluster(
    tmp_path_factory: pytest.TempPathFactory, executor_python: tuple[Path, Path]
) -> Iterator[LocalCluster]:
    """A standalone master and two one-core workers (1 GiB each), stopped at the end of
    the session. A test that kills a worker leaves one fewer: such a test runs last
    (``test_cluster.py``'s last test)."""
    cluster = LocalCluster(tmp_path_factory.mktemp("spark-cluster"), python=executor_python[0])
    try:
        cluster.start(workers=2)
        yield cluster
    finally:
        cluster.stop()
