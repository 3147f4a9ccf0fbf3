"""Running the bundled GMS scenarios in a chosen installation mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ringcast.sim import Simulation, load_scenario

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios" / "gms"
JGROUPS = SCENARIOS / "jgroups"
MODES = ("plain", "acks", "two_phase")


def run(name: str, mode: str, seed: int = 1, **settings: Any) -> list[dict[str, Any]]:
    path = SCENARIOS / f"{name}.toml"
    if not path.exists():
        path = JGROUPS / f"{name}.toml"
    sc = load_scenario(path).with_settings(view_install=mode, **settings)
    return Simulation(sc, seed=seed).run().events()
