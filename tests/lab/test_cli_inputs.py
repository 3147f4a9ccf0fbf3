"""Every ``ringcast lab`` input is checked before Spark starts: one line naming the
problem, exit 2, and no session (``spark_session`` is replaced by one that fails the
test if it is called)."""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lab_traces import clean_trace, to_table

import ringcast.lab.errors
import ringcast.lab.session
from ringcast.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = (ROOT / "scenarios" / "totem").as_posix()


@pytest.fixture(autouse=True)
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Spark was started for an input error")

    monkeypatch.setattr(ringcast.lab.session, "spark_session", refuse)
    monkeypatch.setattr(ringcast.lab.session, "quiet_gateway", refuse)
    monkeypatch.delenv("SPARK_MASTER", raising=False)
    monkeypatch.delenv("SPARK_REMOTE", raising=False)


def closed_port() -> int:
    """A loopback TCP port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def one_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("ringcast lab: error: ")
    return lines[0]


def sweep_file(tmp_path: Path, body: str) -> Path:
    f = tmp_path / "sweep.toml"
    f.write_text(f'name = "s"\nscenarios = ["{SCENARIOS}/crash.toml"]\n' + body)
    return f


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    f = tmp_path / "clean.parquet"
    pq.write_table(to_table(clean_trace("clean")), f)
    return f


def test_a_grid_key_typo_names_the_key_and_the_valid_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = sweep_file(tmp_path, 'seeds = 1\n[grid]\n"network.los" = [0.1]\n')
    for cmd in (["sweep", str(sweep)], ["run", "--sweep", str(sweep)]):
        err = one_error(capsys, ["lab", *cmd, "--out", str(tmp_path / "o")])
        assert "'network.los' is not a scenario key" in err
        assert "loss" in err.split("known here:")[1]
    sweep = sweep_file(tmp_path, 'seeds = 1\n[grid]\n"settings.token_timout" = ["1s"]\n')
    err = one_error(capsys, ["lab", "sweep", str(sweep), "--out", str(tmp_path / "o")])
    assert "'settings.token_timout'" in err and "token_timeout" in err


@pytest.mark.parametrize("seeds", ["-3", "0", "[1, -2]", "[true]"])
def test_bad_seeds_in_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], seeds: str
) -> None:
    sweep = sweep_file(tmp_path, f"seeds = {seeds}\n")
    err = one_error(capsys, ["lab", "run", "--sweep", str(sweep), "--out", str(tmp_path / "o")])
    assert "seeds: expected a positive count or a list of integers >= 0" in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--seeds", "-3"], "--seeds: expected an integer >= 1, got -3"),
        (["--partitions", "-1"], "--partitions: expected an integer >= 0"),
        (["--examples", "-1"], "--examples: expected an integer >= 0"),
        (["--convergence-bound", "0"], "--convergence-bound: expected seconds > 0"),
        (["--conf", "spark.x"], "--conf 'spark.x': expected KEY=VALUE"),
        (["--claims", "totem=nope"], "--claims: unknown property 'nope'"),
        (["--master", "spork://h"], "--master spork://h: not a Spark master URL"),
        (["--master", "spark://h:0x1"], "--master spark://h:0x1: 'h:0x1' is not HOST:PORT"),
        (["--remote", "http://h:1"], "--remote http://h:1: not a Spark Connect URL"),
        (["--master", "local[2]", "--remote", "sc://h"], "give one of them"),
    ],
)
def test_bad_options_of_lab_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    sweep = sweep_file(tmp_path, "seeds = 1\n")
    err = one_error(
        capsys, ["lab", "run", "--sweep", str(sweep), "--out", str(tmp_path / "o"), *argv]
    )
    assert says in err


def test_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str], trace: Path) -> None:
    nowhere = tmp_path / "nowhere"
    for cmd in ("check", "metrics"):
        assert "nowhere: no such file or directory" in one_error(capsys, ["lab", cmd, str(nowhere)])
    (tmp_path / "empty").mkdir()
    err = one_error(capsys, ["lab", "check", str(tmp_path / "empty")])
    assert "holds no .parquet or .jsonl trace files" in err
    short = tmp_path / "short.parquet"
    pq.write_table(pa.table({"run": ["r"], "node": ["A"], "t": [0]}), short)
    assert "missing columns" in one_error(capsys, ["lab", "check", str(short)])
    err = one_error(capsys, ["lab", "sweep", str(nowhere), "--out", str(tmp_path / "o")])
    assert "nowhere: cannot read sweep file" in err
    err = one_error(capsys, ["lab", "sweep", str(trace), "--out", str(tmp_path / "o")])
    assert "not valid TOML" in err
    sweep = sweep_file(tmp_path, "seeds = 1\n")
    err = one_error(capsys, ["lab", "sweep", str(sweep), "--out", str(trace)])
    assert "is a file, not a directory" in err
    assert "no such directory" in one_error(
        capsys, ["lab", "report", str(nowhere), "--out", str(tmp_path / "r.html")]
    )
    # a report that needs its checks computed checks the traces first
    err = one_error(capsys, ["lab", "report", str(tmp_path / "empty"), "--out", "r.html"])
    assert "holds no .parquet or .jsonl trace files" in err
    err = one_error(capsys, ["lab", "check", str(trace), "--json", str(tmp_path)])
    assert "is a directory, not a file" in err


def test_an_unreachable_master_or_connect_server_is_one_line_naming_it(
    capsys: pytest.CaptureFixture[str], trace: Path
) -> None:
    port = closed_port()
    err = one_error(capsys, ["lab", "check", str(trace), "--master", f"spark://127.0.0.1:{port}"])
    assert f"cannot reach the Spark master spark://127.0.0.1:{port}" in err
    err = one_error(capsys, ["lab", "check", str(trace), "--remote", f"sc://127.0.0.1:{port}"])
    assert f"cannot reach the Spark Connect server sc://127.0.0.1:{port}" in err


def test_the_environment_s_master_is_checked_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], trace: Path
) -> None:
    monkeypatch.setenv("SPARK_MASTER", f"spark://127.0.0.1:{closed_port()}")
    assert "cannot reach the Spark master" in one_error(capsys, ["lab", "metrics", str(trace)])


def test_a_connect_port_that_does_not_speak_grpc_is_one_line(
    capsys: pytest.CaptureFixture[str], trace: Path
) -> None:
    """Something accepts connections at the Connect URL's address: silent, it is named
    after the probe's timeout (a Connect client would retry for minutes); answering
    something else than HTTP/2, at once."""
    import threading

    from ringcast.lab import masters

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)  # connections complete in the kernel; nothing answers
        url = f"sc://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(ringcast.lab.errors.LabError) as e:
            masters.check_where(None, url, timeout=0.5)
        assert f"the Spark Connect server {url}" in str(e.value)
        assert "gave no answer within 0.5 s" in str(e.value)

    with socket.socket() as web:
        web.bind(("127.0.0.1", 0))
        web.listen(4)
        url = f"sc://127.0.0.1:{web.getsockname()[1]}"

        def answer() -> None:  # an HTTP/1.1 server, say a web UI
            for _ in range(2):  # the TCP probe's connection, then the preface's
                conn, _addr = web.accept()
                with conn, contextlib.suppress(OSError):  # the TCP probe hangs up at once
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

        t = threading.Thread(target=answer)
        t.start()
        err = one_error(capsys, ["lab", "check", str(trace), "--remote", url])
        t.join(10)
    assert err.endswith("does not answer as a Spark Connect (gRPC) server")
