"""Raincore in the simulator: token passes per wall second, and failover time.

python bench/raincore_tokens.py              # token passes / wall s for 4, 16, 64 nodes
python bench/raincore_tokens.py --failover   # crash -> new view at all survivors
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from ringcast.sim import Simulation, parse_scenario


def scenario(n: int, duration_ms: int, settings: dict[str, Any], nemesis: list[dict]) -> Any:
    nodes = [f"n{i:02d}" for i in range(n)]
    return parse_scenario(
        {
            "name": f"raincore_bench_{n}",
            "protocol": "raincore",
            "nodes": nodes,
            "duration": f"{duration_ms}ms",
            "count_bytes": False,
            "settings": settings,
            "network": {"latency": {"dist": "constant", "value": "100us"}},
            "nemesis": nemesis,
        },
        "bench",
    )


def token_passes(sizes: tuple[int, ...], duration_ms: int) -> None:
    print(f"{'nodes':>6} {'token passes':>13} {'wall s':>8} {'passes / wall s':>16}")
    for n in sizes:
        settings = {"eating_timeout": "1ms", "hungry_timeout": "10s", "rto": "50ms"}
        sc = scenario(n, duration_ms, settings, [])
        t0 = time.perf_counter()
        res = Simulation(sc, seed=1).run()
        wall = time.perf_counter() - t0
        passes = sum(1 for r in res.events(kind="token") if r["detail"].get("op") == "received")
        print(f"{n:>6} {passes:>13} {wall:>8.2f} {passes / wall:>16,.0f}")


def _eating_at(n: int, settings: dict[str, Any], t_ns: int) -> str:
    """The node holding the token at ``t_ns`` in a fault-free run."""
    res = Simulation(scenario(n, t_ns // 1_000_000 + 1, settings, []), seed=1).run()
    eats = [r for r in res.events(kind="state") if r["t"] <= t_ns]
    return eats[-1]["node"]


def _failover_ms(n: int, settings: dict[str, Any], victim: str, crash_at: int) -> float | None:
    sc = scenario(n, 4000, settings, [{"at": f"{crash_at}ns", "action": "crash", "node": victim}])
    rows = Simulation(sc, seed=1).run().events(kind="view")
    survivors = {f"n{i:02d}" for i in range(n)} - {victim}
    done: dict[str, int] = {}
    for r in rows:
        if r["t"] > crash_at and victim not in r["members"] and r["node"] in survivors:
            done.setdefault(r["node"], r["t"])
    return (max(done.values()) - crash_at) / 1e6 if set(done) == survivors else None


def failover(n: int = 5) -> None:
    print(f"{n} nodes, eating 5ms, starving = hungry / 2, latency 100us; crash at t = 1s of")
    print("  (a) a node the token is about to reach: the transport reports the failure")
    print("  (b) the token holder: the token is lost and regenerated through 911")
    print(f"{'hungry':>8} {'rto x tries':>12} {'(a) passive crash':>18} {'(b) holder crash':>17}")
    crash_at = 1_000_000_000
    for hungry in (100, 200, 400):
        for rto, tries in ((5, 2), (10, 3), (20, 5)):
            settings = {
                "eating_timeout": "5ms",
                "hungry_timeout": f"{hungry}ms",
                "starving_timeout": f"{hungry // 2}ms",
                "rto": f"{rto}ms",
                "max_tries": tries,
            }
            holder = _eating_at(n, settings, crash_at)
            nxt = f"n{(int(holder[1:]) + 1) % n:02d}"
            cells = []
            for victim in (nxt, holder):
                took = _failover_ms(n, settings, victim, crash_at)
                cells.append(f"{took:.1f} ms" if took is not None else "no new view")
            print(f"{hungry:>6}ms {f'{rto}ms x {tries}':>12} {cells[0]:>18} {cells[1]:>17}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--failover", action="store_true", help="measure failover time instead")
    ap.add_argument("--duration-ms", type=int, default=2000, help="simulated time per size")
    args = ap.parse_args()
    if args.failover:
        failover()
    else:
        token_passes((4, 16, 64), args.duration_ms)


if __name__ == "__main__":
    main()
