"""`ringcast sim`: outputs, determinism across processes, and one-line errors."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ringcast.cli.main import main
from ringcast.cli.progress import ProgressBar

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "basic" / "crash_restart.toml"


def _cli(*args: str, hashseed: str = "0") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    return subprocess.run(
        [sys.executable, "-m", "ringcast.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def test_sim_writes_trace_and_summary(tmp_path: Path) -> None:
    assert main(["sim", str(SCENARIO), "--seed", "3", "--out", str(tmp_path), "-q"]) == 0
    table = pq.read_table(tmp_path / "trace.parquet")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert table.num_rows == summary["events"] > 0
    for key in (
        "simulated_ns",
        "wall_s",
        "events_per_wall_second",
        "deliveries",
        "views_installed",
    ):
        assert key in summary
    kinds = set(table.column("kind").to_pylist())
    assert {"submit", "deliver", "view", "fault", "stats"} <= kinds
    assert summary["deliveries"] == table.column("kind").to_pylist().count("deliver")
    assert set(summary["views_installed"]) == {"A", "B", "C", "D"}


# One fault-heavy scenario per protocol: string hashing differs between the processes,
# so any iteration over a set or dict of node ids that leaks into the trace shows here.
DETERMINISM_SCENARIOS = [
    SCENARIO,
    ROOT / "scenarios" / "raincore" / "partition_heal.toml",
    ROOT / "scenarios" / "totem" / "partition_merge.toml",
]


@pytest.mark.parametrize("scenario", DETERMINISM_SCENARIOS, ids=lambda p: p.parent.name)
def test_same_seed_is_byte_identical_across_processes(tmp_path: Path, scenario: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for out, hashseed, seed in ((a, "1", "5"), (b, "2", "5"), (c, "1", "6")):
        r = _cli("sim", str(scenario), "--seed", seed, "--out", str(out), "-q", hashseed=hashseed)
        assert r.returncode == 0, r.stderr
    assert (a / "trace.parquet").read_bytes() == (b / "trace.parquet").read_bytes()
    assert (a / "trace.parquet").read_bytes() != (c / "trace.parquet").read_bytes()


def test_jsonl_format(tmp_path: Path) -> None:
    assert main(["sim", str(SCENARIO), "--out", str(tmp_path), "--format", "jsonl", "-q"]) == 0
    lines = (tmp_path / "trace.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert list(first)[:5] == ["run", "node", "t", "i", "kind"]
    assert len(lines) == json.loads((tmp_path / "summary.json").read_text())["events"]


def test_trace_packets_adds_packet_rows_naming_their_network(tmp_path: Path) -> None:
    plain, packets = tmp_path / "plain", tmp_path / "packets"
    assert main(["sim", str(SCENARIO), "--out", str(plain), "-q"]) == 0
    assert main(["sim", str(SCENARIO), "--out", str(packets), "--trace-packets", "-q"]) == 0
    before = pq.read_table(plain / "trace.parquet").to_pydict()
    after = pq.read_table(packets / "trace.parquet").to_pydict()
    assert not {"send", "recv"} & set(before["kind"])
    sends = [n for k, n in zip(after["kind"], after["network"], strict=True) if k == "send"]
    recvs = [n for k, n in zip(after["kind"], after["network"], strict=True) if k == "recv"]
    assert sends and recvs and set(sends) == set(recvs) == {0}


def test_bad_scenario_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "typo.toml"
    bad.write_text(
        'protocol = "basic"\nnodes = ["A", "B"]\n'
        '[[nemesis]]\nat = "1ms"\naction = "crash"\nnode = "Z"\n'
    )
    r = _cli("sim", str(bad), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0
    assert "typo.toml: nemesis[0].node: unknown node 'Z'" in r.stderr
    assert not (tmp_path / "o").exists()


def test_bad_format_is_refused(tmp_path: Path) -> None:
    r = _cli("sim", str(SCENARIO), "--out", str(tmp_path), "--format", "csv")
    assert r.returncode == 2 and "--format" in r.stderr


def test_validate_command(tmp_path: Path) -> None:
    r = _cli("validate", str(SCENARIO))
    assert r.returncode == 0 and '"ok": true' in r.stdout


def test_progress_bar_waits_then_draws() -> None:
    buf = io.StringIO()
    bar = ProgressBar("run", delay=3600, stream=buf)
    bar(0.5)
    bar(1.0)
    assert buf.getvalue() == ""  # a quick run draws nothing
    bar = ProgressBar("run", delay=0, stream=buf)
    bar(0.5)
    bar(1.0)
    out = buf.getvalue()
    assert "50.0%" in out and "100.0%" in out and out.endswith("\n")


def test_progress_off_a_terminal_is_a_few_plain_lines() -> None:
    """A log gets a line a quarter of the way, not a frame per update."""
    buf = io.StringIO()
    bar = ProgressBar("sweep", delay=0, stream=buf, terminal=False)
    for k in range(501):
        bar(k / 500, f"{k}/500")
    lines = buf.getvalue().splitlines()
    assert len(lines) == 5 and "\r" not in buf.getvalue() and "\x1b" not in buf.getvalue()
    assert lines[0].startswith("sweep:") and "100.0%" in lines[-1] and "500/500" in lines[-1]


def test_progress_on_a_terminal_draws_a_bar() -> None:
    buf = io.StringIO()
    bar = ProgressBar("sweep", delay=0, stream=buf, terminal=True)
    for k in range(11):
        bar(k / 10, "working")
    out = buf.getvalue()
    assert "sweep" in out and "\x1b[" in out and "100%" in out and "working" in out


@pytest.mark.parametrize("argv", [["sim"], ["nosuch"]])
def test_usage_errors_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
