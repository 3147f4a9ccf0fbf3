"""Datagram security: every packet carries the cluster id and is authenticated.

Envelope (network byte order)::

    magic   2 bytes  b"RS"
    version u8       2 (VERSION)
    mode    u8       1 = HMAC-SHA256, 2 = AES-256-GCM, 3 = none (no tag)
    cluster u32      cluster id (hash of the cluster name)
    seq     u64      sender sequence number, strictly increasing across restarts
    slen    u8       length of the sender id
    sender  slen     sender node id, UTF-8
    dlen    u8       length of the receiver id (0: a multicast, for every member)
    dest    dlen     receiver node id of a unicast, UTF-8
    body    ...      a wire frame (HMAC and none) or its AES-GCM ciphertext
    tag     32 / 16  HMAC-SHA256 of everything before it, or the GCM tag (none: absent)

The header is authenticated in both authenticating modes (GCM: as associated data), the
receiver of a unicast with it: a unicast captured between two members and resent to a
third names the wrong receiver, and the third refuses it as the replay it is (the
replay window is per sender, shared by its unicasts to every member and its
multicasts, so a copy sent to its own receiver again is a replay too). A multicast
names no receiver: each member takes it once. A packet of version 1 (before the
receiver was bound) is refused as ``version``, named in the log, as is any other
version.
Mode ``none`` authenticates nothing: anyone who can reach a node's port can speak for
any member. It is for a network the cluster trusts and for measuring what authentication
costs (corosync's udpu transport has no crypto); the cluster id, the sender and the
replay window are still checked. Subkeys for
each mode are derived from the cluster key file, so one key never serves two
algorithms. The GCM nonce is the 8-byte ``seq`` plus 4 bytes derived from the sender
id, unique per key as long as ``seq`` never repeats for a sender (see
:class:`~ringcast.runtime.storage.Reservation`) and no two node ids share those 4
bytes (checked when the cluster is loaded).

:class:`Opener` verifies a packet and checks ``seq`` against a per-sender sliding
window: packets from an older incarnation of a sender (an old ring) or seen before
are replays. Every refusal is a :class:`Dropped` with a reason, counted by the host.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import struct
from collections.abc import Iterable
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ringcast.runtime.errors import KeyFileError as KeyFileError

MAGIC = b"RS"
VERSION = 2
MODE_HMAC = 1
MODE_GCM = 2
MODE_NONE = 3
MODES = {"hmac": MODE_HMAC, "aes-gcm": MODE_GCM, "none": MODE_NONE}
KEY_BYTES = 32
HMAC_TAG = 32
GCM_TAG = 16
_TAG_BYTES = {MODE_HMAC: HMAC_TAG, MODE_GCM: GCM_TAG, MODE_NONE: 0}
REPLAY_WINDOW = 4096

_WINDOW_MASK = (1 << REPLAY_WINDOW) - 1
_HEAD = struct.Struct("!2sBBIQB")
_U64 = struct.Struct("!Q")
MIN_PACKET = _HEAD.size + 3
"""A header, a one-byte sender id, the receiver's length and a one-byte body: no packet of
any mode is shorter."""

DROP_REASONS = (
    "truncated",
    "garbage",
    "version",
    "bad_mode",
    "foreign_cluster",
    "unknown_sender",
    "bad_tag",
    "replay",
    "malformed",
    "sender_mismatch",
    "own_packet",
)
"""Why :class:`Opener` (and the host after it) refuses a packet: shorter than any packet
(``truncated``), not an envelope (``garbage``), an envelope of another version
(``version``), of the other mode (``bad_mode``), of another cluster
(``foreign_cluster``), from a node not in the cluster file (``unknown_sender``), a
failed tag (``bad_tag``), seen before or addressed to another member (``replay``), a
frame that does not decode (``malformed``) or names another sender
(``sender_mismatch``), from this node itself (``own_packet``: its own multicast looped
back, or a packet bounced back)."""


class Dropped(Exception):
    """A packet refused before the protocol sees it; ``reason`` is one of DROP_REASONS."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.detail = detail
        """What a person needs beyond the reason (the versions of a ``version`` drop)."""


# ---------------------------------------------------------------- key files


