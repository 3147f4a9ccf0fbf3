"""The cluster file: a TOML description of one cluster, validated with errors naming the key.

Example::

    [cluster]
    name = "demo"
    protocol = "basic"            # any name in the protocol registry
    transport = "udpu"            # "udpu" (unicast fan-out) or "multicast"
    udp_offload = true            # batch datagrams (UDP GSO/GRO) where the kernel has it
    security = "hmac"             # "hmac" (HMAC-SHA256), "aes-gcm", or "none" (no tag)
    key_file = "cluster.key"      # relative paths are relative to this file
    state_dir = "state"
    trace_dir = "trace"
    trace_format = "parquet"      # or "jsonl"; trace = false turns tracing off
    origin_clock = "wall"         # origin_ns on the wall clock, or "monotonic" (CLOCK_MONOTONIC)
    trace_packets = false         # true: a trace row for every packet sent and received
    trace_write_through = false   # true: each event's rows written before its datagrams
    log_level = "info"

    [settings]                    # the protocol's settings, checked by the registry
    heartbeat_interval = "50ms"

    [[network]]                   # one table a network; only needed for multicast
    multicast = "239.192.0.1:5405"

    [[node]]
    id = "A"
    addresses = ["127.0.0.1:7001"]   # one "host:port" a network
    status = "127.0.0.1:8001"        # optional /status and /metrics endpoint
    join = false                     # true: not in the initial group, asks to join
"""

from __future__ import annotations

import ipaddress
import tomllib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ringcast.core.ids import check_node_id
from ringcast.core.units import parse_duration
from ringcast.protocols import registry
from ringcast.runtime.errors import ConfigError as ConfigError
from ringcast.runtime.errors import UnknownNode

TRANSPORTS = ("udpu", "multicast")
SECURITY_MODES = ("hmac", "aes-gcm", "none")
TRACE_FORMATS = ("parquet", "jsonl")
ORIGIN_CLOCKS = ("wall", "monotonic")
LOG_LEVELS = ("debug", "info", "warning", "error")

Address = tuple[str, int]


@dataclass(frozen=True)
class NodeConfig:
    """One node: its id, one address a network, an optional status endpoint."""

    node_id: str
    addresses: tuple[Address, ...]
    status: Address | None = None
    join: bool = False


@dataclass(frozen=True)
class ClusterConfig:
    """A validated cluster file. Paths are absolute."""

    name: str
    protocol: str
    settings: Mapping[str, Any]
    nodes: tuple[NodeConfig, ...]
    key_file: Path
    state_dir: Path
    trace_dir: Path | None
    transport: str = "udpu"
    udp_offload: bool = True
    security: str = "hmac"
    multicast: tuple[Address, ...] = ()
    trace_format: str = "parquet"
    trace_rotate_ns: int = 5_000_000_000
    trace_packets: bool = False
    trace_write_through: bool = False
    """One JSON Lines file a boot, each event's rows handed to the kernel before the
    datagrams it sends (:mod:`ringcast.runtime.tracelog`): a ``kill -9`` loses no row."""
    run_id: str = ""
    origin_ns: int = 0
    origin_clock: str = "wall"
    """The clock ``origin_ns`` is read on: ``wall`` (nanoseconds since the epoch, for
    nodes on different machines) or ``monotonic`` (CLOCK_MONOTONIC, one clock for every
    process of a machine whatever its network namespace: ``ringcast live``)."""
    log_level: str = "info"
    source: str = "<config>"
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def networks(self) -> int:
        return len(self.nodes[0].addresses)

    @property
    def members(self) -> tuple[str, ...]:
        """The initial group: every node not marked ``join``."""
        return tuple(n.node_id for n in self.nodes if not n.join)

    @property
    def peers(self) -> tuple[str, ...]:
        return tuple(n.node_id for n in self.nodes)

    def node(self, node_id: str) -> NodeConfig:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        known = ", ".join(self.peers)
        raise UnknownNode(
            f"{self.source}: no node {node_id!r} in [[node]] (known: {known}); use one of "
            f'those ids, or add a [[node]] with id = "{node_id}" and its addresses '
            "(`ringcast cluster up --app-members N` writes N for applications)"
        )


