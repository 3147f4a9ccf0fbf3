"""A member gone bad: messages with one field set to a hostile value (nemesis ``garble``).

A real cluster authenticates every datagram, so a corrupted message that reaches a
protocol comes from a member whose key it holds: a buggy or compromised node. What such
a member sends still decodes; only a field's value is wrong. :func:`garbled` makes such
a message from a genuine one: one field, at any depth of nested messages, set to an
extreme number, an empty, unknown or oversized node id, or a tuple emptied, doubled,
shortened or reversed, then encoded and decoded as the network would carry it.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from ringcast.core.codec import DecodeError, EncodeError, decode, encode
from ringcast.protocols import registry

HOSTILE_INTS = (-1, 0, 1, 2**31, 2**62, -(2**62))
HOSTILE_STRS = ("", "Z", "A" * 200, "B:")


def hostile_field(msg: Any, rng: random.Random) -> Any:
    """``msg`` with one field, at any depth, set to a hostile value of its own type
    (``msg`` itself if no field of it can be changed)."""
    if not dataclasses.is_dataclass(msg) or isinstance(msg, type):
        return msg
    names = [f.name for f in dataclasses.fields(msg)]
    rng.shuffle(names)
    for name in names:
        v = getattr(msg, name)
        new: Any
        if isinstance(v, bool):
            new = not v
        elif isinstance(v, int):
            new = rng.choice((*HOSTILE_INTS, v + 1, v - 1))
        elif isinstance(v, str):
            new = rng.choice(HOSTILE_STRS)
        elif isinstance(v, tuple) and v:
            new = rng.choice(((), v + v, v[::-1], v[:-1]))
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            new = hostile_field(v, rng)
        else:
            continue
        try:
            return dataclasses.replace(msg, **{name: new})
        except (TypeError, ValueError):  # a message that checks its own fields
            continue
    return msg


DEFAULT_TIMEOUT = 200_000_000
"""The failure-detection timeout (ns) a garble run assumes for a protocol without one."""


def detection_timeout(protocol: str) -> int:
    """``protocol``'s failure-detection timeout in ns (:data:`DEFAULT_TIMEOUT` if none):
    the unit of a garble run's schedule."""
    return registry.get(protocol).timeout_ns() or DEFAULT_TIMEOUT


def garble_scenario(
    protocol: str, share: float, *, nodes: int = 4, garblers: int = 1
) -> dict[str, Any]:
    """The garble soak's run (``bench/garble_soak.py``, ``tests/sim/test_garble.py``):
    ``nodes`` nodes multicasting at 50/s, the second to ``garblers + 1``-th (B, C, ...)
    garbling ``share`` of their messages from 4 to 12 failure-detection timeouts of
    ``protocol`` (200 ms for one without), the run ending at 40."""
    if not 1 <= garblers < nodes <= 26:
        raise ValueError(f"need 1 <= garblers < nodes <= 26, got {garblers} and {nodes}")
    t = detection_timeout(protocol) // 1_000_000
    names = [chr(ord("A") + i) for i in range(nodes)]
    bad = names[1 : 1 + garblers]
    return {
        "protocol": protocol,
        "nodes": names,
        "duration": f"{40 * t}ms",
        "workload": [{"nodes": "all", "rate": 50}],
        "nemesis": [
            *({"at": f"{4 * t}ms", "action": "garble", "node": n, "share": share} for n in bad),
            *({"at": f"{12 * t}ms", "action": "ungarble", "node": n} for n in bad),
        ],
    }


def garbled(msg: Any, sender: str, rng: random.Random) -> Any:
    """``msg`` with one field set to a hostile value, as a receiver decodes it after the
    network carried it; None if it no longer encodes or decodes (it is then dropped as
    malformed, as a real node drops it)."""
    try:
        return decode(encode(hostile_field(msg, rng), sender=sender)).msg
    except (EncodeError, DecodeError):
        return None
