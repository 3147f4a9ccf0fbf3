"""Fixtures shared by every test folder: one SparkSession for the whole test session
(the lab's tests and the runtime's, which check real traces with it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ringcast.lab.session import spark_session


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = spark_session("local[2]", shuffle_partitions=2, app_name="ringcast-lab-tests")
    yield session
    session.stop()
