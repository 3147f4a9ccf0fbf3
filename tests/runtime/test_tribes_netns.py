"""Tribes across network namespaces: a real partition (a host's link down) splits the
group under two coordinators; when it heals, the two sides merge under one.

Runs on the same lab of namespaces as tests/runtime/test_netns.py (one bridge, three
hosts; built and removed by the ``bridge_lab`` fixture)."""

from __future__ import annotations

import json
from pathlib import Path

from ringcast.trace import read_trace

from .conftest import NETNS_HOSTS as HOSTS
from .conftest import LogWatch, wait_all, watching
from .netns import Lab, Nodes, await_views, lab_cluster, requires_netns

pytestmark = requires_netns


def _last_view_id(w: LogWatch) -> str | None:
    for r in reversed(w.records):
        if r.get("msg") == "view installed":
            return str(r.get("view"))
    return None


def _split(logs: dict[str, LogWatch]) -> bool:
    ids = {n: _last_view_id(logs[n]) or "" for n in HOSTS}
    return (
        ids["n1"] == ids["n2"]
        and ids["n1"].startswith("n1:")
        and ids["n3"].startswith("n3:")
        and set(logs["n1"].last_view() or ()) == {"n1", "n2"}
        and set(logs["n3"].last_view() or ()) == {"n3"}
    )


def _merged(logs: dict[str, LogWatch], everyone: set[str]) -> str | None:
    """The view id every node last installed, if it is the same everywhere, n1's, and
    of ``everyone``."""
    ids = {_last_view_id(logs[n]) for n in HOSTS}
    if len(ids) != 1:
        return None
    (vid,) = ids
    if vid is None or not vid.startswith("n1:"):
        return None
    return vid if all(set(logs[n].last_view() or ()) == everyone for n in HOSTS) else None


def test_partition_heals_under_one_coordinator(tmp_path: Path, bridge_lab: Lab) -> None:
    path = lab_cluster(tmp_path, bridge_lab, "tribes", name="netns")
    with watching(tmp_path, HOSTS) as logs, Nodes(path, tmp_path, bridge_lab.hosts) as nodes:
        nodes.start_all(["--rate", "50"])
        everyone = set(HOSTS)
        await_views(logs, dict.fromkeys(HOSTS, everyone), 30, "initial view")
        bridge_lab.link("n3", 0, "down")
        await_views(logs, {"n1": {"n1", "n2"}, "n2": {"n1", "n2"}, "n3": {"n3"}}, 30, "partition")
        # The two sides under two coordinators, at the same moment: n1 and n2 in one view
        # of n1's, n3 in its own.
        wait_all(logs, lambda: _split(logs), 30, "n1 and n2 under n1, n3 under n3")
        bridge_lab.link("n3", 0, "up")
        await_views(logs, dict.fromkeys(HOSTS, everyone), 30, "healed view")
        # One view of all three under n1, the same at every node at the same moment (a
        # node may install a view of its own on the way, while it still counts the
        # others as gone).
        wait_all(logs, lambda: _merged(logs, everyone) is not None, 30, "one view under n1")
        merged = _merged(logs, everyone)
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
    assert all((merged, "n1") in leaders.get(n, set()) for n in HOSTS), leaders