def parse_address(raw: Any, where: str) -> Address:
    """Parse ``"host:port"`` (IPv4 literal or ``localhost``) into ``(host, port)``."""
    if not isinstance(raw, str) or ":" not in raw:
        raise ConfigError(f'{where}: expected "host:port", got {raw!r}')
    host, _, port_s = raw.rpartition(":")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        raise ConfigError(f"{where}: {host!r} is not an IPv4 address") from None
    if not port_s.isdigit() or not 0 < int(port_s) < 65536:
        raise ConfigError(f"{where}: bad port {port_s!r} (1..65535)")
    return host, int(port_s)


def load_config(path: str | Path) -> ClusterConfig:
    """Read and validate the cluster file at ``path``."""
    p = Path(path)
    try:
        raw = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such cluster file") from None
    except OSError as e:
        raise ConfigError(f"{p}: cannot read: {e.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: not valid TOML: {e}") from None
    return parse_config(raw, base=p.parent.resolve(), source=str(p))


def _table(raw: Mapping[str, Any], key: str, src: str) -> Mapping[str, Any]:
    val = raw.get(key, {})
    if not isinstance(val, Mapping):
        raise ConfigError(f"{src}: {key}: expected a table")
    return val


def _str(t: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
    val = t.get(key, default)
    if val is None:
        raise ConfigError(f"{where}.{key}: missing (required)")
    if not isinstance(val, str) or not val:
        raise ConfigError(f"{where}.{key}: expected a non-empty string, got {val!r}")
    return val


def _choice(t: Mapping[str, Any], key: str, where: str, choices: tuple[str, ...]) -> str:
    val = _str(t, key, where, choices[0])
    if val not in choices:
        raise ConfigError(f"{where}.{key}: {val!r} is not one of {', '.join(choices)}")
    return val


_CLUSTER_KEYS = {
    "name",
    "protocol",
    "transport",
    "udp_offload",
    "security",
    "key_file",
    "state_dir",
    "trace_dir",
    "trace",
    "trace_format",
    "trace_rotate",
    "trace_packets",
    "trace_write_through",
    "run_id",
    "origin_ns",
    "origin_clock",
    "log_level",
}
_NODE_KEYS = {"id", "addresses", "status", "join"}


def parse_config(raw: Mapping[str, Any], *, base: Path, source: str = "<config>") -> ClusterConfig:
    """Validate an already-parsed cluster document; relative paths resolve against ``base``."""
    src = source
    for key in raw:
        if key not in ("cluster", "settings", "network", "node"):
            raise ConfigError(
                f"{src}: {key}: unknown table (expected cluster, settings, network, node)"
            )
    c = _table(raw, "cluster", src)
    w = f"{src}: cluster"
    for key in c:
        if key not in _CLUSTER_KEYS:
            raise ConfigError(f"{w}.{key}: unknown key (known: {', '.join(sorted(_CLUSTER_KEYS))})")
    name = _str(c, "name", w)
    protocol = _str(c, "protocol", w)
    try:
        spec = registry.get(protocol)
    except ValueError as e:
        raise ConfigError(f"{w}.protocol: {e}") from None
    try:
        settings = spec.resolve_settings(_table(raw, "settings", src), f"{src}: settings")
    except ValueError as e:
        raise ConfigError(str(e)) from None
    transport = _choice(c, "transport", w, TRANSPORTS)
    security = _choice(c, "security", w, SECURITY_MODES)
    trace_format = _choice(c, "trace_format", w, TRACE_FORMATS)
    log_level = _choice(c, "log_level", w, LOG_LEVELS)
    origin_clock = _choice(c, "origin_clock", w, ORIGIN_CLOCKS)
    key_file = base / _str(c, "key_file", w)
    state_dir = base / _str(c, "state_dir", w, "state")
    trace_on = c.get("trace", True)
    if not isinstance(trace_on, bool):
        raise ConfigError(f"{w}.trace: expected true or false, got {trace_on!r}")
    udp_offload = c.get("udp_offload", True)
    if not isinstance(udp_offload, bool):
        raise ConfigError(f"{w}.udp_offload: expected true or false, got {udp_offload!r}")
    trace_dir = base / _str(c, "trace_dir", w, "trace") if trace_on else None
    try:
        rotate = parse_duration(c.get("trace_rotate", "5s"), f"{w}.trace_rotate")
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if rotate <= 0:
        raise ConfigError(f"{w}.trace_rotate: must be positive")
    trace_packets = c.get("trace_packets", False)
    if not isinstance(trace_packets, bool):
        raise ConfigError(f"{w}.trace_packets: expected true or false, got {trace_packets!r}")
    write_through = c.get("trace_write_through", False)
    if not isinstance(write_through, bool):
        raise ConfigError(f"{w}.trace_write_through: expected true or false, got {write_through!r}")
    run_id = c.get("run_id", name)
    if not isinstance(run_id, str) or not run_id:
        raise ConfigError(f"{w}.run_id: expected a non-empty string, got {run_id!r}")
    origin = c.get("origin_ns", 0)
    if isinstance(origin, bool) or not isinstance(origin, int) or origin < 0:
        raise ConfigError(f"{w}.origin_ns: expected a non-negative integer, got {origin!r}")

    nets_raw = raw.get("network", [])
    if not isinstance(nets_raw, list):
        raise ConfigError(f"{src}: network: expected an array of tables ([[network]])")
    multicast: list[Address] = []
    for k, net in enumerate(nets_raw):
        nw = f"{src}: network[{k}]"
        if not isinstance(net, Mapping):
            raise ConfigError(f"{nw}: expected a table")
        for key in net:
            if key != "multicast":
                raise ConfigError(f"{nw}.{key}: unknown key (known: multicast)")
        if "multicast" in net:
            addr = parse_address(net["multicast"], f"{nw}.multicast")
            if not ipaddress.IPv4Address(addr[0]).is_multicast:
                raise ConfigError(f"{nw}.multicast: {addr[0]} is not a multicast address")
            multicast.append(addr)

    nodes_raw = raw.get("node")
    if not isinstance(nodes_raw, list) or not nodes_raw:
        raise ConfigError(f"{src}: node: at least one [[node]] table is required")
    nodes: list[NodeConfig] = []
    seen_ids: set[str] = set()
    seen_addrs: dict[Address, str] = {}
    networks: int | None = None
    for k, nd in enumerate(nodes_raw):
        nw = f"{src}: node[{k}]"
        if not isinstance(nd, Mapping):
            raise ConfigError(f"{nw}: expected a table")
        for key in nd:
            if key not in _NODE_KEYS:
                raise ConfigError(
                    f"{nw}.{key}: unknown key (known: {', '.join(sorted(_NODE_KEYS))})"
                )
        try:
            node_id = check_node_id(nd.get("id"))
        except ValueError as e:
            raise ConfigError(f"{nw}.id: {e}") from None
        if node_id in seen_ids:
            raise ConfigError(f"{nw}.id: duplicate node id {node_id!r}")
        seen_ids.add(node_id)
        addrs_raw = nd.get("addresses")
        if not isinstance(addrs_raw, list) or not addrs_raw:
            raise ConfigError(f'{nw}.addresses: expected a non-empty list of "host:port"')
        addrs = tuple(parse_address(a, f"{nw}.addresses[{j}]") for j, a in enumerate(addrs_raw))
        if networks is None:
            networks = len(addrs)
        elif len(addrs) != networks:
            raise ConfigError(
                f"{nw}.addresses: {len(addrs)} addresses, but node[0] has {networks} "
                "(one address a network on every node)"
            )
        for j, a in enumerate(addrs):
            if a in seen_addrs:
                raise ConfigError(
                    f"{nw}.addresses[{j}]: {a[0]}:{a[1]} is also used by {seen_addrs[a]!r}"
                )
            seen_addrs[a] = node_id
        status = parse_address(nd["status"], f"{nw}.status") if "status" in nd else None
        join = nd.get("join", False)
        if not isinstance(join, bool):
            raise ConfigError(f"{nw}.join: expected true or false, got {join!r}")
        nodes.append(NodeConfig(node_id, addrs, status, join))
    assert networks is not None
    if transport == "multicast" and len(multicast) != networks:
        raise ConfigError(
            f'{src}: network: transport "multicast" needs one [[network]] with a multicast '
            f"address a network ({networks}), got {len(multicast)}"
        )
    if not any(not n.join for n in nodes):
        raise ConfigError(f"{src}: node: every node has join = true; the initial group is empty")
    return ClusterConfig(
        name=name,
        protocol=protocol,
        settings=settings,
        nodes=tuple(nodes),
        key_file=key_file,
        state_dir=state_dir,
        trace_dir=trace_dir,
        transport=transport,
        udp_offload=udp_offload,
        security=security,
        multicast=tuple(multicast),
        trace_format=trace_format,
        trace_rotate_ns=rotate,
        trace_packets=trace_packets,
        trace_write_through=write_through,
        run_id=run_id,
        origin_ns=origin,
        origin_clock=origin_clock,
        log_level=log_level,
        source=src,
    )


def render_config(
    *,
    name: str,
    protocol: str,
    nodes: Sequence[tuple[str, Sequence[str], str | None]],
    settings: Mapping[str, Any] | None = None,
    key_file: str = "cluster.key",
    security: str = "hmac",
    trace_format: str = "parquet",
    run_id: str | None = None,
    origin_ns: int | None = None,
    trace_rotate: str | None = None,
    trace: bool = True,
    trace_packets: bool = False,
    joining: Collection[str] = (),
    origin_clock: str | None = None,
    trace_write_through: bool = False,
) -> str:
    """A cluster file's text (used by ``ringcast cluster up``, ``ringcast live`` and the
    tests); the nodes in ``joining`` get ``join = true``."""

    def q(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

    def val(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return str(v)
        return q(str(v))

    lines = [
        "[cluster]",
        f"name = {q(name)}",
        f"protocol = {q(protocol)}",
        'transport = "udpu"',
        f"security = {q(security)}",
        f"key_file = {q(key_file)}",
        'state_dir = "state"',
        'trace_dir = "trace"',
        f"trace_format = {q(trace_format)}",
    ]
    if run_id:
        lines.append(f"run_id = {q(run_id)}")
    if origin_ns is not None:
        lines.append(f"origin_ns = {origin_ns}")
    if origin_clock is not None:
        lines.append(f"origin_clock = {q(origin_clock)}")
    if not trace:
        lines.append("trace = false")
    if trace_rotate is not None:
        lines.append(f"trace_rotate = {q(trace_rotate)}")
    if trace_packets:
        lines.append("trace_packets = true")
    if trace_write_through:
        lines.append("trace_write_through = true")
    lines += ["", "[settings]"]
    lines += [f"{k} = {val(v)}" for k, v in (settings or {}).items()]
    for node_id, addrs, status in nodes:
        lines += ["", "[[node]]", f"id = {q(node_id)}"]
        lines.append("addresses = [" + ", ".join(q(a) for a in addrs) + "]")
        if status:
            lines.append(f"status = {q(status)}")
        if node_id in joining:
            lines.append("join = true")
    return "\n".join(lines) + "\n"
