"""``ringcast live`` on real processes: every family once, checked by the lab's Spark
checks; a node dying on its own; the driver interrupted. Needs root and namespaces.

Each run builds its own namespaces (``rcl<node>-<tag>``); every test checks that none of
them, and no process of the run, is left afterwards.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from ringcast.lab.grid import load_sweep
from ringcast.lab.pipeline import check_paths
from ringcast.live.driver import run_live
from ringcast.live.sweep import run_live_sweep
from ringcast.sim import load_scenario
from ringcast.trace import read_trace

HERE = Path(__file__).parent
ROOT = HERE.parent.parent

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="live runs need root and iproute2"
)

RUNS = {
    # (scenario file, what it covers)
    "tribes": HERE / "scenarios" / "tribes_partition_crash.toml",  # partition, crash, pause
    "gms": HERE / "scenarios" / "gms_join_leave.toml",  # join, leave, one-way cut
    "raincore": ROOT / "scenarios" / "raincore" / "crash.toml",
    "totem": ROOT / "scenarios" / "totem" / "rrp_network_down.toml",  # two bridges
    "basic": ROOT / "scenarios" / "basic" / "crash_restart.toml",  # restart
}
DELAYED = ROOT / "scenarios" / "tribes" / "crash.toml"
"""Run on the scenario's own latency model (normal, 1 ms mean), by the delay box."""


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def _processes_naming(text: str) -> list[int]:
    """Pids of the processes whose command line contains ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


def _left_behind(summary_or_tag: str, out: Path) -> list[str]:
    spaces = sorted(ns for ns in _namespaces() if ns.endswith(f"-{summary_or_tag}"))
    procs = _processes_naming(str(out / "_live"))
    return spaces + [f"pid {p}" for p in procs]


@pytest.fixture(scope="module")
def live_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """One live run of each family (about 5 s each), and a sweep asking for live runs
    (one of its points runs, the other is refused: a message class on a link)."""
    base = tmp_path_factory.mktemp("live")
    outs = {}
    for family, scenario in RUNS.items():
        out = base / family
        run_live(load_scenario(scenario), 1, out, real_latency=True)
        outs[family] = out
    run_live(load_scenario(DELAYED), 1, base / "delayed")
    outs["delayed"] = base / "delayed"
    sweep = base / "sweep.toml"
    sweep.write_text(
        f'name = "live_sweep"\nscenarios = ["{ROOT}/scenarios/tribes/crash.toml",'
        f' "{ROOT}/scenarios/tribes/asymmetric.toml"]\nseeds = [3]\n'
        "[live]\nreal_latency = true\n"
    )
    run_live_sweep(load_sweep(sweep), base / "sweep")
    outs["sweep"] = base / "sweep"
    yield outs


def test_every_family_runs_live_and_the_lab_checks_it(
    spark: Any, live_runs: dict[str, Path]
) -> None:
    doc = check_paths(spark, list(live_runs.values()))
    props = doc["properties"]
    assert doc["ok"] is True, {n: p["counterexamples"] for n, p in props.items()}
    assert props["view_agreement"]["runs_checked"] >= 6
    assert props["convergence"]["runs_checked"] == 7
    assert props["integrity"]["runs_checked"] == 7
    assert props["total_order"]["runs_checked"] == 2  # raincore and totem
    for family, out in live_runs.items():
        if family == "sweep":
            continue
        summary = json.loads((out / "summary.json").read_text())
        protocol = "tribes" if family == "delayed" else family
        assert summary["mode"] == "live" and summary["protocol"] == protocol
        assert summary["findings"] == [], family
        scenario = load_scenario(RUNS.get(family, DELAYED))
        assert [a["action"] for a in summary["nemesis"]] == [a.action for a in scenario.nemesis]
        for a in summary["nemesis"]:
            assert a["took_effect_ns"] >= a["asked_ns"], a
        tag = next(iter(summary["nodes"].values()))["namespace"].rpartition("-")[2]
        assert _left_behind(tag, out) == [], family
        if family == "delayed":
            assert summary["latency"] == "the scenario's, by the delay box"
            box = summary["delaybox"]
            assert box["delayed"] > 1000 and box["send_errors"] == 0
            assert box["runs"] == 0  # offload off: a datagram a frame, a draw each
        else:
            assert summary["latency"] == "the bridges' own" and summary["delaybox"] is None


def test_a_sweep_of_live_runs_is_laid_out_as_a_simulated_one(
    live_runs: dict[str, Path],
) -> None:
    out = live_runs["sweep"]
    sweep = json.loads((out / "sweep.json").read_text())
    assert sweep["mode"] == "live" and sweep["runs"] == 1
    (refused,) = sweep["skipped"]
    assert refused.startswith("tribes_asymmetric@base:3: ") and "match" in refused
    (trace,) = (out / "traces").rglob("*.parquet")
    assert trace.parent.relative_to(out / "traces") == Path("protocol=tribes/scenario=tribes_crash")
    assert {r["run"] for r in read_trace(trace).to_pylist()} == {"tribes_crash@base:3"}
    assert [r["run"] for r in pq.read_table(out / "runs.parquet").to_pylist()] == [
        "tribes_crash@base:3"
    ]


def test_a_live_trace_has_the_simulators_shape(live_runs: dict[str, Path]) -> None:
    """The tribes run: the faults at the nodes they hit, each node's rows in time order
    and numbered from 0, one stats row a node with its end; the saturating node sent."""
    out = live_runs["tribes"]
    rows = read_trace(out / "trace.parquet").to_pylist()
    assert {r["run"] for r in rows} == {"live_tribes_partition_crash:1"}
    faults = [(r["node"], json.loads(r["detail"])["action"]) for r in rows if r["kind"] == "fault"]
    for n in "ABCD":
        assert (n, "partition") in faults
    assert ("D", "crash") in faults and ("C", "pause") in faults and ("C", "resume") in faults
    assert sorted(n for n, a in faults if a == "heal") == ["A", "B", "C", "D"]  # as simulated
    for n in "ABCD":
        mine = [r for r in rows if r["node"] == n]
        assert [r["i"] for r in mine] == list(range(len(mine)))
        assert [r["t"] for r in mine[:-1]] == sorted(r["t"] for r in mine[:-1])
        assert mine[-1]["kind"] == "stats"
    ends = {r["node"]: json.loads(r["detail"])["state"] for r in rows if r["kind"] == "stats"}
    assert ends == {"A": "up", "B": "up", "C": "up", "D": "crashed"}
    # A saturated for 400 ms on top of its 40 a second
    submitted = {n: sum(1 for r in rows if r["kind"] == "submit" and r["node"] == n) for n in "AB"}
    assert submitted["A"] > 2 * submitted["B"]


def _driver(scenario: Path, out: Path, *, delayed: bool = False) -> subprocess.Popen[str]:
    """``ringcast live`` on the bridges' own latency, or (``delayed``) on the scenario's
    latency model, through the delay box."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ringcast.cli.main",
            "live",
            str(scenario),
            *([] if delayed else ["--real-latency"]),
            "--out",
            str(out),
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _until_started(p: subprocess.Popen[str], timeout: float = 120) -> str:
    """The driver's stderr up to its "run started" line (read as it comes)."""
    assert p.stderr is not None
    seen = ""
    deadline = time.monotonic() + timeout
    while "run started" not in seen:
        left = deadline - time.monotonic()
        assert left > 0 and p.poll() is None, f"the run did not start: {seen}"
        ready, _, _ = select.select([p.stderr], [], [], left)
        if ready:
            seen += p.stderr.readline()
    return seen


