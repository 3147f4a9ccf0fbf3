"""Runtime throughput, latency, memory and failover on a loopback cluster of processes.

For 3 and 5 nodes and 100 B and 1 KB messages, every node multicasts in agreed order
as fast as flow control allows (``ringcast node --rate 0``). Printed per run: delivered
messages a second per node (mean over nodes, measured between two status samples
after a warm-up), deliveries per CPU second of a node process (the same window, so
comparable across runs on a busy machine), latency of a node's own messages from
submit to its own delivery (p50 and p99, worst node), and peak resident memory per
node. With ``--repeat N`` each configuration runs N times and a line with the medians
follows. Then the failover time: ``kill -9`` of one node to a new view at every
survivor, with the protocol's default timeouts, taken from the survivors' runtime
traces.

    python bench/runtime_throughput.py [--protocol totem] [--nodes 3] [--size 100]
        [--seconds 8] [--warmup 2] [--repeat 3] [--set window_size=50]
        [--no-failover] [--failover-only] [--profile DIR] [--netns]
        [--security hmac|aes-gcm|none] [--transport udpu|multicast] [--no-udp-offload]
        [--sched-rr] [--trace off|segments|write-through]

``--netns`` (root) runs each node in a network namespace of its own on a bridge, as
``bench/corosync_cpgbench.sh`` runs corosync, instead of on loopback.
``--security`` picks the datagram security (default ``hmac``; ``none`` sends frames
without a tag, as corosync's udpu does). ``--transport multicast`` sends a frame once
to an IP multicast group instead of once to each peer (the default ``udpu``).
``--no-udp-offload`` sets the cluster's ``udp_offload = false``: one ``sendto`` a
datagram instead of one segmented ``sendmsg`` a run (``docs/runtime.md``).
``--sched-rr`` runs the nodes with realtime scheduling (``ringcast node --sched-rr``), as
corosync runs by default.
``--trace`` records the nodes' traces while they run (default ``off``): ``segments``,
the runtime's default (Parquet segments written by a background thread), or
``write-through``, what live runs use (each event's rows written before its datagrams,
``trace_write_through = true``): the overhead of recording, at saturation.
``--set key=value`` passes a protocol setting (as in a cluster file's ``[settings]``).
``--profile DIR`` runs every node under cProfile and writes ``DIR/<run>-<node>.pstats``
and a text summary of the busiest functions of the first node, ``DIR/<run>.txt``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import pstats
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

from ringcast.runtime.cluster import node_ids, spawn_node, write_cluster
from ringcast.runtime.config import load_config
from ringcast.runtime.status import fetch_status
from ringcast.trace import read_trace


async def _statuses(cfg: Any) -> dict[str, dict[str, Any]]:
    out = {}
    for n in cfg.nodes:
        out[n.node_id] = json.loads(await fetch_status(n.status, timeout=5))
    return out


async def _wait_full_view(cfg: Any, timeout: float = 30) -> None:
    # Polls the nodes' status endpoints (other processes) a few times a second,
    # bounded by ``timeout``: a benchmark harness, not a test.
    want = {n.node_id for n in cfg.nodes}

    async def poll() -> None:
        while True:
            try:
                st = await _statuses(cfg)
                if all(s["view"] and set(s["view"]["members"]) == want for s in st.values()):
                    return
            except (OSError, TimeoutError, ValueError):
                pass
            await asyncio.sleep(0.1)

    await asyncio.wait_for(poll(), timeout)


SUBNET = "10.213.79"


class NetnsLab:
    """One network namespace a node, on a bridge in a namespace of its own (as the
    corosync reference: bench/corosync_cpgbench.sh). Nothing is added to the machine's
    own namespace; ``close`` deletes everything."""

    def __init__(self, nodes: int):
        tag = os.urandom(3).hex()
        self.switch = f"rcb-sw-{tag}"
        self.spaces = [f"rcb-{k}-{tag}" for k in range(1, nodes + 1)]
        self._made: list[str] = []
        try:
            self._ip("netns", "add", self.switch)
            self._made.append(self.switch)
            self._ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            self._ip("-n", self.switch, "link", "set", "br0", "up")
            for k, ns in enumerate(self.spaces, start=1):
                self._ip("netns", "add", ns)
                self._made.append(ns)
                self._ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"p{k}")
                self._ip("-n", ns, "link", "set", f"p{k}", "netns", self.switch)
                self._ip("-n", self.switch, "link", "set", f"p{k}", "master", "br0")
                self._ip("-n", self.switch, "link", "set", f"p{k}", "up")
                self._ip("-n", ns, "addr", "add", f"{SUBNET}.{k}/24", "dev", "eth0")
                self._ip("-n", ns, "link", "set", "eth0", "up")
                self._ip("-n", ns, "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)

    def address(self, k: int) -> str:
        return f"{SUBNET}.{k + 1}:5405"

    def close(self) -> None:
        for ns in reversed(self._made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)
        self._made.clear()


def _statuses_in(lab: NetnsLab, cfg: Any, query: str = "", timeout: float = 10) -> dict[str, Any]:
    """Every node's /status, each fetched from inside the node's namespace (in parallel)."""
    code = (
        "import asyncio, sys; from ringcast.runtime.status import fetch_status; "
        "print(asyncio.run(fetch_status((sys.argv[1], int(sys.argv[2])), sys.argv[3], "
        "timeout=float(sys.argv[4]))))"
    )
    procs = {}
    for k, n in enumerate(cfg.nodes):
        host, port = n.status
        path = "/status" + (f"?{query}" if query else "")
        cmd = ["ip", "netns", "exec", lab.spaces[k], sys.executable, "-c", code]
        procs[n.node_id] = subprocess.Popen(
            [*cmd, host, str(port), path, str(timeout)], stdout=subprocess.PIPE
        )
    out = {}
    for n, p in procs.items():
        body, _ = p.communicate(timeout=timeout + 30)
        out[n] = json.loads(body)
    return out


def _cpu_seconds(pid: int) -> float | None:
    """User plus system CPU seconds of process ``pid`` so far (Linux), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stop(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs.values():
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _spawn(
    path: Path,
    node: str,
    logs: Path,
    extra: list[str],
    profile: Path | None,
    netns: str | None = None,
) -> subprocess.Popen[bytes]:
    if profile is None and netns is None:
        return spawn_node(path, node, logs, extra)
    logs.mkdir(parents=True, exist_ok=True)
    cmd = ["ip", "netns", "exec", netns] if netns else []
    cmd += [sys.executable]
    if profile is not None:
        cmd += ["-m", "cProfile", "-o", str(profile)]
    cmd += ["-m", "ringcast.cli.main", "node", "--config", str(path), "--id", node, *extra]
    with open(logs / f"{node}.log", "ab") as log:
        return subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def _profile_summary(stats_file: Path, out: Path, top: int = 40) -> None:
    buf = io.StringIO()
    st = pstats.Stats(str(stats_file), stream=buf)
    st.sort_stats("tottime").print_stats(top)
    buf.write("\n")
    st.sort_stats("cumulative").print_stats(top)
    out.write_text(buf.getvalue())


def throughput(
    protocol: str,
    nodes: int,
    size: int,
    seconds: float,
    warmup: float,
    settings: dict[str, Any],
    profile: Path | None = None,
    netns: bool = False,
    security: str = "hmac",
    transport: str = "udpu",
    udp_offload: bool = True,
    sched_rr: bool = False,
    trace: str = "off",
) -> dict[str, Any]:
    run = f"{protocol}-{nodes}x{size}"
    ids = node_ids(nodes)
    lab = NetnsLab(nodes) if netns else None
    with tempfile.TemporaryDirectory() as d, contextlib.ExitStack() as stack:
        if lab is not None:
            stack.callback(lab.close)
        path = write_cluster(
            Path(d),
            nodes=nodes,
            protocol=protocol,
            trace=trace != "off",
            settings=settings or None,
            security=security,
        )
        if trace == "write-through":
            path.write_text(
                path.read_text().replace(
                    "[cluster]\n", "[cluster]\ntrace_write_through = true\n", 1
                )
            )
        if not udp_offload:
            path.write_text(
                path.read_text().replace("[cluster]\n", "[cluster]\nudp_offload = false\n", 1)
            )
        if transport == "multicast":
            text = path.read_text().replace('transport = "udpu"', 'transport = "multicast"')
            path.write_text(text + '\n[[network]]\nmulticast = "239.192.79.1:5406"\n')
        if lab is not None:  # the same cluster, one namespace a node
            text = path.read_text()
            for k, n in enumerate(load_config(path).nodes):
                text = text.replace(
                    '"{}:{}"'.format(*n.addresses[0]), f'"{lab.address(k)}"'
                ).replace('"{}:{}"'.format(*n.status), f'"127.0.0.1:{9100 + k}"')
            path.write_text(text)
        cfg = load_config(path)
        load = ["--rate", "0", "--size", str(size)]
        if sched_rr:
            load.append("--sched-rr")
        load.append("--summary")
        procs = {
            n: _spawn(
                path,
                n,
                Path(d) / "logs",
                [*load, str(Path(d) / f"{n}.json")],
                profile / f"{run}-{n}.pstats" if profile else None,
                lab.spaces[k] if lab else None,
            )
            for k, n in enumerate(ids)
        }
        try:
            if lab is None:
                asyncio.run(_wait_full_view(cfg))
            else:  # long polls from inside the namespaces
                _statuses_in(lab, cfg, f"members={','.join(ids)}&wait=30", timeout=30)
            time.sleep(warmup)
            a = asyncio.run(_statuses(cfg)) if lab is None else _statuses_in(lab, cfg)
            cpu_a = [_cpu_seconds(procs[n].pid) for n in ids]
            t0 = time.monotonic()
            time.sleep(seconds)
            b = asyncio.run(_statuses(cfg)) if lab is None else _statuses_in(lab, cfg)
            cpu_b = [_cpu_seconds(procs[n].pid) for n in ids]
            dt = time.monotonic() - t0
        finally:
            _stop(procs)
        summaries = [json.loads((Path(d) / f"{n}.json").read_text()) for n in ids]
    if profile is not None:
        _profile_summary(profile / f"{run}-{ids[0]}.pstats", profile / f"{run}.txt")
    delivered = [b[n]["metrics"]["delivered"] - a[n]["metrics"]["delivered"] for n in ids]
    spans = [b[n]["metrics"]["uptime_s"] - a[n]["metrics"]["uptime_s"] for n in ids]
    rates = [x / max(t, 1e-9) for x, t in zip(delivered, spans, strict=True)]
    result: dict[str, Any] = {
        "protocol": protocol,
        "nodes": nodes,
        "size": size,
        "delivered_per_s_per_node": round(sum(rates) / len(rates)),
        "min_node_rate": round(min(rates)),
    }
    if None not in cpu_a and None not in cpu_b:
        cpu = [y - x for x, y in zip(cpu_a, cpu_b, strict=True)]  # type: ignore[operator]
        result["deliveries_per_cpu_s"] = round(sum(delivered) / max(sum(cpu), 1e-9))
        result["cpu_per_node"] = round(sum(cpu) / len(cpu) / dt, 2)
    result |= {
        "latency_p50_ms": round(max(s["latency"]["p50_ms"] or 0 for s in summaries), 2),
        "latency_p99_ms": round(max(s["latency"]["p99_ms"] or 0 for s in summaries), 2),
        "peak_rss_mb": round(max(s["max_rss_kb"] for s in summaries) / 1024, 1),
        "views_at_end": len({s["view"]["id"] if s["view"] else None for s in b.values()}),
        # views installed during the measured window, summed over the nodes: 0 means no
        # false suspicion at this load
        "view_changes": sum(b[n]["metrics"]["views"] - a[n]["metrics"]["views"] for n in ids),
    }
    if settings:
        result["settings"] = settings
    if security != "hmac":
        result["security"] = security
    if transport != "udpu":
        result["transport"] = transport
    if not udp_offload:
        result["udp_offload"] = False
    if sched_rr:
        result["sched_rr"] = True
    if trace != "off":
        result["trace"] = trace
    if netns:
        result["netns"] = True
    return result


def failover(protocol: str, nodes: int, settings: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        path = write_cluster(
            Path(d),
            nodes=nodes,
            protocol=protocol,
            trace_format="jsonl",
            trace_rotate="200ms",
            settings=settings or None,
        )
        cfg = load_config(path)
        ids = node_ids(nodes)
        procs = {n: spawn_node(path, n, Path(d) / "logs", ["--rate", "50"]) for n in ids}
        victim = ids[-1]
        survivors = [n for n in ids if n != victim]
        try:
            asyncio.run(_wait_full_view(cfg))
            time.sleep(1.0)
            kill_t = time.time_ns() - cfg.origin_ns
            procs[victim].send_signal(signal.SIGKILL)
            procs[victim].wait()

            async def gone() -> None:
                while True:
                    st = {n: json.loads(await fetch_status(cfg.node(n).status)) for n in survivors}
                    if all(s["view"] and victim not in s["view"]["members"] for s in st.values()):
                        return
                    await asyncio.sleep(0.05)

            asyncio.run(asyncio.wait_for(gone(), 30))
        finally:
            _stop(procs)
        t = read_trace(Path(d) / "trace").to_pydict()
    first: dict[str, int] = {}
    for node, ts, kind, members, trans in zip(
        t["node"], t["t"], t["kind"], t["members"], t["transitional"], strict=True
    ):
        if (
            kind == "view"
            and not trans
            and node in survivors
            and ts > kill_t
            and victim not in members
        ):
            first[node] = min(first.get(node, ts), ts)
    worst = max(first.values()) - kill_t
    return {"protocol": protocol, "nodes": nodes, "failover_ms": round(worst / 1e6, 1)}


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"median_of": len(runs)}
    for k, v in runs[0].items():
        if isinstance(v, int | float) and not isinstance(v, bool):
            out[k] = statistics.median(r[k] for r in runs if k in r)
        else:
            out[k] = v
    return out


def _setting(text: str) -> tuple[str, Any]:
    """``--set KEY=VALUE``: the value as TOML reads it (``6``, ``true``), else the text
    (``20ms``, which the protocol's settings parse as a duration)."""
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    try:
        return key, tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return key, value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", action="append", help="default: totem and raincore")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--nodes", type=int, action="append")
    ap.add_argument("--size", type=int, action="append")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--set", type=_setting, action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--no-failover", action="store_true")
    ap.add_argument("--failover-only", action="store_true")
    ap.add_argument("--profile", type=Path, metavar="DIR")
    ap.add_argument("--netns", action="store_true", help="one network namespace a node (root)")
    ap.add_argument("--security", default="hmac", choices=["hmac", "aes-gcm", "none"])
    ap.add_argument("--transport", default="udpu", choices=["udpu", "multicast"])
    ap.add_argument("--no-udp-offload", action="store_true", help="udp_offload = false")
    ap.add_argument("--sched-rr", action="store_true", help="ringcast node --sched-rr")
    ap.add_argument("--trace", default="off", choices=["off", "segments", "write-through"])
    args = ap.parse_args()
    protocols = args.protocol or ["totem", "raincore"]
    settings = dict(args.set)
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    for proto in protocols:
        if not args.failover_only:
            for n in args.nodes or [3, 5]:
                for size in args.size or [100, 1000]:
                    runs = []
                    for _ in range(args.repeat):
                        r = throughput(
                            proto,
                            n,
                            size,
                            args.seconds,
                            args.warmup,
                            settings,
                            args.profile,
                            args.netns,
                            args.security,
                            args.transport,
                            not args.no_udp_offload,
                            args.sched_rr,
                            args.trace,
                        )
                        runs.append(r)
                        print(json.dumps(r), flush=True)
                    if args.repeat > 1:
                        print(json.dumps(_median(runs)), flush=True)
        if not args.no_failover:
            for n in args.nodes or [3, 5]:
                runs = [failover(proto, n, settings) for _ in range(args.repeat)]
                for r in runs:
                    print(json.dumps(r), flush=True)
                if args.repeat > 1:
                    print(json.dumps(_median(runs)), flush=True)


if __name__ == "__main__":
    main()
