"""Batched datagrams on a real link (``udp_offload``, ``docs/runtime.md``): Totem at
saturation over veth pairs and a bridge with a 1500-byte MTU, with frames that fit the
MTU (a token visit's frames leave in one segmented send a peer) and with frames of 8800
bytes, which the kernel refuses to segment (EMSGSIZE: a segment above the MTU) and which
then go one ``sendto`` each, as IP fragments.

As in ``test_netns.py`` the test builds its own namespaces and deletes them at the end;
the nodes run as ``ringcast node`` processes and are read through their status
endpoints from inside their namespaces.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import NETNS_HOSTS as HOSTS
from .conftest import watching
from .netns import Lab, Nodes, full_view, lab_cluster, requires_netns, status

pytestmark = requires_netns

STATUS_PORT = 8505


@pytest.mark.parametrize("frame_size", [1400, 8800])
def test_totem_at_saturation_delivers_with_segmented_sends_and_above_the_mtu(
    tmp_path: Path, bridge_lab: Lab, frame_size: int
) -> None:
    path = lab_cluster(
        tmp_path,
        bridge_lab,
        "totem",
        name="netns-offload",
        status_port=STATUS_PORT,
        # timeouts for a loaded 2-core test machine at saturation
        settings={
            "frame_size": frame_size,
            "token_timeout": "3s",
            "token_retransmit_timeout": "300ms",
            "consensus_timeout": "3600ms",
        },
    )
    port = {n: STATUS_PORT + k for k, n in enumerate(HOSTS, start=1)}
    with watching(tmp_path, HOSTS) as logs, Nodes(path, tmp_path, bridge_lab.hosts) as nodes:
        nodes.start_all(["--rate", "0", "--size", "1000"])
        before = full_view(bridge_lab, logs, port)
        for n in HOSTS:
            want = before[n]["metrics"]["delivered"] + 5_000
            st = status(bridge_lab.hosts[n], port[n], f"delivered={want}&wait=30")
            assert st["condition_met"], f"{n}: deliveries stalled at {frame_size}-byte frames"
            m = st["metrics"]
            assert m["send_drops"].get("send_refused", 0) == 0, f"{n}: the kernel refused sends"
            assert st["view"] == before[n]["view"], f"{n} changed configuration"
        nodes.stop()
