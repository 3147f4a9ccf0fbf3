"""Helpers for the tribes tests: the token's path as Tomcat's source prints it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ringcast.protocols.tribes import TribesMachine
from ringcast.sim import Simulation, load_scenario
from ringcast.sim.result import SimResult

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios" / "tribes"


def run(name: str, seed: int = 1, until: int | None = None, **settings: Any) -> SimResult:
    sc = load_scenario(SCENARIOS / f"{name}.toml")
    if settings:
        sc = sc.with_settings(**settings)
    if until is not None:
        sc = dataclasses.replace(sc, duration=until)
    return Simulation(sc, seed=seed).run()


def tokens(res: SimResult, names: dict[str, str] | None = None) -> list[str]:
    """Every token send, as ``"X{A-ldr, A-src, mbrs-A,B,C,D} B->C"`` in send order;
    election ids renamed by ``names`` (``{"A.1.1": "X"}``)."""
    out = []
    for r in res.events(kind="coord"):
        d = r["detail"]
        if d.get("op") != "request":
            continue
        eid = (names or {}).get(d["election"], d["election"])
        mbrs = ",".join(r["members"])
        head = f"{eid}{{{d['leader']}-ldr, {d['source']}-src, mbrs-{mbrs}}}"
        out.append(f"{head} {r['node']}->{d['to']}")
    return out


def machine(res: SimResult, node: str) -> TribesMachine:
    m = res.machines[node]
    upper = getattr(m, "upper", m)
    assert isinstance(upper, TribesMachine)
    return upper


def final_views(res: SimResult) -> dict[str, tuple[str, tuple[str, ...]]]:
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for r in res.events(kind="view"):
        out[r["node"]] = (r["view"], tuple(r["members"]))
    return out


def final_leaders(res: SimResult) -> dict[str, str]:
    return {r["node"]: r["detail"]["leader"] for r in res.events(kind="leader")}
