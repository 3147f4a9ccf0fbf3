"""Shared pieces of the machines' fuzz test and benchmark.

- :func:`message_strategy`: hypothesis-generated messages of any registered wire type,
  with field values built from the dataclass annotations: huge and negative integers,
  empty, long and duplicate-laden tuples, node ids known to the run, unknown, empty or
  malformed, arbitrary bytes; then encoded and decoded again, so the machine sees
  exactly what a decoder can hand it.
- :func:`machines_in_states`: machines of a protocol driven into each state they reach
  in short seeded simulations (a quiet start, a partition, a crash, loss), keyed by
  their ``state`` (or the machine's type when it has none).
- :func:`snapshot` / :func:`same_state`: a machine's state, to check a rejected
  message changed nothing.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import signal
import types
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import strategies as st

from ringcast.core.codec import DecodeError, EncodeError, decode, encode, registered_types
from ringcast.protocols import registry
from ringcast.sim import Simulation, parse_scenario

NODES = ("A", "B", "C", "D")
INT64 = (-(2**63), 2**63 - 1)

node_ids = st.one_of(
    st.sampled_from(NODES),
    st.sampled_from(["", "Z", "unknown-node", "a b", "x" * 70, "\u00e9"]),
    st.text(max_size=8),
)
ints = st.one_of(
    st.integers(-3, 40),
    st.sampled_from([INT64[0], INT64[1], -1, 2**31, 2**32, 2**62, -(2**62), 2**53 + 1]),
    st.integers(*INT64),
)


def all_wire_types() -> list[type]:
    """Every registered wire type, after every protocol family was loaded."""
    registry.names()  # loads the entry points, so every family's messages are registered
    return [cls for _, cls in sorted(registered_types().items())]


def wire_types_of(name: str) -> list[type]:
    """The wire types in a protocol's declared range (every registered type if none)."""
    spec = registry.get(name)
    types_by_id = registered_types()
    if spec.wire_ids is None:
        return all_wire_types()
    lo, hi = spec.wire_ids
    return [cls for tid, cls in sorted(types_by_id.items()) if lo <= tid <= hi]


def _for_type(tp: Any, depth: int) -> st.SearchStrategy[Any]:
    if tp is int:
        return ints
    if tp is bool:
        return st.booleans()
    if tp is float:
        return st.floats(allow_nan=True, allow_infinity=True)
    if tp is str:
        return node_ids
    if tp is bytes:
        return st.binary(max_size=64)
    if tp is object:
        return st.deferred(lambda: any_message(depth + 1))
    if isinstance(tp, type) and issubclass(tp, enum.IntEnum):
        return st.sampled_from(list(tp))
    if dataclasses.is_dataclass(tp):
        return _dataclass(tp, depth + 1)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _for_type(args[0], depth + 1)
        plain = st.lists(item, max_size=6 if depth < 3 else 2)
        dups = st.lists(item, min_size=1, max_size=3).map(lambda xs: xs + xs)
        return st.one_of(plain, dups).map(tuple)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        inner = args[0] if args[1] is type(None) else args[1]
        return st.one_of(st.none(), _for_type(inner, depth + 1))
    raise TypeError(f"no strategy for field type {tp!r}")


def _dataclass(cls: type, depth: int = 0) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    fields = {f.name: _for_type(hints[f.name], depth) for f in dataclasses.fields(cls)}
    return st.builds(cls, **fields)


def any_message(depth: int = 0) -> st.SearchStrategy[Any]:
    return st.sampled_from(all_wire_types()).flatmap(lambda c: _dataclass(c, depth))


def _round_trip(msg: Any) -> Any:
    """The message as a receiver decodes it; None if it cannot travel (not encodable)."""
    try:
        return decode(encode(msg, sender="A")).msg
    except (EncodeError, DecodeError, OverflowError, ValueError):
        return None


def message_strategy(classes: list[type]) -> st.SearchStrategy[Any]:
    """Decoded messages of the given wire types (never None)."""
    return (
        st.sampled_from(classes)
        .flatmap(_dataclass)
        .map(_round_trip)
        .filter(lambda m: m is not None)
    )


# ------------------------------------------------------------ machines in their states


def _doc(name: str, duration_ms: float, faults: list[dict[str, Any]], loss: float) -> dict:
    return {
        "name": f"fuzz_{name}",
        "protocol": name,
        "nodes": list(NODES[:3]),
        "duration": f"{int(duration_ms * 1000)}us",
        "count_bytes": False,
        "network": {"latency": {"dist": "uniform", "low": "100us", "high": "600us"}, "loss": loss},
        "workload": [{"nodes": "all", "rate": 200.0, "size": 50, "start": "1ms"}],
        "nemesis": faults,
    }


