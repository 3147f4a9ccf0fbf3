"""A hostile sender on a namespace lab's bridge (run as a script in the switch namespace,
by tests/runtime/test_netns_wire_attack.py and bench/wire_flood.py; not a test module).

It listens on the first node's bridge port (``p1n0``: every frame that node sends),
captures genuine packets, then sends each kind of hostile datagram to the cluster's
nodes and reads their ``/status`` before and after (the status endpoints listen on the
nodes' bridge addresses). It prints one JSON object: the nodes' status before and after
and, per node, how many datagrams of each kind it was sent and the drop reason each
must be counted under.

The kinds: a frame nested 16 deep sealed with the cluster key (decodes to nothing:
``malformed``); a unicast captured between two members resent to the third
(``replay``); a packet of the first node bounced back to it (``own_packet``); a
member's name with a wrong key (``bad_tag``); a name the cluster does not know with a
wrong key (``unknown_sender``); a well-sealed envelope of version 1 (``version``).
Then, with ``--flood``, hostile datagrams at a given rate to the first node for a given
time while its ``/status`` is read, the latency of each read recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import struct
import sys
import time
from typing import Any

from ringcast.core import codec
from ringcast.protocols import registry
from ringcast.runtime.config import load_config
from ringcast.runtime.security import Sealer, read_key_file
from ringcast.runtime.status import fetch_status

ETH_P_ALL = 0x0003
_ENV = struct.Struct("!2sBBIQB")


def parse(frame: bytes, port: int) -> bytes | None:
    """The UDP payload of an Ethernet frame to ``port``, or None."""
    if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[14] & 0x0F) * 4
    flags_offset = struct.unpack_from("!H", frame, 14 + 6)[0]
    if frame[14 + 9] != 17 or flags_offset & 0x3FFF:
        return None  # not UDP, or a fragment of a datagram larger than the MTU
    udp = 14 + ihl
    dst_port, length = struct.unpack_from("!HH", frame, udp + 2)
    if dst_port != port or length != len(frame) - udp:
        return None
    return frame[udp + 8 :]


def envelope(packet: bytes) -> tuple[str, str, int] | None:
    """(sender, receiver or "", seq) of an envelope."""
    if len(packet) < _ENV.size + 2:
        return None
    magic, _version, _mode, _cluster, seq, slen = _ENV.unpack_from(packet)
    if magic != b"RS":
        return None
    at = _ENV.size + slen
    dlen = packet[at]
    return packet[_ENV.size : at].decode(), packet[at + 1 : at + 1 + dlen].decode(), seq


def capture(port_name: str, udp_port: int, sender: str, seconds: float) -> list[bytes]:
    """Envelopes ``sender`` puts on its bridge port within ``seconds``."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((port_name, 0))
    s.settimeout(0.2)
    out: list[bytes] = []
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end and len(out) < 2000:
            try:
                frame = s.recv(65536)
            except TimeoutError:
                continue
            payload = parse(frame, udp_port)
            if payload is not None and (env := envelope(payload)) and env[0] == sender:
                out.append(payload)
    finally:
        s.close()
    return out


def nested_frame(depth: int, sender: str) -> bytes:
    """A redundant-ring packet carrying another ``depth`` deep, an unknown type at the
    bottom (the frame that froze a node for half a minute)."""
    rrp = 0x0501
    body = struct.pack("!H", 0xFFFF)
    for _ in range(depth - 1):
        body = struct.pack("!H", rrp) + struct.pack("!qq", 1, 2) + body
    body = struct.pack("!qq", 1, 2) + body
    head = codec._HEAD.pack(codec.MAGIC, codec.WIRE_VERSION, rrp, 0, len(sender))
    return head + sender.encode() + struct.pack("!I", len(body)) + body


