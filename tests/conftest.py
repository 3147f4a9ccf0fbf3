"""Fixtures shared by every test folder: one SparkSession for the whole test session
(the lab's tests and the runtime's, which check real traces with it); and the markers of
the day-to-day subset (``./dev test --quick``, ``pytest -m "not slow and not randomized"``):

* ``slow``: the folders that start Spark, real node processes or network namespaces
  (``lab``, ``runtime``, ``live``), the fuzzers, and the longest simulated suites;
* ``randomized``: the seed sweeps (each family's ``test_randomized.py``, the hostile
  generator's draws in ``test_hostile.py``) and the fuzzers, whose worth is in many
  random draws;
* ``serial``: the folders whose tests start Spark, real node processes, network
  namespaces, JVMs or a browser, or keep real time (``lab``, ``runtime``, ``live``,
  ``references``). ``./dev test`` runs every other test first, spread over the machine's
  cores (pytest-xdist: simulated runs are seeded, so where a test runs changes nothing),
  and then these one at a time in one process, so that they share one SparkSession and
  no test's timers compete with another's.

CI runs everything (``./dev test``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ringcast.lab.session import spark_session


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = spark_session("local[2]", shuffle_partitions=2, app_name="ringcast-lab-tests")
    yield session
    session.stop()


TESTS = Path(__file__).parent
SLOW_FOLDERS = ("lab", "runtime", "live", "fuzz")
SLOW_FILES = ("sim/test_bounded_state.py", "protocols/totem/test_rrp.py")
"""Simulated suites of 30 s and more on a shared 2-core machine."""
RANDOMIZED_FILES = ("test_randomized.py", "test_hostile.py")
SERIAL_FOLDERS = ("lab", "runtime", "live", "references")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: left out of the quick subset (./dev test --quick)")
    config.addinivalue_line("markers", "randomized: a sweep of random seeds or inputs")
    config.addinivalue_line(
        "markers", "serial: starts Spark or real processes, or keeps real time: one at a time"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        try:
            rel = item.path.relative_to(TESTS).as_posix()
        except ValueError:
            continue
        folder = rel.split("/", 1)[0]
        if folder in SLOW_FOLDERS or rel in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if folder in SERIAL_FOLDERS:
            item.add_marker(pytest.mark.serial)
        if item.path.name in RANDOMIZED_FILES or rel.startswith("fuzz/"):
            item.add_marker(pytest.mark.randomized)
