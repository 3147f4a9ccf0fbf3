"""The runtime's sub-commands: keygen, node (bad input, --sched-rr), cluster up/status/down."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ringcast.cli.main import main
from ringcast.cli.runtime import gather_status, status_table
from ringcast.runtime.cluster import spawn_node, write_cluster
from ringcast.runtime.config import load_config

from .conftest import PROTOCOLS, LogWatch, await_status, make_config, watching


def test_keygen(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "k.key"
    assert main(["keygen", str(key)]) == 0
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert len(bytes.fromhex(key.read_text().strip())) == 32
    assert main(["keygen", str(key)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["keygen", "--force", str(key)]) == 0


def test_node_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["node", "--config", str(tmp_path / "nope.toml"), "--id", "A"]) == 2
    assert "no such cluster file" in capsys.readouterr().err
    make_config(tmp_path, ["A"], "basic")
    assert main(["node", "--config", str(tmp_path / "cluster.toml"), "--id", "Z"]) == 2
    assert "no node 'Z'" in capsys.readouterr().err
    assert (
        main(["cluster", "up", "--nodes", "2", "--protocol", "nope", "--dir", str(tmp_path)]) == 2
    )
    assert main(["cluster", "down", "--dir", str(tmp_path / "empty")]) == 2


def test_cluster_up_status_down(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    protocol = "totem" if "totem" in PROTOCOLS else "basic"
    d = tmp_path / "c"
    assert main(["cluster", "up", "--nodes", "3", "--protocol", protocol, "--dir", str(d)]) == 0
    try:
        up = json.loads(capsys.readouterr().out)
        assert set(up["pids"]) == {"n1", "n2", "n3"}
        cfg = load_config(d / "cluster.toml")
        # cluster up returned once every node was ready: status finds them all up
        assert [r.get("error") for r in asyncio.run(gather_status(cfg, 5))] == [None] * 3
        nodes = {"n1", "n2", "n3"}
        for n in sorted(nodes):
            watch = LogWatch(d / "logs" / f"{n}.log")
            try:
                watch.wait_ready(0, 30)  # its status endpoint listens from then on
            finally:
                watch.close()

        async def converged() -> list[dict]:  # type: ignore[type-arg]
            for n in sorted(nodes):  # long polls: each answers once its view is complete
                await await_status(cfg.node(n).status, 30, members=nodes)
            return await gather_status(cfg)

        rows = asyncio.run(converged())
        assert all(r["view"] and set(r["view"]["members"]) == nodes for r in rows)
        table = status_table(rows)
        assert table.splitlines()[0].split()[:4] == ["node", "view", "members", "state"]
        assert len(table.splitlines()) == 4
        assert main(["status", "--config", str(d / "cluster.toml")]) == 0
        assert "n1,n2,n3" in capsys.readouterr().out
    finally:
        assert main(["cluster", "down", "--dir", str(d)]) == 0
    down = json.loads(capsys.readouterr().out)
    assert set(down.values()) == {"stopped"}
    # Every node left cleanly and wrote its final stats row.
    for n in ("n1", "n2", "n3"):
        assert "node stopped" in (d / "logs" / f"{n}.log").read_text()
    assert main(["status", "--config", str(d / "cluster.toml")]) == 1
    out, err = capsys.readouterr()
    assert out.count("not running: nothing listens on 127.0.0.1:") == 3
    assert err.strip() == "3 of 3 nodes down: n1, n2, n3"


def _may_take_sched_rr() -> bool:
    """Whether a process of ours may take realtime scheduling here (CAP_SYS_NICE): the
    node's own ``set_sched_rr``, tried in a process of its own."""
    probe = (
        "import sys; from ringcast.runtime.node import set_sched_rr; "
        "sys.exit(set_sched_rr() is not None)"
    )
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


def test_node_sched_rr_runs_the_process_with_realtime_scheduling(tmp_path: Path) -> None:
    """``ringcast node --sched-rr`` takes round-robin realtime scheduling, as corosync does,
    and says so when it is ready; without the privilege it says why and runs on."""
    path = write_cluster(tmp_path, nodes=1, protocol="basic", trace=False)
    proc = spawn_node(path, "n1", tmp_path, ["--sched-rr"])
    try:
        with watching(tmp_path, ["n1"]) as logs:
            logs["n1"].wait_ready(0, 30)
            ready = next(r for r in logs["n1"].records if r.get("msg") == "node ready")
            refused = [
                r for r in logs["n1"].records if r.get("msg") == "realtime scheduling refused"
            ]
            if _may_take_sched_rr():
                assert os.sched_getscheduler(proc.pid) == os.SCHED_RR
                assert ready["sched_rr"] is True and not refused
            else:
                assert os.sched_getscheduler(proc.pid) == os.SCHED_OTHER
                assert ready["sched_rr"] is False and refused and refused[0]["reason"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def test_cluster_up_names_a_node_that_exits_at_start(tmp_path: Path) -> None:
    from ringcast.runtime.cluster import cluster_down, cluster_up

    with pytest.raises(RuntimeError) as e:
        cluster_up(tmp_path, nodes=2, protocol="basic", extra=["--order", "sideways"])
    try:
        assert "exited with 2 at start" in str(e.value) and "--order" in str(e.value)
        assert str(e.value).startswith("node n")
    finally:
        cluster_down(tmp_path)
