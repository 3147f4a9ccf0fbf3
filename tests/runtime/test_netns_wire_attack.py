"""Every protocol under a hostile sender on its own network: three ``ringcast node``
processes in namespaces on a bridge, and an attacker on the bridge (in the switch
namespace, listening on the first node's port) who sends each kind of hostile datagram
(tests/runtime/wire_attack.py): a frame nested 16 deep sealed with the cluster key, a
unicast captured between two members and resent to the third, a packet bounced back to
its sender, a member's name with a wrong key, an unknown name, an envelope of the
previous version; then floods the first node with 10,000 hostile datagrams a second
while reading its ``/status``.

Asserted at every node: no view change, deliveries go on, each kind counted under its
reason, and ``packets_in`` = ``handled`` + ``dropped`` exactly; during the flood every
``/status`` read was answered. (The latency of those reads is a figure of
bench/wire_flood.py, not an assertion here.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ringcast.runtime.cluster import write_cluster
from ringcast.runtime.config import load_config, render_config

from .conftest import NETNS_HOSTS as HOSTS
from .conftest import PROTOCOLS, watching
from .netns import IP, Lab, NetnsUnavailable, Nodes, await_views, ip, lab, requires_netns

pytestmark = requires_netns

SUBNET = "10.213.91"
STATUS_PORT = 7300
FLOOD = ("--flood-rate", "10000", "--flood-seconds", "2")
ATTACKER = Path(__file__).with_name("wire_attack.py")
SETTINGS: dict[str, dict[str, Any]] = {
    # Failure detection at about the reference systems' defaults (corosync's 1 s token
    # and 1.2 s consensus, Tomcat's 3 s dropTime; a heartbeat group's 1 s; a reliable
    # unicast that gives up after about a second), not ringcast's 60-250 ms: the
    # attacker and the flood take a core of this two-core machine, and what is under
    # test is what the packets do, not how a starved process fares.
    "basic": {"heartbeat_misses": 20, "rto": "200ms"},
    "gms": {"heartbeat_misses": 20},
    "raincore": {"hungry_timeout": "2s", "rto": "150ms"},
    "totem": {"token_timeout": "1s", "consensus_timeout": "1200ms"},
    "tribes": {"member_drop_time": "3s", "rto": "200ms"},
}


@pytest.fixture
def attack_lab() -> Any:
    try:
        with lab(HOSTS, [SUBNET], prefix="rcw") as the_lab:
            # the attacker's own address on the bridge
            ip("-n", the_lab.switch, "addr", "add", f"{SUBNET}.250/24", "dev", "br0")
            yield the_lab
    except NetnsUnavailable as e:
        pytest.skip(str(e))


def cluster(directory: Path, the_lab: Lab, protocol: str) -> Path:
    """A cluster file whose status endpoints listen on the nodes' bridge addresses (the
    attacker reads them from the switch namespace)."""
    path = write_cluster(directory, nodes=len(HOSTS), protocol=protocol, trace_format="jsonl")
    cfg0 = load_config(path)
    nodes = [
        (n, [f"{SUBNET}.{k}:5405"], f"{SUBNET}.{k}:{STATUS_PORT}")
        for k, n in enumerate(the_lab.hosts, start=1)
    ]
    # Without segmentation offload: the attacker's capture sees one datagram a frame (a
    # segmented send is one frame on the veth, several datagrams on the wire).
    text = render_config(
        name="wire-attack",
        protocol=protocol,
        nodes=nodes,
        settings=SETTINGS.get(protocol),
        trace_format="jsonl",
        run_id=cfg0.run_id,
        origin_ns=cfg0.origin_ns,
    )
    path.write_text(text.replace("[cluster]\n", "[cluster]\nudp_offload = false\n", 1))
    return path


def run_attack(the_lab: Lab, config: Path, *extra: str) -> dict[str, Any]:
    out = subprocess.run(
        [IP, "netns", "exec", the_lab.switch, sys.executable, str(ATTACKER), str(config), *extra],
        capture_output=True,
        timeout=120,
    )
    assert out.returncode == 0, (out.stdout.decode()[-2000:], out.stderr.decode()[-3000:])
    return json.loads(out.stdout)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_hostile_sender_changes_no_view_stalls_nothing_and_every_packet_is_counted(
    tmp_path: Path, attack_lab: Lab, protocol: str
) -> None:
    config = cluster(tmp_path, attack_lab, protocol)
    with watching(tmp_path, HOSTS) as logs, Nodes(config, tmp_path, attack_lab.hosts) as nodes:
        nodes.start_all(["--rate", "50"])
        await_views(logs, {n: set(HOSTS) for n in HOSTS}, 30, "initial view")
        result = run_attack(attack_lab, config, *FLOOD)
        nodes.stop()
    (tmp_path / "attack.json").write_text(json.dumps(result))
    before, after, sent = result["before"], result["after"], result["sent"]
    third = result["third"]
    assert sent[third]["replay"] >= 1 and sent[third]["malformed"] >= 1, result["captured"]
    for n in HOSTS:
        b, a = before[n], after[n]
        # no view change, and the group went on delivering
        assert a["view"] == b["view"], (n, b["view"], a["view"])
        assert a["metrics"]["delivered"] > b["metrics"]["delivered"], n
        m = a["metrics"]
        assert m["handler_errors"] == 0, n
        assert m["packets_in"] == m["handled"] + m["dropped"], (n, m)
        for reason, count in sent[n].items():
            assert m["drops"][reason] - b["metrics"]["drops"].get(reason, 0) >= count, (
                n,
                reason,
                m["drops"],
            )
    flood = result["flood"]
    assert flood["sent"] >= 10_000, flood
    assert len(flood["latencies"]) >= 2, flood  # /status answered during the flood
