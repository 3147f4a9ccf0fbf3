"""The delay box's precision: the delay a link asks for against the delay a datagram got.

Builds a two-node lab (``ringcast.live.netns``), sends ``--count`` UDP datagrams from A
to B at ``--rate`` a second, each stamped with the sender's clock just before its
``sendto``, and takes each one's one-way delay at B's socket from the kernel's arrival
time stamp (``SO_TIMESTAMPNS``: the receiving process's own scheduling is not counted;
one ``CLOCK_REALTIME`` for every namespace). For each
asked latency (``--latency``, constant, in ms) through the delay box
(``ringcast.live.delaybox``), the excess over it (applied - asked): median, 99th
percentile (nearest rank) and maximum, and the box's own count of how late it wrote each
frame after its due time. The peer, in the same run and the same lab code: the kernel
bridge the lab uses when nothing is delayed (asked 0).

    sudo python bench/live_delaybox.py [--count 3000] [--rate 1000] [--latency 0 1 5]

Needs root and iproute2. One JSON line a configuration.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ringcast.live import delaybox
from ringcast.live.delaybox import LinkModel, Plan, Port
from ringcast.live.netns import lab
from ringcast.sim.latency import Latency

RECEIVE = r"""
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
s.bind((sys.argv[1], 9000))
s.settimeout(3)
print("bound", flush=True)
got = []
try:
    while len(got) < int(sys.argv[2]):
        data, anc, _, _ = s.recvmsg(100, 64)
        sec, nsec = struct.unpack("qq", anc[0][2][:16])
        got.append((data, sec * 10**9 + nsec))
except socket.timeout:
    pass
for d, t in got:
    print(d.decode(), t)
"""

SEND = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
gap = 1e9 / float(sys.argv[3])
t0 = time.monotonic_ns()
for i in range(int(sys.argv[2])):
    while time.monotonic_ns() < t0 + i * gap:
        time.sleep(max(0.0, (t0 + i * gap - time.monotonic_ns()) / 1e9))
    s.sendto(f"{i} {time.time_ns()}".encode(), (sys.argv[1], 9000))
"""


def _pct(xs: list[int], q: float) -> int:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * len(s)) - 1))]


def measure(latency_ns: int | None, count: int, rate: float, tmp: Path) -> dict[str, object]:
    """One configuration: through the box asking ``latency_ns``, or (None) the bridge."""
    boxed = latency_ns is not None
    with lab(["A", "B"], ["10.95.0"], prefix="rcbx", unbridged={0} if boxed else ()) as the_lab:
        box = None
        if latency_ns is not None:
            lat = LinkModel(Latency("constant", value=latency_ns))
            ports = tuple(Port(n, 0, the_lab.port(n)) for n in "AB")
            plan = Plan(1, ports, {("A", "B"): lat, ("B", "A"): lat})
            box = delaybox.start(plan, the_lab.switch, tmp / "box")
        ns = the_lab.hosts
        dst = the_lab.address("B")
        rx = subprocess.Popen(
            ["ip", "netns", "exec", ns["B"], sys.executable, "-c", RECEIVE, dst, str(count)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert rx.stdout is not None and rx.stdout.readline() == "bound\n"
            cmd = [sys.executable, "-c", SEND, dst, str(count), str(rate)]
            subprocess.run(["ip", "netns", "exec", ns["A"], *cmd], check=True)
            out, _ = rx.communicate(timeout=120)
        finally:
            if rx.poll() is None:
                rx.kill()
                rx.wait()
            stats = delaybox.stop(box, tmp / "box") if box is not None else None
    delays = []
    for line in out.splitlines():
        _, sent, got = line.split()
        delays.append(int(got) - int(sent))
    asked = latency_ns or 0
    excess = [d - asked for d in delays]
    return {
        "path": "delay box" if boxed else "kernel bridge",
        "asked_ms": asked / 1e6,
        "sent": count,
        "arrived": len(delays),
        "excess_us": {
            "min": round(min(excess) / 1e3, 1),
            "median": round(_pct(excess, 0.5) / 1e3, 1),
            "p99": round(_pct(excess, 0.99) / 1e3, 1),
            "max": round(max(excess) / 1e3, 1),
        },
        "box_late_us": (
            {k: round(v / 1e3, 1) for k, v in stats["late_ns"].items() if v is not None}
            if stats
            else None
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--latency", type=float, nargs="+", default=[0.0, 1.0, 5.0])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(measure(None, args.count, args.rate, Path(tmp))), flush=True)
        for ms in args.latency:
            row = measure(round(ms * 1e6), args.count, args.rate, Path(tmp))
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
