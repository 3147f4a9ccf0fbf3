"""Tribes across network namespaces: a real partition (a host's link down) splits the
group under two coordinators; when it heals, the two sides merge under one.

Runs on the same lab of namespaces as tests/runtime/test_netns.py (one bridge, three
hosts; built and removed by the ``bridge_lab`` fixture)."""

from __future__ import annotations

import json
from pathlib import Path

from ringcast.trace import read_trace

from .conftest import NETNS_HOSTS as HOSTS
from .conftest import LogWatch, watching
from .netns import Lab, Nodes, await_views, lab_cluster, requires_netns

pytestmark = requires_netns


def _last_view_id(w: LogWatch) -> str | None:
    for r in reversed(w.records):
        if r.get("msg") == "view installed":
            return str(r.get("view"))
    return None


def test_partition_heals_under_one_coordinator(tmp_path: Path, bridge_lab: Lab) -> None:
    path = lab_cluster(tmp_path, bridge_lab, "tribes", name="netns")
    with watching(tmp_path, HOSTS) as logs, Nodes(path, tmp_path, bridge_lab.hosts) as nodes:
        nodes.start_all(["--rate", "50"])
        everyone = set(HOSTS)
        await_views(logs, dict.fromkeys(HOSTS, everyone), 30, "initial view")
        bridge_lab.link("n3", 0, "down")
        await_views(logs, {"n1": {"n1", "n2"}, "n2": {"n1", "n2"}, "n3": {"n3"}}, 30, "partition")
        split = {n: _last_view_id(logs[n]) for n in HOSTS}
        assert split["n1"] == split["n2"] and split["n1"].startswith("n1:")  # type: ignore[union-attr]
        assert split["n3"].startswith("n3:")  # type: ignore[union-attr]
        bridge_lab.link("n3", 0, "up")
        await_views(logs, dict.fromkeys(HOSTS, everyone), 30, "healed view")
        merged = {_last_view_id(logs[n]) for n in HOSTS}
        assert len(merged) == 1 and next(iter(merged)).startswith("n1:")  # type: ignore[union-attr]
        nodes.stop()
    # Every node recorded the merged view with n1 as its leader. (The SIGTERMs above make
    # the nodes leave one by one, so views installed during the shutdown come later.)
    rows = read_trace(tmp_path / "trace").to_pydict()
    leaders: dict[str, set[tuple[str, str]]] = {}
    for node, kind, view, detail in zip(
        rows["node"], rows["kind"], rows["view"], rows["detail"], strict=True
    ):
        if kind == "leader":
            leaders.setdefault(str(node), set()).add((str(view), json.loads(str(detail))["leader"]))
    healed = next(iter(merged))
    assert all((healed, "n1") in leaders.get(n, set()) for n in HOSTS), leaders
