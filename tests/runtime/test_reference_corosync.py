"""corosync as a reference system: three corosync daemons (Debian's package) in network
namespaces on a bridge, each with ringcast's CPG recorder beside it multicasting 50
messages a second; corosync on node 3 is killed (kill -9) halfway. The recorders'
traces are checked by the lab with corosync's own claims (ringcast.references.corosync):
total order within a configuration, virtual synchrony, integrity, FIFO; and the
survivors' last configuration is the two of them.

Over knet, corosync's default transport, with the recorder run by hand (the live
driver's run of corosync, tests/live/test_references_live.py, is over udpu); token
timeout 1000 ms (corosync's default, without the per-node coefficient).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ringcast.lab.pipeline import check_paths
from ringcast.lab.properties import claims
from ringcast.references import corosync

from .conftest import NETNS_HOSTS as HOSTS
from .conftest import watching
from .netns import IP, NetnsUnavailable, await_views, lab, requires_netns
from .recorders import await_delivered, delivered_so_far

pytestmark = requires_netns

SUBNET = "10.213.95"


@pytest.fixture(scope="module")
def recorder() -> Path:
    try:
        return corosync.build()
    except corosync.ReferenceUnavailable as e:
        pytest.skip(str(e))


def _corosync(ns: str, d: Path) -> subprocess.Popen[bytes]:
    """corosync in the foreground in namespace ``ns``, with its own /run and
    /var/lib/corosync (a mount namespace of its own, as ``ip netns exec`` makes)."""
    for sub in ("run", "lib"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    script = (
        f"mount --bind '{d}/run' /run && mkdir -p /var/lib/corosync && "
        f"mount --bind '{d}/lib' /var/lib/corosync && "
        f"exec corosync -f -c '{d}/corosync.conf'"
    )
    with open(d / "stdout.log", "ab") as out:
        return subprocess.Popen(
            [IP, "netns", "exec", ns, "sh", "-c", script], stdout=out, stderr=subprocess.STDOUT
        )


def _recorder(ns: str, d: Path, name: str, tmp: Path, run: str, origin: int) -> Any:
    cmd = [IP, "netns", "exec", ns, sys.executable, "-m", "ringcast.references.corosync"]
    cmd += ["--name", name, "--nodes", ",".join(f"{k}={n}" for k, n in enumerate(HOSTS, 1))]
    cmd += ["--trace-dir", str(tmp / "trace"), "--state-dir", str(d / "state")]
    cmd += ["--run", run, "--origin-ns", str(origin), "--rate", "50"]
    with open(tmp / f"{name}.log", "ab") as err:  # its JSON log: views, as a node's
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)


@pytest.mark.parametrize("transport", ["knet"])
def test_corosync_under_a_crash_holds_its_claims(
    spark: Any, tmp_path: Path, recorder: Path, transport: str
) -> None:
    if shutil.which("corosync") is None:
        pytest.skip("corosync is not installed")
    run, origin = f"corosync-{transport}:crash", time.time_ns()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with lab(HOSTS, [SUBNET], prefix="rcc") as the_lab, watching(tmp_path, HOSTS) as logs:
            conf = corosync.corosync_conf(
                cluster="rc",
                nodes=[(n, k, f"{SUBNET}.{k}") for k, n in enumerate(HOSTS, 1)],
                transport=transport,
            )
            daemons, recorders = {}, {}
            for n, ns in the_lab.hosts.items():
                d = tmp_path / n
                d.mkdir()
                (d / "corosync.conf").write_text(conf)
                daemons[n] = _corosync(ns, d)
                procs.append(daemons[n])
            for n, ns in the_lab.hosts.items():
                recorders[n] = _recorder(ns, tmp_path / n, n, tmp_path, run, origin)
                procs.append(recorders[n])
            await_views(logs, {n: set(HOSTS) for n in HOSTS}, 30, "a view of all three")
            for n in HOSTS:
                await_delivered(logs[n], 150, 30)
            daemons["n3"].kill()  # kill -9 of the ip netns exec's corosync
            subprocess.run(["pkill", "-9", "-f", f"corosync -f -c {tmp_path}/n3/"], check=False)
            await_views(logs, {n: {"n1", "n2"} for n in ("n1", "n2")}, 30, "n1 and n2 alone")
            for n in ("n1", "n2"):  # the two go on delivering after the crash
                await_delivered(logs[n], delivered_so_far(logs[n]) + 100, 30)
            for n in ("n1", "n2"):
                recorders[n].terminate()
            for p in recorders.values():
                p.wait(30)
    except NetnsUnavailable as e:
        pytest.skip(str(e))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run(["pkill", "-9", "-f", f"corosync -f -c {tmp_path}/"], check=False)
    doc = check_paths(spark, [tmp_path / "trace"], protocol="corosync")
    props = doc["properties"]
    assert doc["ok"] is True, {n: p["counterexamples"] for n, p in props.items()}
    for name in claims("corosync"):
        assert props[name]["status"] == "holds", name
