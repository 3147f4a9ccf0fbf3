"""A hostile scenario generator: seeded, overlapping and flapping faults for any protocol.

:func:`hostile_scenario` draws one run from a seed. It is harsher than the protocols'
own randomized suites and meant for safety soaks (view agreement, total order, mutual
exclusion must hold whatever happens; liveness is judged only after the quiet period
that ends every run):

* 3 to 8 nodes (``Harshness.nodes``: up to 100, named A to Z, then N26 on); a lossy,
  duplicating, reordering network for the whole run (loss 5-30%,
  duplication 0-10%, reordering 0-30% with an extra delay of up to a few hops), and a
  few *asymmetric* links whose loss in one direction is several times the other's;
* 2 to 7 fault episodes with little settling between them (the next episode may start
  before the last one ends): crashes (some permanent, never a majority), crashes with
  a restart from stable storage, pauses (a stalled process whose timers and arrivals
  queue up), two- and three-way partitions, and *flapping* partitions re-cut every
  token timeout;
* a quiet period at the end, ``quiet`` token timeouts long, with the network as lossy
  as before but no fault, so a converging protocol settles;
* with ``Harshness.garble`` above 0 (off by default), one or more members that send that
  share of their messages corrupted (the nemesis ``garble``) for a while among the other
  faults: drawn from a stream of their own after everything else, so a seed's other
  faults are the same with it on or off.

The result (:class:`HostileRun`) carries the :class:`~ringcast.sim.scenario.Scenario`,
the TOML document it was parsed from (:func:`to_toml`, for bundling a failing run as a
regression scenario), the nodes up at the end and when the last fault ended.

The generator knows nothing of the protocol beyond its registry spec (whether it
offers a lock): the caller passes the settings and the protocol's *token timeout* (the
time without the token before it starts recovery: Raincore's ``hungry_timeout``,
Totem's ``token_timeout``), which scales every fault.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ringcast.core.units import MS
from ringcast.protocols import registry
from ringcast.sim.scenario import NODE_NAMES, Scenario, parse_scenario


@dataclass(frozen=True)
class Harshness:
    """The ranges a hostile run is drawn from (both ends included)."""

    nodes: tuple[int, int] = (3, 8)
    loss: tuple[float, float] = (0.05, 0.30)
    duplication: tuple[float, float] = (0.0, 0.10)
    reorder: tuple[float, float] = (0.0, 0.30)
    episodes: tuple[int, int] = (2, 7)
    asymmetric_links: tuple[int, int] = (0, 3)
    """Directed links whose loss is raised to ``asymmetric_factor`` x the run's loss."""
    asymmetric_factor: tuple[float, float] = (2.0, 3.0)
    episode_length: tuple[float, float] = (0.2, 3.0)
    """An episode's length, in token timeouts."""
    gap: tuple[float, float] = (-0.5, 1.5)
    """Time from the end of one episode to the start of the next, in token timeouts
    (negative: they overlap)."""
    flap_cuts: tuple[int, int] = (2, 6)
    """How many times a flapping partition is re-cut, once per token timeout."""
    quiet: float = 12.0
    """The fault-free end of the run, in token timeouts."""
    garble: float = 0.0
    """The share of their messages that garbling members corrupt (0: nobody garbles)."""
    garblers: tuple[int, int] = (1, 2)
    """How many members garble (never more than a minority of those alive at the end)."""


HOSTILE = Harshness()
"""The harshest setting: everything at once."""

KINDS = ("crash", "restart", "pause", "partition2", "partition3", "flap")


@dataclass(frozen=True)
class HostileRun:
    seed: int
    scenario: Scenario
    doc: dict[str, Any]
    live: frozenset[str]
    """Nodes up at the end of the run (never crashed for good)."""
    quiet_from: int
    """When the last fault ended (ns): from here on only the network misbehaves."""
    episodes: tuple[str, ...] = field(default=())
    """What was drawn, in order (for reports): ``"pause B 80ms"``, ``"flap x4"``..."""

    def toml(self) -> str:
        return to_toml(self.doc)


def _ms(ns: int) -> str:
    return f"{round(ns / MS)}ms"


def _q(ns: float) -> int:
    """Whole milliseconds: every instant of a hostile run is one, so the TOML is exact."""
    return round(ns / MS) * MS


def _groups(rng: random.Random, nodes: list[str], parts: int) -> list[list[str]]:
    shuffled = nodes[:]
    rng.shuffle(shuffled)
    cuts = sorted(rng.sample(range(1, len(nodes)), parts - 1))
    bounds = [0, *cuts, len(nodes)]
    return [sorted(shuffled[a:b]) for a, b in itertools.pairwise(bounds)]


