"""What a newcomer meets first: the README's quick start run as pasted, ``Group.join``
returning with a view, the Group API's errors, and the event types as documented."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import re
import shlex
import socket
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

import ringcast
import ringcast.runtime
from ringcast.cli.main import main
from ringcast.runtime import (
    AddressInUse,
    Group,
    GroupError,
    JoinTimeout,
    KeyFileError,
    UnknownNode,
)
from ringcast.runtime.cluster import write_cluster
from ringcast.runtime.config import load_config
from ringcast.runtime.group import GroupEvent
from ringcast.runtime.log import LOGGER

from .conftest import PROTOCOLS, await_status, make_config, watching

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "ringcast.cli.main"]


def code_blocks(text: str, lang: str) -> list[str]:
    """The fenced code blocks of ``lang`` in a Markdown text, in order."""
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.S | re.M)


def readme_command(prefix: str) -> list[str]:
    """The README's ``ringcast`` command line starting with ``prefix``, as argv."""
    for block in code_blocks((ROOT / "README.md").read_text(), "sh"):
        for line in block.splitlines():
            if line.startswith(prefix):
                argv = shlex.split(line, comments=True)
                return CLI + argv[1:]
    raise AssertionError(f"README.md shows no `{prefix}` command")


def test_readme_python_blocks_run_as_pasted(tmp_path: Path) -> None:
    """Every Python block of the README runs unchanged, as a script in a clone's root
    after the README's own `cluster up` (and the cluster stops with its `cluster down`)."""
    blocks = code_blocks((ROOT / "README.md").read_text(), "python")
    assert any("Group.join" in b for b in blocks)
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    up = subprocess.run(
        readme_command("ringcast cluster up"), cwd=tmp_path, capture_output=True, text=True
    )
    assert up.returncode == 0, up.stderr
    try:
        cfg = load_config(tmp_path / "mycluster" / "cluster.toml")
        started = {n.node_id for n in cfg.nodes if not n.join}
        with watching(tmp_path / "mycluster" / "logs", sorted(started)) as logs:
            for w in logs.values():
                w.wait_ready(0, 30)

        async def formed() -> None:
            for n in sorted(started):
                status = cfg.node(n).status
                assert status is not None
                await await_status(status, 30, members=started)

        asyncio.run(formed())
        for k, block in enumerate(blocks):
            script = tmp_path / f"readme_{k}.py"
            script.write_text(block)
            run = subprocess.run(
                [sys.executable, str(script)],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=120,
                env=env,
            )
            assert run.returncode == 0, f"README block {k}:\n{block}\n{run.stderr}"
            assert run.stdout.strip(), f"README block {k} printed nothing"
            if "Group.join" in block:
                assert "joined View(" in run.stdout
                assert "payload=b'hello'" in run.stdout
    finally:
        down = subprocess.run(
            readme_command("ringcast cluster down"), cwd=tmp_path, capture_output=True, text=True
        )
    assert down.returncode == 0, down.stderr


def test_cluster_up_writes_app_members_it_does_not_start(tmp_path: Path) -> None:
    cfg = load_config(write_cluster(tmp_path, nodes=2, protocol="basic", app_members=2))
    assert [(n.node_id, n.join, n.status is None) for n in cfg.nodes] == [
        ("n1", False, False),
        ("n2", False, False),
        ("app1", True, True),
        ("app2", True, True),
    ]
    assert cfg.members == ("n1", "n2")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_join_returns_with_the_first_view_installed(tmp_path: Path, protocol: str) -> None:
    """Alone of three configured nodes, ``join`` still returns with a regular view."""
    cfg = make_config(tmp_path, ["A", "B", "C"], protocol)

    async def go() -> None:
        async with Group.join(cfg, "A") as g:
            assert g.view is not None
            assert not g.view.transitional
            assert "A" in g.view.members

    asyncio.run(go())


def test_group_errors_name_node_address_and_fix(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, ["A", "B"], "basic")
    addr = "{}:{}".format(*cfg.node("A").addresses[0])

    async def go() -> None:
        with pytest.raises(UnknownNode) as unknown:
            Group.join(cfg, "Z")
        assert "'Z'" in str(unknown.value) and "known: A, B" in str(unknown.value)
        assert "[[node]]" in str(unknown.value)
        async with Group.join(cfg, "A"):
            with pytest.raises(AddressInUse) as in_use:
                async with Group.join(cfg, "A"):
                    pass
            msg = str(in_use.value)
            assert "node A" in msg and addr in msg and "already running" in msg
            assert isinstance(in_use.value, OSError)
        (tmp_path / "cluster.key").unlink()
        with pytest.raises(KeyFileError) as no_key:
            async with Group.join(cfg, "A"):
                pass
        assert "node A" in str(no_key.value) and "ringcast keygen" in str(no_key.value)
        for e in (unknown.value, in_use.value, no_key.value):
            assert isinstance(e, GroupError)
            assert "\n" not in str(e)

    asyncio.run(go())


def test_join_timeout_names_the_node(tmp_path: Path) -> None:
    """A Totem node alone of two installs its singleton view only when its consensus
    timeout expires; with that set to a minute, ``join`` gives up first."""
    cfg = make_config(tmp_path, ["A", "B"], "totem", settings={"consensus_timeout": "60s"})

    async def go() -> None:
        with pytest.raises(JoinTimeout) as e:
            async with Group.join(cfg, "A", view_timeout=0.5):
                pass
        assert "node A" in str(e.value) and isinstance(e.value, GroupError)

    asyncio.run(go())


@pytest.fixture
def runtime_logging() -> Iterator[None]:
    """``ringcast node`` sends the runtime's logs to the stderr of the moment (pytest's
    capture here): put the logger back as it was, for the tests that come after."""
    log = logging.getLogger(LOGGER)
    saved = (list(log.handlers), log.propagate, log.level)
    yield
    log.handlers[:], log.propagate, log.level = saved[0], saved[1], saved[2]


def test_node_command_with_its_address_taken_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runtime_logging: None
) -> None:
    cfg = make_config(tmp_path, ["A"], "basic")
    host, port = cfg.node("A").addresses[0]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((host, port))
        assert main(["node", "--config", str(tmp_path / "cluster.toml"), "--id", "A"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"node A: address {host}:{port} is already in use" in err


def _documented_events() -> dict[str, list[str]]:
    """The event table of docs/runtime.md: type name -> its documented fields."""
    text = (ROOT / "docs" / "runtime.md").read_text()
    section = text.split("### Events", 1)[1].split("\n### ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = re.findall(r"`(\w+)`", cells[1])
    return rows


def test_event_types_documented_as_the_code_names_them() -> None:
    documented = _documented_events()
    assert documented, "docs/runtime.md has no ### Events table"
    classes = {getattr(ringcast.runtime, name) for name in documented}
    assert classes == set(typing.get_args(GroupEvent))
    for name, fields in documented.items():
        cls = getattr(ringcast.runtime, name)
        assert name in ringcast.runtime.__all__
        assert getattr(ringcast, name) is cls  # also at the top level
        assert fields == [f.name for f in dataclasses.fields(cls)], name
