"""``ringcast status``: each node's row says in words what is wrong with it, the nodes
are asked at once with a short timeout, and the exit code is 1 when one is down."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path

import pytest

from ringcast.cli.main import main
from ringcast.runtime import Group
from ringcast.runtime.cluster import free_port
from ringcast.runtime.config import load_config, render_config
from ringcast.runtime.security import write_key_file
from ringcast.runtime.status import StatusServer

NODES = ["up", "stopped", "hung", "rekeyed", "app"]


def _write(directory: Path, ports: dict[str, tuple[int, int | None]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    write_key_file(directory / "cluster.key")
    entries = [
        (n, [f"127.0.0.1:{udp}"], None if st is None else f"127.0.0.1:{st}")
        for n, (udp, st) in ports.items()
    ]
    path = directory / "cluster.toml"
    path.write_text(render_config(name="st", protocol="basic", nodes=entries, trace=False))
    return path


@contextmanager
def serving(config: Path, rekeyed: Path) -> Iterator[None]:
    """In a thread's event loop: node ``up`` running with the cluster's key and a status
    endpoint, node ``rekeyed`` running from a copy of the file with another key, and a
    TCP listener on ``hung``'s status address that never answers. ``stopped`` has
    nothing on its address; ``app`` has no status address."""
    cfg, other = load_config(config), load_config(rekeyed)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop = asyncio.Event()

    async def run() -> None:
        hung = cfg.node("hung").status
        assert hung is not None
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
            silent.bind(hung)
            silent.listen(8)  # connections complete in the kernel; none is ever read
            async with AsyncExitStack() as stack:
                for c, n in ((cfg, "up"), (other, "rekeyed")):
                    g = await stack.enter_async_context(Group.join(c, n, wait_view=False))
                    status = c.node(n).status
                    assert status is not None
                    srv = StatusServer(status, g.host.status)
                    await srv.start()
                    stack.push_async_callback(srv.close)
                ready.set()
                await stop.wait()

    t = threading.Thread(target=loop.run_until_complete, args=(run(),))
    t.start()
    try:
        assert ready.wait(30), "the fake cluster did not start"
        yield
    finally:
        loop.call_soon_threadsafe(stop.set)
        t.join(30)
        loop.close()


def test_status_says_what_is_wrong_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ports = {n: (free_port(), None if n == "app" else free_port(socket.SOCK_STREAM)) for n in NODES}
    config = _write(tmp_path / "c", ports)
    (tmp_path / "other").mkdir()
    rekeyed = tmp_path / "other" / "cluster.toml"
    shutil.copy(config, rekeyed)
    write_key_file(tmp_path / "other" / "cluster.key")
    with serving(config, rekeyed):
        code = main(["status", "--config", str(config), "--timeout", "5"])
        out, err = capsys.readouterr()
        assert main(["status", "--config", str(config), "--timeout", "5", "--json"]) == 1
        rows = {r["node"]: r for r in json.loads(capsys.readouterr().out)}
    assert code == 1
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    st = ports["stopped"][1]
    assert f"not running: nothing listens on 127.0.0.1:{st}" in lines["stopped"]
    assert "not answering: no answer from" in lines["hung"] and "within 5 s" in lines["hung"]
    assert "wrong key: runs with another key than" in lines["rekeyed"]
    assert "not monitored" in lines["app"]
    assert not any(w in lines["up"] for w in ("not ", "wrong", "down"))
    # (a logger an earlier test pointed at its own captured stderr may add lines here)
    assert "3 of 5 nodes down: stopped, hung, rekeyed" in err.splitlines()
    assert {n: r.get("error") for n, r in rows.items()} == {
        "up": None,
        "stopped": "not running",
        "hung": "not answering",
        "rekeyed": "wrong key",
        "app": "not monitored",
    }
    assert rows["up"]["node"] == "up" and rows["up"]["view"] is not None


def test_status_bad_timeout_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _write(tmp_path, {"A": (free_port(), None)})
    assert main(["status", "--config", str(config), "--timeout", "0"]) == 2
    assert "--timeout" in capsys.readouterr().err
