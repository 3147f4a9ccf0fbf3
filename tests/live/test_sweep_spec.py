"""A sweep file's ``live`` key: parsed, validated, and its sample drawn the same way
every time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ringcast.lab.errors import LabError
from ringcast.lab.grid import LiveSweep, parse_sweep
from ringcast.live.sweep import run_live_sweep, sample_runs


def _sweep(live: object, seeds: int = 3):  # type: ignore[no-untyped-def]
    return parse_sweep(
        {"name": "s", "scenarios": ["scenarios/tribes/*.toml"], "seeds": seeds, "live": live},
        "s.toml",
    )


def test_live_true_runs_everything_and_a_sample_is_stable() -> None:
    every = _sweep(True)
    assert every.live == LiveSweep(None, False)
    assert sample_runs(every) == every.runs
    some = _sweep({"sample": 5, "real_latency": True})
    assert some.live == LiveSweep(5, True)
    first = [r.run for r in sample_runs(some)]
    assert len(first) == 5 and first == [r.run for r in sample_runs(_sweep({"sample": 5}))]
    order = [r.run for r in some.runs]
    assert first == sorted(first, key=order.index)  # in the sweep's order
    assert _sweep(False).live is None


@pytest.mark.parametrize(
    ("live", "says"),
    [
        ("yes", "s.toml: live: expected true or a table"),
        ({"sample": 0}, "s.toml: live.sample: expected a positive number"),
        ({"real_latency": 1}, "s.toml: live.real_latency: expected true or false"),
        ({"samples": 3}, "s.toml: live.samples: unknown key"),
    ],
)
def test_bad_live_keys_are_named(live: object, says: str) -> None:
    with pytest.raises(LabError) as e:
        _sweep(live)
    assert str(e.value).startswith(says)


def test_a_live_sweep_not_run_as_root_is_one_lab_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(LabError, match=r"^s.toml: live: live runs need root"):
        run_live_sweep(_sweep(True), tmp_path)
    assert not (tmp_path / "traces").exists()


def test_the_catalogue_sweeps_list_every_live_scenario_of_up_to_eight_nodes() -> None:
    """sweeps/live_catalogue.toml runs live every bundled scenario a live run accepts
    (eight nodes at most), and sweeps/catalogue.toml the same runs simulated: their run
    ids pair up for ``lab report --twin``."""
    from ringcast.lab.grid import load_sweep
    from ringcast.live.plan import check_live
    from ringcast.live.tools import LiveError
    from ringcast.sim import load_scenario

    root = Path(__file__).resolve().parents[2]
    wanted = set()
    for path in sorted((root / "scenarios").rglob("*.toml")):
        sc = load_scenario(path)
        try:
            check_live(sc, real_latency=True, netem=False)
        except LiveError:
            continue
        if len(sc.all_nodes) <= 8:
            wanted.add(path.resolve())
    live = load_sweep(root / "sweeps" / "live_catalogue.toml")
    sim = load_sweep(root / "sweeps" / "catalogue.toml")
    assert {f.resolve() for f in live.files} == wanted == {f.resolve() for f in sim.files}
    assert live.live is not None and live.live.real_latency and sim.live is None
    assert [r.run for r in live.runs] == [r.run for r in sim.runs]
