"""A node's ``/status`` under a flood of hostile datagrams, against the same node unflooded.

Three ``ringcast node`` processes of one protocol in network namespaces on a bridge
(the lab of tests/runtime/netns.py, the cluster of tests/runtime/test_netns_wire_attack.py),
each multicasting 50 messages a second; an attacker on the bridge
(tests/runtime/wire_attack.py) reads node 1's ``/status`` every 50 ms for ``--seconds``,
first with nothing else sent (the baseline), then while sending node 1 ``--rate``
hostile datagrams a second (a third each of random bytes, 1.2 KB envelopes with a
member's name and a wrong key, and envelopes from an unknown sender). Printed as one
JSON line a protocol: the median, 99th percentile and largest status latency (ms) of
both phases, the datagrams sent, and node 1's drops by reason.

    sudo .venv/bin/python bench/wire_flood.py --protocol totem --rate 10000 --seconds 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.runtime.conftest import watching
from tests.runtime.netns import Nodes, await_views, ip, lab
from tests.runtime.test_netns_wire_attack import (
    HOSTS,
    SUBNET,
    cluster,
    run_attack,
)


def summary(latencies: list[float]) -> dict[str, float]:
    ms = sorted(x * 1000 for x in latencies)
    return {
        "median_ms": round(statistics.median(ms), 2),
        "p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 2),
        "max_ms": round(ms[-1], 2),
        "reads": len(ms),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", action="append", default=[])
    ap.add_argument("--rate", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    for protocol in args.protocol or ["totem"]:
        with tempfile.TemporaryDirectory() as tmp, lab(HOSTS, [SUBNET], prefix="rcb") as lb:
            ip("-n", lb.switch, "addr", "add", f"{SUBNET}.250/24", "dev", "br0")
            d = Path(tmp)
            config = cluster(d, lb, protocol)
            with watching(d, HOSTS) as logs, Nodes(config, d, lb.hosts) as nodes:
                nodes.start_all(["--rate", "50"])
                await_views(logs, {n: set(HOSTS) for n in HOSTS}, 30, "initial view")
                base = run_attack(
                    lb, config, "--flood-rate", "0", "--flood-seconds", str(args.seconds)
                )
                flood = run_attack(
                    lb, config, "--flood-rate", str(args.rate), "--flood-seconds", str(args.seconds)
                )
                nodes.stop()
            drops = {k: v for k, v in flood["after"]["n1"]["metrics"]["drops"].items() if v}
            views_changed = flood["after"]["n1"]["view"] != base["before"]["n1"]["view"]
            print(
                json.dumps(
                    {
                        "protocol": protocol,
                        "baseline": summary(base["flood"]["latencies"]),
                        "flood": summary(flood["flood"]["latencies"]),
                        "sent": flood["flood"]["sent"],
                        "sent_per_s": round(flood["flood"]["sent"] / flood["flood"]["seconds"]),
                        "drops_n1": drops,
                        "view_changed": views_changed,
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
