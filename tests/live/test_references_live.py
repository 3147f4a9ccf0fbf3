"""``ringcast live --system``: each reference system (corosync, Tomcat Tribes, JGroups)
run by the live driver under the same nemesis as ringcast's nodes, and its trace held
by the lab to exactly what the system claims. Needs root, namespaces and the system's
Debian package (installed at first use; the test is skipped, naming why, where that is
impossible).

One run a system: three members, one paused for 200 ms, one killed with ``kill -9``;
the scenario starts after a settling time (a JVM and a first ring take seconds), and
the two survivors must end in one group of two, having delivered after the crash.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from ringcast.lab.pipeline import check_paths
from ringcast.lab.properties import claims
from ringcast.live.driver import run_live
from ringcast.live.settle import settled
from ringcast.references import REFERENCES, corosync, jgroups, tribes
from ringcast.references.install import ReferenceUnavailable
from ringcast.sim import load_scenario
from ringcast.trace import read_trace

HERE = Path(__file__).parent
SCENARIO = HERE / "scenarios" / "reference_crash.toml"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="live runs need root and iproute2"
)

SETTLE_NS = {"corosync": 2_000_000_000, "tomcat-tribes": 6_000_000_000, "jgroups": 6_000_000_000}
"""How long each system is given to form its group before the scenario starts."""


def _build(system: str) -> None:
    if system == "corosync":
        corosync.build()
    else:
        (tribes if system == "tomcat-tribes" else jgroups).build()


@pytest.fixture(scope="module")
def reference_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("references")
    outs = {}
    for system in REFERENCES:
        try:
            _build(system)
        except ReferenceUnavailable as e:
            pytest.skip(f"{system}: {e}")
        sc = settled(load_scenario(SCENARIO), SETTLE_NS[system])
        out = base / system
        run_live(sc, 1, out, real_latency=True, system=system)
        outs[system] = out
    return outs


@pytest.mark.parametrize("system", list(REFERENCES))
def test_a_reference_run_live_holds_its_claims(
    spark: Any, reference_runs: dict[str, Path], system: str
) -> None:
    out = reference_runs[system]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["protocol"] == system and summary["system"] == system
    assert summary["findings"] == []
    assert [a["action"] for a in summary["nemesis"]] == ["pause", "resume", "crash"]
    doc = check_paths(spark, [out])
    props = doc["properties"]
    assert doc["ok"] is True, {n: p["counterexamples"] for n, p in props.items()}
    for name in claims(system):
        assert props[name]["status"] == "holds", name
    rows = read_trace(out / "trace.parquet").to_pylist()
    crash_t = next(r["t"] for r in rows if r["kind"] == "fault" and r["node"] == "C")
    for n in ("A", "B"):
        views = [r for r in rows if r["node"] == n and r["kind"] == "view"]
        assert sorted(views[-1]["members"]) == ["A", "B"], (n, views[-1])
        after = [r for r in rows if r["node"] == n and r["kind"] == "deliver" and r["t"] > crash_t]
        assert len(after) >= 20, (n, len(after))
    # the killed member wrote nothing after its crash
    assert all(r["t"] <= crash_t for r in rows if r["node"] == "C" and r["kind"] != "stats")
