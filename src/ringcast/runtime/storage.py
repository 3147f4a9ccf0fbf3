"""Stable storage for one node: a directory of small files, each written atomically.

``Persist(key, value)`` effects land here: the value goes to a temporary file in the
same directory, is flushed to disk, then renamed over the old one, so after a crash
a key holds either its old or its new value, never a torn one. Keys are stored under
a file-name-safe encoding of their text.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

_PREFIX = "k-"


def _file_name(key: str) -> str:
    return _PREFIX + base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def _key_of(name: str) -> str | None:
    if not name.startswith(_PREFIX):
        return None
    enc = name[len(_PREFIX) :]
    try:
        return base64.urlsafe_b64decode(enc + "=" * (-len(enc) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return None


class StateStore:
    """The keys a node persisted, under ``root`` (created if missing)."""

    def __init__(self, root: str | Path, *, fsync: bool = True):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self.writes = 0

    def load(self) -> dict[str, bytes]:
        """Every stored key and its value (what earlier incarnations persisted)."""
        out: dict[str, bytes] = {}
        for p in sorted(self.root.iterdir()):
            key = _key_of(p.name)
            if key is not None and p.is_file():
                out[key] = p.read_bytes()
        return out

    def get(self, key: str) -> bytes | None:
        try:
            return (self.root / _file_name(key)).read_bytes()
        except FileNotFoundError:
            return None

    def put(self, key: str, value: bytes) -> None:
        """Replace ``key``'s value atomically (write, flush, rename)."""
        final = self.root / _file_name(key)
        tmp = self.root / f".tmp-{os.getpid()}-{final.name}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, value)
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, final)
        if self.fsync:
            dfd = os.open(self.root, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        self.writes += 1


class Reservation:
    """A counter that never repeats across restarts, even after ``kill -9``.

    The store holds an upper bound; values are handed out below it and the bound is
    pushed ``block`` further (one write) whenever it is reached. A restart starts at
    the stored bound, skipping what the crashed incarnation had reserved but not used.
    ``floor`` raises the start (e.g. to a clock reading) when the store was wiped.
    """

    def __init__(self, store: StateStore, key: str, *, block: int = 1 << 16, floor: int = 0):
        self._store = store
        self._key = f"host.{key}"
        self._block = block
        raw = store.get(self._key)
        start = int(raw) if raw else 0
        self.next = max(start, floor)
        self._bound = self.next
        self._extend()

    def _extend(self) -> None:
        self._bound = self.next + self._block
        self._store.put(self._key, str(self._bound).encode())

    def take(self) -> int:
        v = self.next
        self.next = v + 1
        if self.next >= self._bound:
            self._extend()
        return v