@pytest.fixture
def long_scenario(tmp_path: Path) -> Path:
    path = tmp_path / "long.toml"
    path.write_text(
        'name = "long"\nprotocol = "tribes"\nnodes = ["A", "B", "C"]\nduration = "60s"\n'
        '[[workload]]\nnodes = "all"\nrate = 20\n'
        '[[nemesis]]\nat = "50s"\naction = "crash"\nnode = "B"\n'
        '[[nemesis]]\nat = "55s"\naction = "restart"\nnode = "B"\n'
        '[[nemesis]]\nat = "56s"\naction = "partition"\ngroups = [["A"], ["B", "C"]]\n'
    )
    return path


@pytest.mark.parametrize(
    ("sig", "delayed"),
    [(signal.SIGTERM, False), (signal.SIGINT, False), (signal.SIGTERM, True)],
)
def test_an_interrupted_driver_leaves_nothing_behind(
    tmp_path: Path, long_scenario: Path, sig: signal.Signals, delayed: bool
) -> None:
    """Delayed: the delay box (a process of the switch namespace) goes with the rest."""
    out = tmp_path / "out"
    p = _driver(long_scenario, out, delayed=delayed)
    try:
        said = _until_started(p)
        tag = said.split("namespaces rcl*-")[1].split(")")[0]
        assert len(_namespaces_tagged(tag)) == 4  # the switch and three hosts
        # three nodes, one restart, and the delay box
        assert len(_processes_naming(str(out / "_live"))) == 4 + delayed
        assert len(_processes_naming(str(out / "_live" / "delaybox"))) == delayed
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130
    assert f"interrupted by {sig.name}" in err
    assert _left_behind(tag, out) == []


