"""The runtime's sub-commands: keygen, node (bad input), cluster up/status/down."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path

import pytest

from ringcast.cli.main import main
from ringcast.cli.runtime import gather_status, status_table
from ringcast.runtime.config import load_config

from .conftest import PROTOCOLS, LogWatch, await_status, make_config


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
    assert main(["status", "--config", str(d / "cluster.toml")]) == 0
    assert "down" in capsys.readouterr().out
