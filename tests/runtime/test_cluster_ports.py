"""A generated cluster file never gives two nodes one port, even when the kernel hands
the same free port out twice (it may, once the probe socket is closed: a 5-node
``cluster up`` on a loaded machine failed with "127.0.0.1:35236 is also used by 'n1'")."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from ringcast.runtime import cluster


def test_every_port_of_a_cluster_file_is_distinct(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a kernel that repeats each port once before moving on
    ports = itertools.chain.from_iterable((p, p) for p in itertools.count(40000))
    monkeypatch.setattr(cluster, "free_port", lambda kind=None: next(ports))
    path = cluster.write_cluster(tmp_path, nodes=5, protocol="totem", app_members=2)
    used = [int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", path.read_text())]
    assert len(used) == 5 * 2 + 2 and len(set(used)) == len(used)


def test_distinct_port_skips_what_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    given = iter([7000, 7000, 7001])
    monkeypatch.setattr(cluster, "free_port", lambda kind=None: next(given))
    taken: set[int] = set()
    assert [cluster.distinct_port(taken), cluster.distinct_port(taken)] == [7000, 7001]
