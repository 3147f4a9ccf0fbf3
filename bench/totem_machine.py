"""Machine-level speed of Totem: ordered deliveries per CPU second at one node.

One node's machine (P2 of an operational 3-node ring formed in the simulator) is fed
pre-built frames from P1 (messages packed up to ``frame_size``) and a token after every
``window_size`` frames (so it delivers safe messages and frees its buffers), with no network.

    python bench/totem_machine.py [--frames N]
"""

from __future__ import annotations

import argparse
import time

from ringcast.core.effects import Deliver
from ringcast.core.events import Received
from ringcast.protocols.totem._messages import Chunk, Mcast, Token
from ringcast.protocols.totem.packing import CHUNK_OVERHEAD, frame_overhead
from ringcast.sim import Simulation, parse_scenario


def operational_machine() -> object:
    doc = {
        "name": "bench",
        "protocol": "totem",
        "nodes": ["P1", "P2", "P3"],
        "duration": "50ms",
        "count_bytes": False,
        "network": {"latency": {"dist": "constant", "value": "100us"}},
    }
    res = Simulation(parse_scenario(doc), seed=1).run()
    m = res.machines["P2"]
    assert m.state.value == "Operational", m.state
    return m


def run(size: int, frames: int) -> tuple[float, int]:
    m = operational_machine()
    ring = m.ring_id
    frame_size = m.packer.frame_size
    per_frame = max(
        (frame_size - frame_overhead(ring, m.node_id)) // (size + 8 + CHUNK_OVERHEAD), 1
    )
    base = m.log.my_aru
    token_seq = m.last_token_seq + 1000
    payload = b"x" * size
    events = []
    counter = 0
    window = m.window_size
    for k in range(1, frames + 1):
        chunks = []
        for _ in range(per_frame):
            counter += 1
            chunks.append(Chunk(f"P1:{counter}", payload))
        seq = base + k
        events.append(Received("P1", Mcast(ring, seq, "P1", False, tuple(chunks))))
        if k % window == 0:
            token_seq += 3
            events.append(Received("P1", Token(ring, token_seq, seq, seq, "", (), 0, 0)))
    handle = m.handle
    delivered = 0
    t0 = time.process_time()
    for i, ev in enumerate(events):
        for e in handle(ev, i):
            if type(e) is Deliver:
                delivered += 1
    cpu = time.process_time() - t0
    assert delivered == counter, (delivered, counter)
    return delivered / cpu, per_frame


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=20_000)
    args = ap.parse_args()
    for size in (100, 1000):
        rate, per_frame = run(size, args.frames)
        print(f"{size:>5} B messages ({per_frame}/frame): {rate:>12,.0f} deliveries per CPU second")


if __name__ == "__main__":
    main()