def hostile_scenario(
    seed: int,
    protocol: str,
    *,
    token_timeout: int,
    settings: Mapping[str, Any] | None = None,
    harshness: Harshness = HOSTILE,
    nodes: int | None = None,
    workload: bool = True,
) -> HostileRun:
    """One hostile run of ``protocol`` drawn from ``seed`` (see the module docstring).

    ``token_timeout`` (ns) scales the faults; ``settings`` are the protocol's (validated
    like a file's); ``nodes`` fixes the group size instead of drawing it.
    """
    spec = registry.get(protocol)
    if token_timeout <= 0:
        raise ValueError(f"token_timeout must be positive, got {token_timeout}")
    h = harshness
    rng = random.Random(f"hostile:{seed}")
    n = nodes if nodes is not None else rng.randint(*h.nodes)
    if not 1 <= n <= len(NODE_NAMES):
        raise ValueError(f"nodes must be between 1 and {len(NODE_NAMES)}, got {n}")
    names = list(NODE_NAMES[:n])
    tt = token_timeout
    loss = round(rng.uniform(*h.loss), 3)
    network: dict[str, Any] = {
        "latency": {"dist": "uniform", "low": "0.3ms", "high": "1.5ms"},
        "loss": loss,
        "duplication": round(rng.uniform(*h.duplication), 3),
        "reorder": round(rng.uniform(*h.reorder), 3),
        "reorder_delay": _ms(rng.choice((1, 2, 4, 8)) * MS),
    }
    links = []
    if n > 1:
        pairs = [(a, b) for a in names for b in names if a != b]
        for a, b in rng.sample(pairs, min(len(pairs), rng.randint(*h.asymmetric_links))):
            worse = min(0.9, round(loss * rng.uniform(*h.asymmetric_factor), 3))
            links.append({"from": a, "to": b, "loss": worse})
    if links:
        network["links"] = links

    # Node faults keep per-node timelines so that overlapping episodes stay valid: a node
    # is busy (crashed or paused) until its episode ends; at most a minority stays down.
    busy_until = dict.fromkeys(names, 0)
    dead: set[str] = set()
    max_dead = (n - 1) // 2
    nemesis: list[dict[str, Any]] = []
    cuts: list[tuple[int, int, list[list[str]]]] = []  # (start, end, groups) per cut
    drawn: list[str] = []
    t = _q(rng.randint(2, 8) * tt / 10 + 20 * MS)
    first, last_end = t, t
    for _ in range(rng.randint(*h.episodes)):
        kind = rng.choice(KINDS)
        length = max(MS, _q(rng.uniform(*h.episode_length) * tt))
        end = t + length
        if kind in ("crash", "restart", "pause"):
            free = [x for x in names if x not in dead and busy_until[x] <= t]
            if kind == "crash" and len(dead) >= max_dead:
                kind = "restart"
            if not free:
                kind = "partition2"
            else:
                victim = rng.choice(free)
                if kind == "pause":
                    nemesis.append({"at": _ms(t), "action": "pause", "node": victim})
                    nemesis.append({"at": _ms(end), "action": "resume", "node": victim})
                    busy_until[victim] = end
                else:
                    nemesis.append({"at": _ms(t), "action": "crash", "node": victim})
                    if kind == "restart":
                        nemesis.append({"at": _ms(end), "action": "restart", "node": victim})
                        busy_until[victim] = end
                    else:
                        dead.add(victim)
                        busy_until[victim] = 1 << 62
                        end = t
                drawn.append(f"{kind} {victim} at {_ms(t)} for {_ms(end - t)}")
        if kind in ("partition2", "partition3") and n > 1:
            parts = 3 if kind == "partition3" and n >= 3 else 2
            groups = _groups(rng, names, parts)
            cuts.append((t, end, groups))
            drawn.append(f"partition {groups} at {_ms(t)} for {_ms(length)}")
        elif kind == "flap" and n > 1:
            k = rng.randint(*h.flap_cuts)
            step = max(MS, _q(tt))
            end = t + k * step
            for i in range(k):
                groups = _groups(rng, names, rng.choice((2, 2, 3)) if n >= 3 else 2)
                cuts.append((t + i * step, t + (i + 1) * step, groups))
            drawn.append(f"flapping partition x{k} at {_ms(t)} every {_ms(tt)}")
        last_end = max(last_end, end)
        t = max(t + MS, end + _q(rng.uniform(*h.gap) * tt))

    # The network timeline: every cut at its start; a heal when no cut is active any more
    # (an overlapping cut replaces the one before it: partitions re-cut, never stack).
    cuts.sort(key=lambda c: c[0])
    covered_until = 0
    for i, (start, end, groups) in enumerate(cuts):
        nemesis.append({"at": _ms(start), "action": "partition", "groups": groups})
        covered_until = max(covered_until, end)
        nxt = cuts[i + 1][0] if i + 1 < len(cuts) else None
        if nxt is None or nxt > covered_until:
            nemesis.append({"at": _ms(covered_until), "action": "heal"})
        else:
            covered_until = max(covered_until, nxt)
    last_end = max([last_end, covered_until, *list(_end_times(nemesis))])
    if h.garble > 0:
        drawn += _garble(random.Random(f"hostile-garble:{seed}"), h, names, dead, first,
                         last_end, tt, nemesis)  # fmt: skip
    duration = last_end + _q(h.quiet * tt)
    nemesis.sort(key=lambda a: _ns(a["at"]))

    doc: dict[str, Any] = {
        "name": f"{protocol}_hostile_{seed}",
        "protocol": protocol,
        "nodes": names,
        "duration": _ms(duration),
        "seed": seed,
        "settings": dict(settings or {}),
        "network": network,
    }
    if workload:
        wl: list[dict[str, Any]] = [
            {
                "nodes": "all",
                "kind": "multicast",
                "rate": 50.0,
                "size": 8,
                "start": "5ms",
                "duration": _ms(last_end + 2 * tt),
            }
        ]
        if spec.offers_lock:
            wl.append(
                {
                    "nodes": names[: max(2, n // 2)],
                    "kind": "lock",
                    "rate": 40.0,
                    "hold": "2ms",
                    "start": "10ms",
                    "duration": _ms(last_end + 2 * tt),
                }
            )
        doc["workload"] = wl
    doc["nemesis"] = nemesis
    sc = parse_scenario(doc, f"{protocol}_hostile_{seed}")
    return HostileRun(
        seed=seed,
        scenario=sc,
        doc=doc,
        live=frozenset(set(names) - dead),
        quiet_from=last_end,
        episodes=tuple(drawn),
    )


def _garble(
    rng: random.Random,
    h: Harshness,
    names: list[str],
    dead: set[str],
    first: int,
    last_end: int,
    tt: int,
    nemesis: list[dict[str, Any]],
) -> list[str]:
    """Garbling members among the other faults, each for an episode's length within
    [first, last_end] (appended to ``nemesis``); what was drawn, for the report."""
    live = [x for x in names if x not in dead]
    k = min(rng.randint(*h.garblers), max(1, (len(live) - 1) // 2))
    drawn = []
    for node in rng.sample(live, min(k, len(live))):
        start = _q(rng.randint(first, max(first, last_end - MS)))
        end = min(last_end, start + max(MS, _q(rng.uniform(*h.episode_length) * tt)))
        nemesis.append({"at": _ms(start), "action": "garble", "node": node, "share": h.garble})
        nemesis.append({"at": _ms(end), "action": "ungarble", "node": node})
        drawn.append(f"garble {node} at {_ms(start)} for {_ms(end - start)}")
    return drawn


def _ns(ms: str) -> int:
    return int(ms.removesuffix("ms")) * MS


def _end_times(nemesis: list[dict[str, Any]]) -> list[int]:
    return [_ns(a["at"]) for a in nemesis]


# ---------------------------------------------------------------- TOML


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {v!r} as TOML")


def to_toml(doc: Mapping[str, Any]) -> str:
    """The scenario document as a TOML file (the subset scenario files use): scalars and
    lists at the top, then ``[settings]``, ``[network]`` (with ``[[network.links]]``),
    ``[[workload]]`` and ``[[nemesis]]``; :func:`~ringcast.sim.load_scenario` reads it
    back to the same scenario."""
    lines: list[str] = []
    tables = {k: v for k, v in doc.items() if isinstance(v, Mapping)}
    arrays = {
        k: v
        for k, v in doc.items()
        if isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v)
    }
    for k, v in doc.items():
        if k not in tables and k not in arrays:
            lines.append(f"{k} = {_value(v)}")
    for k, table in tables.items():
        sub = {
            kk: vv
            for kk, vv in table.items()
            if isinstance(vv, list) and vv and all(isinstance(x, Mapping) for x in vv)
        }
        lines.append("")
        lines.append(f"[{k}]")
        for kk, vv in table.items():
            if kk not in sub:
                lines.append(f"{kk} = {_value(vv)}")
        for kk, rows in sub.items():
            for row in rows:
                lines.append("")
                lines.append(f"[[{k}.{kk}]]")
                lines.extend(f"{a} = {_value(b)}" for a, b in row.items())
    for k, rows in arrays.items():
        for row in rows:
            lines.append("")
            lines.append(f"[[{k}]]")
            lines.extend(f"{a} = {_value(b)}" for a, b in row.items())
    return "\n".join(lines) + "\n"
