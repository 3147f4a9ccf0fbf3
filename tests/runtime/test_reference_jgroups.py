"""JGroups 2.12 as a reference system: three members on JGroups' default UDP stack
(Debian's jgroups.jar) in network namespaces on a bridge, each recorded by ringcast's
JGroups member (ringcast.references.jgroups) and multicasting 50 messages a second;
member 3's JVM is killed (kill -9) once all three share a view and have delivered 100
messages. The traces are checked by the lab with JGroups' own claims: view agreement,
one coordinator per view, integrity, FIFO; and the survivors' last view is the two of
them.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ringcast.lab.pipeline import check_paths
from ringcast.lab.properties import claims
from ringcast.references import jgroups

from .conftest import NETNS_HOSTS as HOSTS
from .conftest import watching
from .netns import IP, NetnsUnavailable, await_views, ip, lab, requires_netns
from .recorders import await_delivered, delivered_so_far

pytestmark = requires_netns

SUBNET = "10.213.97"


@pytest.fixture(scope="module")
def java() -> list[str]:
    try:
        return jgroups.build()
    except jgroups.ReferenceUnavailable as e:
        pytest.skip(str(e))


def _member(ns: str, name: str, k: int, tmp: Path, run: str, origin: int) -> Any:
    cmd = [IP, "netns", "exec", ns, sys.executable, "-m", "ringcast.references.jgroups"]
    cmd += ["--name", name, "--address", f"{SUBNET}.{k}"]
    cmd += ["--trace-dir", str(tmp / "trace"), "--state-dir", str(tmp / name / "state")]
    cmd += ["--run", run, "--origin-ns", str(origin), "--rate", "50"]
    with open(tmp / f"{name}.log", "ab") as err:  # its JSON log: views, as a node's
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)


def test_jgroups_under_a_crash_holds_its_claims(
    spark: Any, tmp_path: Path, java: list[str]
) -> None:
    run, origin = "jgroups:crash", time.time_ns()
    members: dict[str, subprocess.Popen[bytes]] = {}
    try:
        with lab(HOSTS, [SUBNET], prefix="rcj") as the_lab, watching(tmp_path, HOSTS) as logs:
            for ns in the_lab.hosts.values():  # the UDP stack's multicast goes out on eth0
                ip("-n", ns, "route", "add", "224.0.0.0/4", "dev", "eth0")
            for k, (n, ns) in enumerate(the_lab.hosts.items(), start=1):
                members[n] = _member(ns, n, k, tmp_path, run, origin)
            await_views(logs, {n: set(HOSTS) for n in HOSTS}, 60, "a view of all three")
            for n in HOSTS:
                await_delivered(logs[n], 100, 30)
            # kill -9 of member 3's JVM (the recorder's child; its wrapper records it)
            subprocess.run(["pkill", "-9", "-f", f"bind_addr={SUBNET}.3 "], check=False)
            await_views(logs, {n: {"n1", "n2"} for n in ("n1", "n2")}, 60, "n1 and n2 alone")
            for n in ("n1", "n2"):  # the two go on delivering after the crash
                await_delivered(logs[n], delivered_so_far(logs[n]) + 100, 30)
            for n in ("n1", "n2"):
                members[n].terminate()
            for p in members.values():
                p.wait(30)
    except NetnsUnavailable as e:
        pytest.skip(str(e))
    finally:
        for p in members.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run(["pkill", "-9", "-f", f"bind_addr={SUBNET}."], check=False)
    doc = check_paths(spark, [tmp_path / "trace"], protocol="jgroups")
    props = doc["properties"]
    assert doc["ok"] is True, {n: p["counterexamples"] for n, p in props.items()}
    for name in claims("jgroups"):
        assert props[name]["status"] == "holds", name
