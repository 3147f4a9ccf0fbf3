"""Three hosts in network namespaces on a bridge: a real link-down partition, then heal.

The test builds its own namespaces (``tests/runtime/netns.py``): one "switch" namespace
holding a bridge, and one namespace a host with a veth pair into the switch. Nothing is
added to the test machine's own network namespace, and everything is deleted at the
end. The nodes run as ``ringcast node`` processes inside the host namespaces; the test
follows their views through their logs ("view installed" records, read as they are
written).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import NETNS_HOSTS as HOSTS
from .conftest import PROTOCOLS, watching
from .netns import Lab, Nodes, await_views, lab_cluster, requires_netns

pytestmark = requires_netns


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if p in ("basic", "totem", "gms")])
def test_link_down_partition_then_heal(tmp_path: Path, bridge_lab: Lab, protocol: str) -> None:
    path = lab_cluster(tmp_path, bridge_lab, protocol, name="netns")
    with watching(tmp_path, HOSTS) as logs, Nodes(path, tmp_path, bridge_lab.hosts) as nodes:
        nodes.start_all(["--rate", "50"])
        everyone = set(HOSTS)
        await_views(logs, dict.fromkeys(HOSTS, everyone), 30, "initial view")
        bridge_lab.link("n3", 0, "down")
        await_views(logs, {"n1": {"n1", "n2"}, "n2": {"n1", "n2"}}, 30, "partition view")
        bridge_lab.link("n3", 0, "up")
        await_views(logs, dict.fromkeys(HOSTS, everyone), 30, "healed view")
        nodes.stop()