def write_key_file(path: str | Path, *, force: bool = False) -> Path:
    """Write a fresh 256-bit key (hex) to ``path``, readable by its owner only."""
    p = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    try:
        fd = os.open(p, flags, 0o600)
    except FileExistsError:
        raise KeyFileError(f"{p}: exists already (use --force to replace it)") from None
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, (secrets.token_hex(KEY_BYTES) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return p


def read_key_file(path: str | Path) -> bytes:
    """The key in ``path``; refuse a file that group or others can read or write."""
    p = Path(path)
    try:
        st = p.stat()
        text = p.read_text().strip()
    except FileNotFoundError:
        raise KeyFileError(
            f"{p}: no such key file (create one with `ringcast keygen {p}`, and copy it "
            "to every node of the cluster)"
        ) from None
    except OSError as e:
        raise KeyFileError(f"{p}: cannot read key file: {e.strerror}") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(
            f"{p}: key file permissions {stat.S_IMODE(st.st_mode):04o} are too open (use 0600)"
        )
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise KeyFileError(f"{p}: key file must hold {KEY_BYTES * 2} hex digits") from None
    if len(key) != KEY_BYTES:
        raise KeyFileError(f"{p}: key is {len(key)} bytes, expected {KEY_BYTES}")
    return key


def _subkey(master: bytes, label: bytes) -> bytes:
    return hmac.digest(master, b"ringcast/v1/" + label, "sha256")


def key_id(master: bytes) -> str:
    """A public fingerprint of a cluster key (an HMAC of a fixed label under it, so it
    says nothing of the key): what ``ringcast status`` compares to tell a node that runs
    with another key."""
    return _subkey(master, b"key-id")[:8].hex()


def _keyed_hmac(master: bytes) -> hmac.HMAC:
    """HMAC-SHA256 under the datagram subkey, keyed once: a packet's tag is computed on a
    ``copy()`` of it, which skips the key schedule (``hmac.digest`` redoes it every call,
    about a third of the cost of tagging a 1 KB packet)."""
    return hmac.new(_subkey(master, b"hmac-sha256"), digestmod="sha256")


def _nonce_tail(sender: str) -> bytes:
    return hashlib.sha256(sender.encode()).digest()[:4]


def check_nonce_tails(node_ids: Iterable[str]) -> None:
    """Raise ``ValueError`` if two node ids would share a GCM nonce space."""
    seen: dict[bytes, str] = {}
    for n in node_ids:
        tail = _nonce_tail(n)
        if tail in seen:
            raise ValueError(f"node ids {seen[tail]!r} and {n!r} collide in the AES-GCM nonce")
        seen[tail] = n


# ---------------------------------------------------------------- sealing


class Sealer:
    """Wraps this node's outgoing frames in authenticated envelopes."""

    def __init__(self, key: bytes, mode: str, cluster_id: int, sender: str):
        self.mode = MODES[mode]
        sender_b = sender.encode()
        if not 0 < len(sender_b) < 256:
            raise ValueError(f"sender id {sender!r} must be 1..255 bytes")
        self._head = _HEAD.pack(MAGIC, VERSION, self.mode, cluster_id, 0, 0)[:8]
        self._sender = bytes([len(sender_b)]) + sender_b
        self._multicast = self._sender + b"\x00"
        self._dest: dict[str, bytes] = {}
        self._mac = _keyed_hmac(key)
        self._gcm = AESGCM(_subkey(key, b"aes-256-gcm")) if self.mode == MODE_GCM else None
        self._tail = _nonce_tail(sender)

    def seal(self, frame: bytes, seq: int, dest: str = "") -> bytes:
        """The envelope of ``frame`` for receiver ``dest`` ("": a multicast, for every
        member); ``seq`` must never repeat for this sender and key."""
        header = self._head + _U64.pack(seq) + (self._dest_bytes(dest) if dest else self._multicast)
        if self.mode == MODE_NONE:
            return header + frame
        if self._gcm is None:
            data = header + frame
            mac = self._mac.copy()
            mac.update(data)
            return data + mac.digest()
        nonce = _U64.pack(seq) + self._tail
        return header + self._gcm.encrypt(nonce, frame, header)

    def _dest_bytes(self, dest: str) -> bytes:
        """The sender and receiver fields of a unicast to ``dest`` (kept a receiver)."""
        got = self._dest.get(dest)
        if got is None:
            dest_b = dest.encode()
            if len(dest_b) > 255:
                raise ValueError(f"receiver id {dest!r} longer than 255 bytes")
            got = self._dest[dest] = self._sender + bytes([len(dest_b)]) + dest_b
        return got


class _Window:
    __slots__ = ("bits", "top")

    def __init__(self, seq: int):
        self.top = seq
        self.bits = 1

    def accept(self, seq: int) -> bool:
        """True the first time ``seq`` is seen inside the window, else False (a replay)."""
        if seq > self.top:
            shift = seq - self.top
            self.bits = ((self.bits << shift) | 1) & _WINDOW_MASK if shift < REPLAY_WINDOW else 1
            self.top = seq
            return True
        back = self.top - seq
        if back >= REPLAY_WINDOW:
            return False
        mask = 1 << back
        if self.bits & mask:
            return False
        self.bits |= mask
        return True


class Opener:
    """Checks incoming envelopes; :meth:`open` returns ``(sender, frame)`` or raises Dropped.

    ``receiver`` is the node that opens: a unicast addressed to another node is a
    ``replay``, a packet from ``receiver`` itself ``own_packet``. Without one (a tool
    that reads captured packets) every receiver is taken."""

    def __init__(
        self,
        key: bytes,
        mode: str,
        cluster_id: int,
        senders: Iterable[str],
        receiver: str | None = None,
    ):
        self.mode = MODES[mode]
        self._receiver = None if receiver is None else receiver.encode()
        self._own = receiver
        self._cluster = cluster_id
        self._mac = _keyed_hmac(key)
        self._gcm = AESGCM(_subkey(key, b"aes-256-gcm")) if self.mode == MODE_GCM else None
        # sender id bytes -> (sender id, its GCM nonce tail), so a packet's sender is
        # looked up without decoding it.
        self._names = {n.encode(): (n, _nonce_tail(n)) for n in senders}
        self._windows: dict[str, _Window] = {}

    def open(self, data: bytes) -> tuple[str, bytes | memoryview]:
        """Verify ``data``; return its sender and its frame (a view into ``data``)."""
        n = len(data)
        if n < MIN_PACKET:
            raise Dropped("truncated")
        magic, version, mode, cluster, seq, slen = _HEAD.unpack_from(data, 0)
        if magic != MAGIC:
            raise Dropped("garbage")
        if version != VERSION:
            raise Dropped(
                "version",
                f"a packet of security envelope version {version}; this node speaks "
                f"{VERSION}: run one ringcast release on every node",
            )
        if cluster != self._cluster:
            raise Dropped("foreign_cluster")
        if mode != self.mode:
            raise Dropped("bad_mode")
        send_end = _HEAD.size + slen
        if n < send_end + 1:
            raise Dropped("truncated")
        hlen = send_end + 1 + data[send_end]
        if n < hlen + _TAG_BYTES[mode] + 1:
            raise Dropped("truncated")
        known = self._names.get(data[_HEAD.size : send_end])
        if known is None:
            try:
                data[_HEAD.size : send_end].decode()
            except UnicodeDecodeError:
                raise Dropped("garbage") from None
            raise Dropped("unknown_sender")
        sender, tail = known
        view = memoryview(data)
        if mode == MODE_NONE:
            frame: bytes | memoryview = view[hlen:]
        elif self._gcm is None:
            body_end = n - HMAC_TAG
            mac = self._mac.copy()
            mac.update(view[:body_end])
            if not hmac.compare_digest(mac.digest(), view[body_end:]):
                raise Dropped("bad_tag")
            frame = view[hlen:body_end]
        else:
            nonce = _U64.pack(seq) + tail
            try:
                frame = self._gcm.decrypt(nonce, data[hlen:], data[:hlen])
            except InvalidTag:
                raise Dropped("bad_tag") from None
        if self._receiver is not None:
            if sender == self._own:
                raise Dropped("own_packet")  # looped back or bounced, whoever it was for
            if hlen > send_end + 1 and data[send_end + 1 : hlen] != self._receiver:
                raise Dropped("replay")  # a unicast to another member, resent here
        win = self._windows.get(sender)
        if win is None:
            self._windows[sender] = _Window(seq)
        elif not win.accept(seq):
            raise Dropped("replay")
        return sender, frame