DRIVES: tuple[tuple[float, list[dict[str, Any]], float], ...] = (
    (0.05, [], 0.0),
    (0.5, [], 0.0),
    (2.0, [], 0.0),
    (8.0, [], 0.1),
    (30.0, [], 0.0),
    (80.0, [], 0.0),
    (300.0, [], 0.05),
    (
        420.0,
        [
            {"at": "300ms", "action": "partition", "groups": [["A"], ["B", "C"]]},
            {"at": "380ms", "action": "heal"},
        ],
        0.0,
    ),
    (
        700.0,
        [
            {"at": "300ms", "action": "partition", "groups": [["A"], ["B", "C"]]},
            {"at": "600ms", "action": "heal"},
        ],
        0.0,
    ),
    (500.0, [{"at": "250ms", "action": "crash", "node": "C"}], 0.0),
    (1500.0, [{"at": "250ms", "action": "crash", "node": "C"}], 0.0),
)
"""Short runs that stop a group in different phases: booting, forming its first
configuration, operating, splitting, merging, losing a member."""


def state_of(m: Any) -> str:
    s = getattr(m, "state", None)
    if s is None:
        inner = getattr(m, "upper", None)  # a protocol under ringcast.layers.Stack
        s = getattr(inner, "state", None) if inner is not None else None
    if s is None:
        return type(m).__name__
    if isinstance(s, tuple):
        return "/".join(str(getattr(x, "value", x)) for x in s)
    return str(getattr(s, "value", s))


def machines_in_states(name: str, *, per_state: int = 2) -> dict[str, list[Any]]:
    """Machines of protocol ``name`` by the state they were left in, over :data:`DRIVES`
    (at most ``per_state`` each)."""
    found: dict[str, list[Any]] = {}
    for i, (ms, faults, loss) in enumerate(DRIVES):
        res = Simulation(parse_scenario(_doc(name, ms, faults, loss), f"drive:{i}"), seed=i).run()
        for node in sorted(res.machines):
            m = res.machines[node]
            if m is None:
                continue
            lst = found.setdefault(state_of(m), [])
            if len(lst) < per_state:
                lst.append(m)
    return found


# ------------------------------------------------------------ state comparison


_SKIP = {"now", "ctx", "_current_ev", "last_heard", "dropped", "drops", "_malformed", "counters"}
"""Not compared, as attributes or slots: a machine's clock and context, Totem's
dispatch bookkeeping, a failure detector's ``last_heard`` (any frame from a peer, even
one dropped, is a sign that the peer is alive: that is what the detector is for), and
the drop counters (``dropped``, ``drops``, ``_malformed``, ``counters``: a dropped
message is counted, which is the point), the machine driver's among them."""


def _norm(v: Any, depth: int = 0) -> Any:
    if depth > 12:
        return "..."
    if v is None or isinstance(v, int | float | str | bytes | bool | enum.Enum):
        return v
    if callable(v) and not hasattr(v, "__dict__") and not hasattr(v, "__slots__"):
        return "<callable>"
    if isinstance(v, types.MethodType | types.FunctionType | types.BuiltinFunctionType):
        return "<callable>"
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return v if getattr(v, "__hash__", None) else repr(v)
    if isinstance(v, dict):
        return {k: _norm(x, depth + 1) for k, x in v.items() if k not in _SKIP}
    if isinstance(v, list | tuple) or type(v).__name__ == "deque":
        return [_norm(x, depth + 1) for x in v]
    if isinstance(v, set | frozenset):
        return frozenset(v)
    if hasattr(v, "__dict__"):
        return (type(v).__name__, _norm(vars(v), depth + 1))
    slots = getattr(type(v), "__slots__", None)
    if slots:
        return (
            type(v).__name__,
            {s: _norm(getattr(v, s, None), depth + 1) for s in slots if s not in _SKIP},
        )
    return repr(v)


def snapshot(m: Any) -> Any:
    """A deep, comparable picture of a machine's state (its clock and context aside)."""
    return _norm(copy.deepcopy(m))


def same_state(a: Any, b: Any) -> bool:
    return bool(a == b)


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Raise TimeoutError if the block runs longer than ``seconds`` (a hang guard)."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"did not return within {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def only_drops(effects: list[Any]) -> bool:
    """True if ``effects`` is one or more ``drop`` records and nothing else."""
    from ringcast.core.effects import Record

    return bool(effects) and all(type(e) is Record and e.kind == "drop" for e in effects)


Check = Callable[[Any, Any], None]
