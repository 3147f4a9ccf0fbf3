"""The cluster file: a TOML description of one cluster, validated with errors naming the key
(its tables typed by pydantic models, its cross-key rules checked here).

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
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

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


class _Table(BaseModel):
    """A TOML table of the cluster file: its keys typed, no other key allowed, no value
    coerced (``"yes"`` is not a boolean, ``1`` not a string)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


_Text = Annotated[str, StringConstraints(min_length=1)]


class _ClusterTable(_Table):
    name: _Text
    protocol: _Text
    transport: Literal["udpu", "multicast"] = "udpu"
    udp_offload: bool = True
    security: Literal["hmac", "aes-gcm", "none"] = "hmac"
    key_file: _Text
    state_dir: _Text = "state"
    trace_dir: _Text = "trace"
    trace: bool = True
    trace_format: Literal["parquet", "jsonl"] = "parquet"
    trace_rotate: Any = "5s"  # a duration, parsed by parse_duration
    trace_packets: bool = False
    trace_write_through: bool = False
    run_id: _Text | None = None
    origin_ns: Annotated[int, Field(ge=0)] = 0
    origin_clock: Literal["wall", "monotonic"] = "wall"
    log_level: Literal["debug", "info", "warning", "error"] = "info"


class _NetworkTable(_Table):
    multicast: Any = None  # "host:port", parsed by parse_address


class _NodeTable(_Table):
    id: Any = None  # checked by check_node_id
    addresses: Annotated[list[Any], Field(min_length=1)]
    status: Any = None
    join: bool = False


class _ClusterFile(_Table):
    cluster: _ClusterTable
    settings: dict[str, Any] = {}
    network: list[_NetworkTable] = []
    node: Annotated[list[_NodeTable], Field(min_length=1)]


_TABLES = ("cluster", "settings", "network", "node")
_CLUSTER_KEYS = tuple(sorted(_ClusterTable.model_fields))
_NODE_KEYS = tuple(sorted(_NodeTable.model_fields))
_CHOICES = {
    "transport": TRANSPORTS,
    "security": SECURITY_MODES,
    "trace_format": TRACE_FORMATS,
    "origin_clock": ORIGIN_CLOCKS,
    "log_level": LOG_LEVELS,
}


def _where(src: str, loc: tuple[int | str, ...]) -> str:
    """``src: cluster.security``, ``src: node[1].join``: the key as the file names it."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return f"{src}: {out}"


def _message(err: Mapping[str, Any]) -> str:
    """What the key should have held, in the words of the cluster file's documentation."""
    loc, kind, value = tuple(err["loc"]), err["type"], err.get("input")
    table, key = loc[0], loc[-1]
    if kind == "extra_forbidden":
        if len(loc) == 1:
            return f"unknown table (expected {', '.join(_TABLES)})"
        known = {"cluster": _CLUSTER_KEYS, "node": _NODE_KEYS, "network": ("multicast",)}
        return f"unknown key (known: {', '.join(known[str(table)])})"
    if table == "node" and len(loc) == 1:
        return "at least one [[node]] table is required"
    if key == "addresses":
        return 'expected a non-empty list of "host:port"'
    if table == "network" and len(loc) == 1:
        return "expected an array of tables ([[network]])"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return "expected a table"
    if kind == "missing":
        return "missing (required)"
    if kind == "literal_error":
        return f"{value!r} is not one of {', '.join(_CHOICES[str(key)])}"
    if kind == "bool_type":
        return f"expected true or false, got {value!r}"
    if key == "origin_ns":
        return f"expected a non-negative integer, got {value!r}"
    if kind in ("string_type", "string_too_short"):
        return f"expected a non-empty string, got {value!r}"
    return str(err["msg"])


def _validate(raw: Mapping[str, Any], src: str) -> _ClusterFile:
    """The cluster file's tables typed, or a :class:`ConfigError` naming the first key
    that is wrong (an unknown key or table first)."""
    try:
        return _ClusterFile.model_validate({"cluster": {}, **raw})
    except ValidationError as e:
        errors = e.errors(include_url=False)
        first = next((x for x in errors if x["type"] == "extra_forbidden"), errors[0])
        raise ConfigError(f"{_where(src, tuple(first['loc']))}: {_message(first)}") from None


def parse_config(raw: Mapping[str, Any], *, base: Path, source: str = "<config>") -> ClusterConfig:
    """Validate an already-parsed cluster document; relative paths resolve against ``base``."""
    src = source
    doc = _validate(raw, src)
    c = doc.cluster
    w = f"{src}: cluster"
    try:
        spec = registry.get(c.protocol)
    except ValueError as e:
        raise ConfigError(f"{w}.protocol: {e}") from None
    try:
        settings = spec.resolve_settings(doc.settings, f"{src}: settings")
    except ValueError as e:
        raise ConfigError(str(e)) from None
    try:
        rotate = parse_duration(c.trace_rotate, f"{w}.trace_rotate")
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if rotate <= 0:
        raise ConfigError(f"{w}.trace_rotate: must be positive")

    multicast: list[Address] = []
    for k, net in enumerate(doc.network):
        if net.multicast is not None:
            nw = f"{src}: network[{k}]"
            addr = parse_address(net.multicast, f"{nw}.multicast")
            if not ipaddress.IPv4Address(addr[0]).is_multicast:
                raise ConfigError(f"{nw}.multicast: {addr[0]} is not a multicast address")
            multicast.append(addr)

    nodes: list[NodeConfig] = []
    seen_ids: set[str] = set()
    seen_addrs: dict[Address, str] = {}
    networks = len(doc.node[0].addresses)
    for k, nd in enumerate(doc.node):
        nw = f"{src}: node[{k}]"
        try:
            node_id = check_node_id(nd.id)
        except ValueError as e:
            raise ConfigError(f"{nw}.id: {e}") from None
        if node_id in seen_ids:
            raise ConfigError(f"{nw}.id: duplicate node id {node_id!r}")
        seen_ids.add(node_id)
        addrs = tuple(parse_address(a, f"{nw}.addresses[{j}]") for j, a in enumerate(nd.addresses))
        if len(addrs) != networks:
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
        status = parse_address(nd.status, f"{nw}.status") if nd.status is not None else None
        nodes.append(NodeConfig(node_id, addrs, status, nd.join))
    if c.transport == "multicast" and len(multicast) != networks:
        raise ConfigError(
            f'{src}: network: transport "multicast" needs one [[network]] with a multicast '
            f"address a network ({networks}), got {len(multicast)}"
        )
    if not any(not n.join for n in nodes):
        raise ConfigError(f"{src}: node: every node has join = true; the initial group is empty")
    return ClusterConfig(
        name=c.name,
        protocol=c.protocol,
        settings=settings,
        nodes=tuple(nodes),
        key_file=base / c.key_file,
        state_dir=base / c.state_dir,
        trace_dir=base / c.trace_dir if c.trace else None,
        transport=c.transport,
        udp_offload=c.udp_offload,
        security=c.security,
        multicast=tuple(multicast),
        trace_format=c.trace_format,
        trace_rotate_ns=rotate,
        trace_packets=c.trace_packets,
        trace_write_through=c.trace_write_through,
        run_id=c.name if c.run_id is None else c.run_id,
        origin_ns=c.origin_ns,
        origin_clock=c.origin_clock,
        log_level=c.log_level,
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
    udp_offload: bool = True,
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
    if not udp_offload:
        lines.append("udp_offload = false")
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
