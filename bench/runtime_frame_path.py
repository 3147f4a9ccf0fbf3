"""Where a node's time per frame goes: Totem's data path, stage by stage, in one process.

One frame's way through the runtime, timed stage by stage (best of ``--repeat`` runs of
``--frames`` frames, in microseconds a frame) for 100 B and 1 KB messages:

- sender: ``Packer.next_frame`` (packing), ``codec.encode`` (the wire frame),
  ``Sealer.seal`` (HMAC-SHA256 envelope), ``sendto`` to each of the two peers of a
  three-node ring (udpu fan-out, loopback);
- receiver: ``recv``, ``Opener.open`` (tag and replay window), ``codec.decode``, and the
  Totem machine taking the frame in (validation, the ring log, the deliveries).

Kernel time is in ``sendto`` and ``recv``; on loopback a ``sendto`` also runs the
receiving side of the network stack. The figures are for one core of this process, not a
node's rate: a node also waits for the token and shares the machine with the others.

    python bench/runtime_frame_path.py [--frames 20000] [--repeat 5] [--size 100 --size 1000]
"""

from __future__ import annotations

import argparse
import socket
import time
from collections.abc import Callable
from typing import Any

from ringcast.core.codec import cluster_id_of, decode, encode
from ringcast.core.events import Received, Start
from ringcast.core.machine import MachineContext
from ringcast.protocols import registry
from ringcast.protocols.totem._messages import Mcast, RingId
from ringcast.protocols.totem._state import OP
from ringcast.protocols.totem.ordering import RingLog
from ringcast.protocols.totem.packing import Packer
from ringcast.runtime.security import Opener, Sealer

KEY = bytes(range(32))
CLUSTER = cluster_id_of("bench")


def _best(fn: Callable[[], None], frames: int, repeat: int) -> float:
    """Best time of ``repeat`` runs of ``fn`` (which handles ``frames`` frames), µs a frame."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best / frames * 1e6


def _frames(size: int, n: int) -> list[Mcast]:
    packer = Packer(1400)
    payload = bytes(size)
    for i in range(n * 32):
        packer.push(f"n1:{i}", payload, False)
    ring = RingId(1, "n1")
    out = []
    for seq in range(1, n + 1):
        f = packer.next_frame(ring, seq, "n1")
        assert f is not None
        out.append(f)
    return out


def _receiver() -> Any:
    """A Totem machine of node n2 in the Operational state on ring ``1:n1`` of n1, n2, n3
    (set directly: forming the ring is not what is measured)."""
    ctx = MachineContext(
        node_id="n2",
        members=("n1", "n2", "n3"),
        peers=("n1", "n2", "n3"),
        settings={},
        storage={},
        networks=1,
        joining=False,
        seed=1,
    )
    m = registry.get("totem").factory(ctx)
    m.handle(Start(), 0)
    m.ring_id = RingId(1, "n1")
    m.log = RingLog(m.ring_id)
    m.memb = ("n1", "n2", "n3")
    m.state = OP
    return m


def stages(size: int, frames: int, repeat: int) -> dict[str, float]:
    out: dict[str, float] = {}
    payload = bytes(size)
    msgs = _frames(size, frames)
    ids = [c.msg_id for m in msgs for c in m.chunks]

    def pack() -> None:
        packer = Packer(1400)
        for i in ids:
            packer.push(i, payload, False)
        ring = RingId(1, "n1")
        for seq in range(1, frames + 1):
            packer.next_frame(ring, seq, "n1")

    # push is part of the submit path: count it, per frame, with the packing
    out["pack (push + next_frame)"] = _best(pack, frames, repeat)
    out["messages a frame"] = len(msgs[0].chunks)

    def enc() -> None:
        for m in msgs:
            encode(m, sender="n1", cluster_id=CLUSTER)

    out["encode"] = _best(enc, frames, repeat)
    wire = [encode(m, sender="n1", cluster_id=CLUSTER) for m in msgs]
    out["frame bytes"] = len(wire[0])
    sealer = Sealer(KEY, "hmac", CLUSTER, "n1")

    def seal() -> None:
        for k, w in enumerate(wire):
            sealer.seal(w, k + 1)

    out["seal (hmac)"] = _best(seal, frames, repeat)
    sealed = [sealer.seal(w, k + 1) for k, w in enumerate(wire)]

    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    for s in (tx, *rx):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 << 20)
    tx.bind(("127.0.0.1", 0))
    for s in rx:
        s.bind(("127.0.0.1", 0))
        s.setblocking(False)
    addrs = [s.getsockname() for s in rx]
    batch = 2000  # frames between drains, inside the receive buffers

    def drain() -> None:
        for s in rx:
            try:
                while True:
                    s.recv(65536)
            except BlockingIOError:
                pass

    def send() -> None:
        sendto = tx.sendto
        for k, p in enumerate(sealed):
            for a in addrs:
                sendto(p, a)
            if k % batch == batch - 1:
                drain_t[0] -= time.perf_counter()
                drain()
                drain_t[0] += time.perf_counter()
        drain()

    drain_t = [0.0]
    best = float("inf")
    for _ in range(repeat):
        drain_t[0] = 0.0
        t0 = time.perf_counter()
        send()
        best = min(best, time.perf_counter() - t0 - drain_t[0])
    out["sendto x2 (udpu fan-out)"] = best / frames * 1e6

    def recv() -> None:
        done = 0
        recv1 = rx[0].recv
        while done < frames:
            n = min(batch, frames - done)
            for p in sealed[done : done + n]:
                tx.sendto(p, addrs[0])
            t = time.perf_counter()
            for _ in range(n):
                recv1(65536)
            recv_t[0] += time.perf_counter() - t
            done += n

    recv_t = [0.0]
    best = float("inf")
    for _ in range(repeat):
        recv_t[0] = 0.0
        recv()
        best = min(best, recv_t[0])
    out["recv"] = best / frames * 1e6
    for s in (tx, *rx):
        s.close()

    def open_all() -> None:
        opener = Opener(KEY, "hmac", CLUSTER, ["n1", "n2", "n3"])
        o = opener.open
        for p in sealed:
            o(p)

    out["open (hmac)"] = _best(open_all, frames, repeat)
    opener = Opener(KEY, "hmac", CLUSTER, ["n1", "n2", "n3"])
    bodies = [opener.open(p)[1] for p in sealed]

    def dec() -> None:
        for b in bodies:
            decode(b)

    out["decode"] = _best(dec, frames, repeat)

    def machine() -> None:
        handle = _receiver().handle
        delivered = 0
        for f in msgs:
            delivered += len(handle(Received("n1", f, 0), 0))
        assert delivered == len(ids), "every message delivered"

    out["totem machine (receive, deliver)"] = _best(machine, frames, repeat)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--size", type=int, action="append")
    args = ap.parse_args()
    for size in args.size or [100, 1000]:
        r = stages(size, args.frames, args.repeat)
        print(
            f"--- {size} B messages, {r.pop('messages a frame')} a frame, "
            f"{r.pop('frame bytes')} B frame"
        )
        total = sum(r.values())
        for k, v in r.items():
            print(f"{k:36s} {v:7.2f} us  {v / total:6.1%}")
        print(f"{'total':36s} {total:7.2f} us")


if __name__ == "__main__":
    main()