def _namespaces_tagged(tag: str) -> list[str]:
    return sorted(ns for ns in _namespaces() if ns.endswith(f"-{tag}"))


def test_a_node_that_dies_on_its_own_is_a_finding(tmp_path: Path) -> None:
    scenario = tmp_path / "short.toml"
    scenario.write_text(
        'name = "short"\nprotocol = "tribes"\nnodes = ["A", "B", "C"]\nduration = "4s"\n'
        '[[workload]]\nnodes = "all"\nrate = 20\n'
        '[[nemesis]]\nat = "3s"\naction = "pause"\nnode = "B"\n'
    )
    out = tmp_path / "out"
    p = _driver(scenario, out)
    try:
        said = _until_started(p)
        tag = said.split("namespaces rcl*-")[1].split(")")[0]
        (victim,) = _processes_naming(str(out / "_live" / "gate" / "B.1"))
        os.kill(victim, signal.SIGKILL)  # not the nemesis: B "dies of its own accord"
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0
    summary = json.loads((out / "summary.json").read_text())
    (finding,) = [f for f in summary["findings"] if "exit" in f]
    assert finding["node"] == "B" and finding["exit"] == -signal.SIGKILL
    assert (out / finding["log"]).is_file()
    # the pause asked for later is not applied to a dead node, and says so
    assert {"node": "B", "skipped": "pause"}.items() <= summary["findings"][1].items()
    assert summary["nodes"]["B"]["end"] == "died"
    assert _left_behind(tag, out) == []


def _await_exit(pids: list[int], timeout: float) -> None:
    """Until every process of ``pids`` has ended (pidfds: no polling)."""
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            ready, _, _ = select.select([fd], [], [], timeout)
            assert ready, f"process {pid} still runs after {timeout}s"
        finally:
            os.close(fd)


def test_a_driver_killed_outright_leaves_no_node_and_the_next_run_removes_its_lab(
    tmp_path: Path, long_scenario: Path
) -> None:
    out = tmp_path / "out"
    p = _driver(long_scenario, out, delayed=True)
    tag = "not-started"
    try:
        said = _until_started(p)
        tag = said.split("namespaces rcl*-")[1].split(")")[0]
        nodes = _processes_naming(str(out / "_live"))
        assert len(nodes) == 5  # three nodes, one restart, the delay box
        p.kill()  # SIGKILL: no clean-up of its own
        p.wait(10)
        _await_exit(nodes, 20)  # the kernel ends the nodes and the box with their parent
        assert len(_namespaces_tagged(tag)) == 4  # what only the next run can remove
        short = tmp_path / "short.toml"
        short.write_text(
            'name = "short"\nprotocol = "basic"\nnodes = ["A", "B"]\nduration = "500ms"\n'
        )
        run_live(load_scenario(short), 1, out, real_latency=True)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for ns in _namespaces_tagged(tag):  # a failed assertion must not leave them
            subprocess.run(["ip", "netns", "del", ns], check=False)
    assert _namespaces_tagged(tag) == []
