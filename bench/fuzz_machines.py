"""Fuzz every registered protocol's machine with many random decoded messages.

For each installed protocol family (``registry.installed_names()``, as the fuzz test in
``tests/fuzz`` finds them, so a new family is benchmarked the day it registers, with no
edit here): machines driven into each state they reach in short seeded simulations
(``tests/fuzz/fuzzing.py``) are fed ``--count`` random
messages (every registered wire type, most of them the protocol's own; field values
drawn from the annotations: huge and negative integers, empty and duplicate-laden
tuples, known, unknown and malformed node ids), each encoded and decoded first. A fresh
copy of a machine is taken every ``--reset`` inputs. Every ``handle()`` runs under a
``--guard`` second timer: one that has not returned by then is an unbounded loop,
interrupted and counted. Prints, per protocol, the inputs fed, the exceptions out of
``handle()`` and the unbounded loops (there must be none of either), the ``drop`` rows
the machines wrote (the rejected inputs, counted), the slowest ``handle()`` and the
inputs per second; the first failing input is printed in full, to be added to
``tests/fuzz`` as a regression. Exits 1 if any input raised or looped.

    python bench/fuzz_machines.py [--count 1000000] [--seed 1] [--protocols a,b]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import enum
import random
import signal
import sys
import time
import types
import typing
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz.fuzzing import (
    NODES,
    all_wire_types,
    machines_in_states,
    state_of,
    wire_types_of,
)

from ringcast.core.codec import DecodeError, EncodeError, decode, encode
from ringcast.core.effects import Record
from ringcast.core.events import Received
from ringcast.protocols import registry

BAD_IDS = ("", "Z", "unknown-node", "a b", "x" * 70)
SPECIAL_INTS = (-(2**63), 2**63 - 1, -1, 0, 1, 2, 2**31, 2**32, 2**62, -(2**62), 2**53 + 1)


class Unbounded(Exception):
    """A ``handle()`` still running when the guard timer fired."""


def _expire(signum: int, frame: object) -> None:
    raise Unbounded


class Gen:
    """Random field values for a wire dataclass, from its annotations."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.hints: dict[type, list[tuple[str, Any]]] = {}
        self.types = all_wire_types()

    def value(self, tp: Any, depth: int) -> Any:
        r = self.rng
        if tp is int:
            x = r.random()
            if x < 0.6:
                return r.randint(-2, 40)
            if x < 0.85:
                return r.choice(SPECIAL_INTS)
            return r.randint(-(2**63), 2**63 - 1)
        if tp is bool:
            return r.random() < 0.5
        if tp is float:
            return r.choice((0.0, -1.0, 1e300, float("inf"), float("nan"), r.random()))
        if tp is str:
            return r.choice(NODES) if r.random() < 0.8 else r.choice(BAD_IDS)
        if tp is bytes:
            return r.randbytes(r.randint(0, 24))
        if tp is object:
            return self.message(r.choice(self.types), depth + 1)
        if isinstance(tp, type) and issubclass(tp, enum.IntEnum):
            return r.choice(list(tp))
        if dataclasses.is_dataclass(tp):
            return self.message(tp, depth + 1)
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is tuple:
            n = r.choice((0, 0, 1, 2, 3, 5)) if depth < 3 else r.choice((0, 1))
            items = [self.value(args[0], depth + 1) for _ in range(n)]
            if items and r.random() < 0.2:
                items.append(items[0])  # a duplicate
            return tuple(items)
        if origin in (typing.Union, types.UnionType):
            inner = args[0] if args[1] is type(None) else args[1]
            return None if r.random() < 0.3 else self.value(inner, depth + 1)
        raise TypeError(tp)

    def message(self, cls: type, depth: int = 0) -> Any:
        fields = self.hints.get(cls)
        if fields is None:
            hints = typing.get_type_hints(cls)
            fields = [(f.name, hints[f.name]) for f in dataclasses.fields(cls)]
            self.hints[cls] = fields
        return cls(**{name: self.value(tp, depth) for name, tp in fields})


def run(name: str, count: int, reset: int, seed: int, guard: float = 5.0) -> dict[str, Any]:
    rng = random.Random(seed)
    gen = Gen(rng)
    states = machines_in_states(name)
    pool = [m for ms in states.values() for m in ms]
    own = wire_types_of(name) or gen.types
    fed = errors = loops = undecodable = drops = 0
    slowest = 0.0
    first_error = ""
    old_handler = signal.signal(signal.SIGALRM, _expire)
    m: Any = None
    t0 = time.perf_counter()
    while fed < count:
        if fed % reset == 0:
            m = copy.deepcopy(rng.choice(pool))
        cls = rng.choice(own) if rng.random() < 0.8 else rng.choice(gen.types)
        try:
            msg = decode(encode(gen.message(cls), sender="A")).msg
        except (EncodeError, DecodeError, OverflowError, ValueError):
            undecodable += 1
            continue
        src = rng.choice(NODES) if rng.random() < 0.9 else rng.choice(BAD_IDS)
        state = state_of(m)
        s = time.perf_counter()
        try:
            signal.setitimer(signal.ITIMER_REAL, guard)
            try:
                out = m.handle(Received(src, msg), 10**10 + fed)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except Unbounded:  # did not return within the guard: an unbounded loop
            loops += 1
            first_error = first_error or f"loop in {state} from {src!r}: {msg!r}"
            m = copy.deepcopy(rng.choice(pool))
            out = []
        except Exception as e:  # a failure of the machine: counted and reported
            errors += 1
            first_error = first_error or f"{e!r} in {state} from {src!r}: {msg!r}"
            m = copy.deepcopy(rng.choice(pool))
            out = []
        took = time.perf_counter() - s
        slowest = max(slowest, took)
        drops += sum(1 for e in out if type(e) is Record and e.kind == "drop")
        fed += 1
    wall = time.perf_counter() - t0
    signal.signal(signal.SIGALRM, old_handler)
    return {
        "protocol": name,
        "states": len(states),
        "inputs": fed,
        "not encodable": undecodable,
        "exceptions": errors,
        "unbounded loops": loops,
        "drop rows": drops,
        "slowest handle ms": round(slowest * 1e3, 2),
        "inputs/s": round(fed / wall),
        "first exception": first_error,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1_000_000, help="inputs per protocol")
    ap.add_argument("--reset", type=int, default=1000, help="inputs per machine copy")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--guard",
        type=float,
        default=5.0,
        help="seconds before a handle() that has not returned counts as an unbounded loop",
    )
    ap.add_argument("--protocols", default="", help="comma-separated (default: every installed)")
    args = ap.parse_args()
    names = [p for p in args.protocols.split(",") if p] or registry.installed_names()
    bad = 0
    print(
        "| protocol | states | inputs | exceptions | unbounded loops | drop rows "
        "| slowest handle | inputs/s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        r = run(name, args.count, args.reset, args.seed, args.guard)
        bad += r["exceptions"] + r["unbounded loops"]
        print(
            f"| {name} | {r['states']} | {r['inputs']:,} | {r['exceptions']} | "
            f"{r['unbounded loops']} | {r['drop rows']:,} | {r['slowest handle ms']} ms | "
            f"{r['inputs/s']:,} |",
            flush=True,
        )
        if r["first exception"]:
            print(f"  first exception: {r['first exception']}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
