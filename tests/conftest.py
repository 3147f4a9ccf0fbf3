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
  and then these in two workers, one test file at a time each (``--dist loadfile``), so
  that a module's fixtures are built once, the longest files first
  (:data:`LONGEST_FIRST`). Each worker is a test session of its own,
  with its own SparkSession when one of its files asks for one; a test picks free ports
  and namespaces of its own, so tests in the two workers never share one. (Not
  ``--dist loadgroup``: with pytest 9.2, pytest-xdist 3.8 ignores ``xdist_group``
  without a word and spreads the tests one by one,
  https://github.com/pytest-dev/pytest-xdist/issues/1386);
* ``alone``: the real-process tests that need the machine to themselves
  (:data:`ALONE_FILES`): ``./dev test`` runs them last, one at a time.

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
ALONE_FILES = ("runtime/test_steady_cluster.py",)
"""Real-process tests that need the machine to themselves (marker ``alone``): ``./dev
test`` runs them last, one at a time, after the other serial tests. The steady-cluster
test takes one of the two cores with a CPU burner on purpose; beside the other worker's
JVMs, a node was starved past its token timeout and the cluster flapped."""


LONGEST_FIRST = (
    "lab/test_cluster.py",
    "lab/test_reference.py",
    "runtime/test_netns_rrp.py",
    "lab/test_certify.py",
    "lab/test_hostile_sweep.py",
    "lab/test_check_budget.py",
    "runtime/test_netns_hostile.py",
    "lab/test_expect.py",
    "live/test_live.py",
)
"""The serial files that take longest (two to ten minutes each on two shared cores),
collected first, longest first: the serial pass's two workers take files in collection
order, so a long file taken last would keep one worker busy while the other idles."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: left out of the quick subset (./dev test --quick)")
    config.addinivalue_line("markers", "randomized: a sweep of random seeds or inputs")
    config.addinivalue_line(
        "markers", "serial: starts Spark or real processes, or keeps real time: a file at a time"
    )
    config.addinivalue_line(
        "markers", "alone: a real-process test run after every other, with nothing beside it"
    )


def _rel(item: pytest.Item) -> str:
    """The test file's path under tests/ ("" outside it)."""
    try:
        return item.path.relative_to(TESTS).as_posix()
    except ValueError:
        return ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        rel = _rel(item)
        if not rel:
            continue
        folder = rel.split("/", 1)[0]
        if folder in SLOW_FOLDERS or rel in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if item.path.name in RANDOMIZED_FILES or rel.startswith("fuzz/"):
            item.add_marker(pytest.mark.randomized)
        if folder in SERIAL_FOLDERS:
            item.add_marker(pytest.mark.serial)
        if rel in ALONE_FILES:
            item.add_marker(pytest.mark.alone)
    rank = {rel: k for k, rel in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(_rel(item), len(rank)))  # stable: the rest as collected