async def statuses(addrs: dict[str, tuple[str, int]], query: str = "") -> dict[str, Any]:
    async def one(addr: tuple[str, int]) -> Any:
        return json.loads(await fetch_status(addr, "/status" + query, 40))

    got = await asyncio.gather(*(one(a) for a in addrs.values()))
    return dict(zip(addrs, got, strict=True))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--copies", type=int, default=5)
    ap.add_argument("--flood-rate", type=int, default=0, help="datagrams a second")
    ap.add_argument("--flood-seconds", type=float, default=0.0, help="rate 0: only read the status")
    args = ap.parse_args()
    registry.names()
    cfg = load_config(args.config)
    key = read_key_file(cfg.key_file)
    cid = codec.cluster_id_of(cfg.name)
    nodes = [n.node_id for n in cfg.nodes]
    data_addr = {n.node_id: n.addresses[0] for n in cfg.nodes}
    status_addr = {n.node_id: n.status for n in cfg.nodes if n.status is not None}
    first = nodes[0]
    port = data_addr[first][1]
    everyone = ",".join(nodes)
    # a group that has settled: every member in the view and deliveries flowing (a
    # group just started may still change its view once)
    before = asyncio.run(statuses(status_addr, f"?members={everyone}&delivered=300&wait=30"))
    if not all(st["condition_met"] for st in before.values()):
        print(json.dumps({"error": "no full view before the attack", "before": before}))
        return 1

    times = {"capture": time.time()}
    captured = capture("p1n0", port, first, 2.0)
    unicasts = [p for p in captured if (e := envelope(p)) and e[1]]
    if not unicasts or not captured:
        print(json.dumps({"error": f"captured {len(captured)} packets, no unicast"}))
        return 1
    # the first receiver with unicasts from the first node; the third node is the other
    dest = envelope(unicasts[0])[1]  # type: ignore[index]
    to_dest = [p for p in unicasts if envelope(p)[1] == dest]  # type: ignore[index]
    third = next(n for n in nodes if n not in (first, dest))
    k = args.copies
    sent: dict[str, dict[str, int]] = {n: {} for n in nodes}
    plan: list[tuple[str, bytes, str]] = []  # (target, datagram, reason it must count as)
    good = Sealer(key, cfg.security, cid, first)
    for p in to_dest[:k]:
        plan.append((third, p, "replay"))  # the capture, resent to a third member
    seqs = [envelope(p)[2] for p in to_dest[:k]]  # type: ignore[index]
    for seq in seqs:  # seqs the third node never saw from the first: past its window
        plan.append((third, good.seal(nested_frame(16, first), seq, third), "malformed"))
    for p in captured[:k]:
        plan.append((first, p, "own_packet"))  # bounced back to its sender
    impostor = Sealer(os.urandom(32), cfg.security, cid, dest)
    stranger = Sealer(os.urandom(32), cfg.security, cid, "intruder")
    for j in range(k):
        plan.append((third, impostor.seal(b"RC\x01" + bytes(40), 2**62 + j, third), "bad_tag"))
        plan.append((third, stranger.seal(b"RC\x01" + bytes(40), 2**62 + j), "unknown_sender"))
        old = bytearray(good.seal(b"RC\x01" + bytes(40), 2**62 + j))
        old[2] = 1  # an envelope of the version before receivers were bound
        plan.append((third, bytes(old), "version"))
    times["kinds"] = time.time()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for target, datagram, reason in plan:
            sock.sendto(datagram, data_addr[target])
            sent[target][reason] = sent[target].get(reason, 0) + 1
    finally:
        sock.close()
    times["flood"] = time.time()
    flood = asyncio.run(_flood(args, data_addr[first], status_addr[first], stranger, impostor))
    times["end"] = time.time()
    time.sleep(0.5)  # let the last datagrams of the flood be read before the status
    after = asyncio.run(statuses(status_addr))
    print(
        json.dumps(
            {
                "before": before,
                "after": after,
                "sent": sent,
                "captured": len(captured),
                "dest": dest,
                "third": third,
                "flood": flood,
                "times": times,
            }
        )
    )
    return 0


async def _flood(
    args: argparse.Namespace,
    target: tuple[str, int],
    status: tuple[str, int],
    stranger: Sealer,
    impostor: Sealer,
) -> dict[str, Any]:
    """Hostile datagrams at ``--flood-rate`` a second to ``target`` while its status is
    read over and over: the latency of each read (s) and what was sent."""
    if args.flood_seconds <= 0:
        return {"sent": 0, "latencies": []}
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setblocking(False)
    kinds = [
        lambda j: os.urandom(200),
        lambda j: impostor.seal(os.urandom(1200), 2**62 + j),
        lambda j: stranger.seal(os.urandom(60), 2**62 + j),
    ]
    sent = 0
    stop = False
    latencies: list[float] = []

    async def reader() -> None:
        while not stop:
            t = time.monotonic()
            await fetch_status(status, "/status", 10)
            latencies.append(time.monotonic() - t)
            await asyncio.sleep(0.05)

    task = asyncio.create_task(reader())
    start = time.monotonic()
    batch = max(1, args.flood_rate // 100)
    while time.monotonic() - start < args.flood_seconds:
        if args.flood_rate <= 0:  # a baseline: the status read, nothing sent
            await asyncio.sleep(0.05)
            continue
        for _ in range(batch):
            try:
                sock.sendto(kinds[sent % 3](sent), target)
            except BlockingIOError:
                continue
            sent += 1
        due = start + sent / args.flood_rate
        await asyncio.sleep(max(0.0, due - time.monotonic()))
    stop = True
    await task
    sock.close()
    return {"sent": sent, "seconds": time.monotonic() - start, "latencies": latencies}


if __name__ == "__main__":
    sys.exit(main())
