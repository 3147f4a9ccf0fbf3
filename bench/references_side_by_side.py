"""Each family beside its reference system: the same scenario, seed and settling time
run live by ringcast's nodes and by the reference's (``ringcast live --system``), both
checked by the lab, both measured the same way from their traces.

Pairs: Totem and corosync, Tribes and Tomcat Tribes, GMS and JGroups. For each
scenario, one line of JSON a system:

- ``claims``: each property the system claims, ``holds`` or ``violated``;
- ``detect_ms``: for each crash, from the kill to when every live member had installed a
  view without the dead one;
- ``split_ms``: for each partition, from the cut to when every live member had installed a
  view within its own side;
- ``one_view_ms``: for each heal (and each crash), from the fault to when every live
  member was in a view of exactly the live members, for good (none after that point
  differs);
- ``undelivered``: messages that no member had delivered by the end, of those sent a
  second or more before it by members that did not crash after sending them (lost, or
  still queued: at saturation a system that accepts more than it orders builds a
  backlog);
- ``deliveries_per_s``: deliveries a second at each member, from the scenario's start to
  its end (at saturation: the throughput).

Both sides run with their defaults but for what the scenario sets (a Totem scenario's
timeouts are given to corosync too). The scenarios are the families' fault catalogues,
plus a saturating one per pair (three members sending 1 KB messages as fast as flow
control lets for 4 s), and with ``--hostile N`` the first N schedules of the hostile
generator (its faults scaled by the family's failure-detection timeout: the reference
gets ringcast's time scale; no reordering or duplication).

    sudo python bench/references_side_by_side.py [--settle 6] [--seed 1] \\
        [--only totem|tribes|gms] [--scenario FILE ...]

Needs root, iproute2, nftables, Java (the lab's Spark and the Java references) and the
references' Debian packages (installed at first use).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ringcast.lab.pipeline import check_paths
from ringcast.lab.properties import claims
from ringcast.lab.session import spark_session
from ringcast.live.driver import run_live
from ringcast.live.settle import settled
from ringcast.live.tools import LiveError
from ringcast.protocols import registry
from ringcast.sim import load_scenario
from ringcast.sim.hostile import Harshness, hostile_scenario
from ringcast.sim.scenario import Scenario, parse_scenario
from ringcast.trace import read_trace

ROOT = Path(__file__).resolve().parents[1]
PAIRS = {"totem": "corosync", "tribes": "tomcat-tribes", "gms": "jgroups"}
CATALOGUE = {
    "totem": ["crash", "partition_merge", "restart"],
    "tribes": ["crash", "partition_heal", "restart", "two_fail_at_once"],
    "gms": ["crash_restart", "partition_merge"],
}


def saturation(family: str) -> Scenario:
    order = "agreed" if family == "totem" else "fifo"
    return parse_scenario(
        {
            "name": f"{family}_saturation_live",
            "protocol": family,
            "nodes": ["A", "B", "C"],
            "duration": "4s",
            "network": {"latency": {"dist": "constant", "value": "200us"}},
            "workload": [
                {"nodes": "all", "rate": 0, "size": 1000, "order": order, "duration": "4s"}
            ],
        },
        f"<{family} saturation>",
    )


def hostile(family: str, seed: int) -> Scenario:
    """Seed ``seed`` of the hostile generator for ``family``, without what a live run
    cannot apply here (reordering and duplication on the wire)."""
    spec = registry.get(family)
    timeout = spec.timeout_ns()
    assert timeout is not None
    run = hostile_scenario(
        seed,
        family,
        token_timeout=timeout,
        harshness=Harshness(reorder=(0.0, 0.0), duplication=(0.0, 0.0)),
    )
    return replace(run.scenario, name=f"{family}_hostile_{seed}")


def _views(rows: list[dict[str, Any]]) -> dict[str, list[tuple[int, frozenset[str]]]]:
    out: dict[str, list[tuple[int, frozenset[str]]]] = {}
    for r in rows:
        if r["kind"] == "view" and not r.get("transitional"):
            out.setdefault(r["node"], []).append((r["t"], frozenset(r["members"] or [])))
    return out


def _alive(rows: list[dict[str, Any]], t: int) -> set[str]:
    """The members up at ``t`` (booted, and not crashed, left or paused since)."""
    state: dict[str, bool] = {}
    for r in sorted(rows, key=lambda r: r["t"]):
        if r["t"] > t:
            break
        if r["kind"] in ("view", "deliver", "submit"):
            state.setdefault(r["node"], True)
        if r["kind"] == "fault":
            action = json.loads(r["detail"] or "{}").get("action")
            if action in ("crash", "leave", "pause"):
                state[r["node"]] = False
            elif action in ("restart", "resume", "join"):
                state[r["node"]] = True
    return {n for n, up in state.items() if up}


def _member_set_at(views: list[tuple[int, frozenset[str]]], t: int) -> frozenset[str] | None:
    current = None
    for vt, members in views:
        if vt > t:
            break
        current = members
    return current


def measure(trace: Path, sc: Scenario) -> dict[str, Any]:
    rows = read_trace(trace).to_pylist()
    views = _views(rows)
    end = sc.duration
    faults = sorted(
        {  # one row a node for a network fault: the fault once, at its first row
            (r["t"], r["node"], json.loads(r["detail"] or "{}").get("action"))
            for r in rows
            if r["kind"] == "fault"
        }
    )
    once: list[tuple[int, str, str]] = []
    for t, node, action in faults:
        # a network fault is a row at each node it touched, within a few ms: keep the first
        if action in ("partition", "heal", "cut") and any(
            a == action and t - ft < 50_000_000 for ft, _, a in once
        ):
            continue
        once.append((t, node, action))
    faults = once
    live_end = _alive(rows, end)
    detect, split, one_view = [], [], []
    groups = {
        (r["t"], r["node"]): json.loads(r["detail"] or "{}").get("groups")
        for r in rows
        if r["kind"] == "fault"
    }
    for t, node, action in faults:
        if action == "partition":
            # every live member in a view within its own side
            sides = [set(g) for g in groups.get((t, node)) or []]
            alive = _alive(rows, t)
            rest = alive - set().union(*sides) if sides else alive
            seen = []
            for n in alive:
                side = next((g for g in sides if n in g), rest) & alive
                seen.append(next((vt for vt, m in views.get(n, []) if vt >= t and m <= side), None))
            if seen and all(s is not None for s in seen):
                split.append((max(s for s in seen if s is not None) - t) / 1e6)
        if action == "crash":
            survivors = _alive(rows, t) - {node}
            seen = []
            for n in survivors:
                first = next((vt for vt, m in views.get(n, []) if vt >= t and node not in m), None)
                seen.append(first)
            if seen and all(s is not None for s in seen):
                detect.append((max(s for s in seen if s is not None) - t) / 1e6)
        if action in ("crash", "heal"):
            # from the fault: every member live at the end in a view of exactly them
            stamps = sorted({vt for n in live_end for vt, _ in views.get(n, []) if vt >= t})
            good = None
            for s in [t, *stamps]:
                ok = all(_member_set_at(views.get(n, []), s) == live_end for n in live_end)
                if ok and good is None:
                    good = s
                elif not ok:
                    good = None
            if good is not None:
                one_view.append((good - t) / 1e6)
    # undelivered: sent a second or more before the end by a member up from then to the
    # end, and delivered by no one
    crashes = [(t, n) for t, n, a in faults if a == "crash"]
    submitted = {
        r["msg"]
        for r in rows
        if r["kind"] == "submit"
        and r["node"] in live_end
        and r["t"] < end - 1_000_000_000
        and not any(n == r["node"] and t >= r["t"] for t, n in crashes)
    }
    delivered = {r["msg"] for r in rows if r["kind"] == "deliver"}
    start = min((w.start for w in sc.workloads), default=0)
    seconds = max(1e-9, (end - start) / 1e9)
    per_node = [
        sum(1 for r in rows if r["kind"] == "deliver" and r["node"] == n) / seconds
        for n in sc.all_nodes
    ]
    return {
        "detect_ms": [round(x, 1) for x in detect],
        "split_ms": [round(x, 1) for x in split],
        "one_view_ms": [round(x, 1) for x in one_view],
        "undelivered": f"{len(submitted - delivered)}/{len(submitted)}",
        "deliveries_per_s": round(median(per_node)) if per_node else 0,
    }


def _scenario_of(name: str, settle: float) -> Scenario:
    """The catalogue scenario (or saturating one) named ``name``, settled."""
    family = name.split("_", 1)[0]
    if name.endswith("_saturation_live"):
        sc = saturation(family)
    elif "_hostile_" in name:
        sc = hostile(family, int(name.rpartition("_")[2]))
    else:
        sc = next(
            s
            for f in (ROOT / "scenarios" / family).glob("*.toml")
            if (s := load_scenario(f)).name == name
        )
    return settled(sc, int(settle * 1e9))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--settle", type=float, default=6.0, help="seconds, both sides")
    ap.add_argument("--only", choices=sorted(PAIRS), action="append")
    ap.add_argument("--scenario", action="append", type=Path, help="instead of the catalogue")
    ap.add_argument("--keep", type=Path, help="keep the runs' directories under this one")
    ap.add_argument(
        "--hostile",
        type=int,
        default=0,
        metavar="N",
        help="also N hostile schedules a family (seeds 1..N of the hostile generator, "
        "its faults scaled by the family's detection timeout, no reordering)",
    )
    ap.add_argument(
        "--measure",
        type=Path,
        help="only measure the runs kept under this directory (by --keep), again",
    )
    args = ap.parse_args()
    if args.measure:
        for trace in sorted(args.measure.glob("*/*/trace.parquet")):
            summary = json.loads((trace.parent / "summary.json").read_text())
            sc = _scenario_of(summary["scenario"], args.settle)
            head = {"scenario": summary["scenario"], "system": summary["system"]}
            print(json.dumps({**head, **measure(trace, sc)}), flush=True)
        return
    runs: list[tuple[str, Scenario]] = []
    for family in args.only or PAIRS:
        if args.scenario:
            runs += [(family, load_scenario(p)) for p in args.scenario]
            continue
        for name in CATALOGUE[family]:
            runs.append((family, load_scenario(ROOT / "scenarios" / family / f"{name}.toml")))
        runs.append((family, saturation(family)))
        runs += [(family, hostile(family, seed)) for seed in range(1, args.hostile + 1)]
    spark = spark_session("local[2]", shuffle_partitions=2, app_name="ringcast-references")
    try:
        for family, sc0 in runs:
            sc = settled(sc0, int(args.settle * 1e9))
            for system in ("ringcast", PAIRS[family]):
                with tempfile.TemporaryDirectory() as tmp:
                    out = (args.keep or Path(tmp)) / sc.name / system
                    line: dict[str, Any] = {"scenario": sc.name, "system": system}
                    try:
                        summary = run_live(
                            sc, args.seed, out, real_latency=True, system=system
                        ).summary
                    except LiveError as e:
                        print(json.dumps({**line, "refused": str(e)}), flush=True)
                        continue
                    protocol = family if system == "ringcast" else system
                    doc = check_paths(spark, [out])
                    props = doc["properties"]
                    line["claims"] = {
                        p: props[p]["status"] for p in sorted(claims(protocol)) if p in props
                    }
                    line.update(measure(out / "trace.parquet", sc))
                    line["findings"] = len(summary["findings"])
                    line["wall_s"] = summary["wall_s"]
                print(json.dumps(line), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
