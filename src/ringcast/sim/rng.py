"""Seeded random streams, one per component, so a change in one part of a run
(another node, another link) does not shift the random draws of the others."""

from __future__ import annotations

import hashlib
import random


def stream(seed: int, name: str) -> random.Random:
    """An independent ``random.Random`` for component ``name`` of the run seeded ``seed``."""
    digest = hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


def derive(seed: int, name: str) -> int:
    """A 63-bit integer seed for component ``name`` (e.g. handed to a protocol machine)."""
    digest = hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1
