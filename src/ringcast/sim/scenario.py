"""Scenario files: a TOML description of one simulated run (see ``docs/scenarios.md``).

:func:`load_scenario` parses and validates a file; every error is a
:class:`ScenarioError` whose message names the file and the offending key, e.g.
``crash.toml: nemesis[2].node: unknown node 'E' (nodes: A, B, C, D)``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ringcast.core.events import ORDERS
from ringcast.core.ids import check_node_id
from ringcast.core.units import parse_duration
from ringcast.protocols import registry
from ringcast.sim.latency import Latency, parse_latency

NODE_NAMES: tuple[str, ...] = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ") + tuple(
    f"N{k}" for k in range(26, 100)
)
"""The node names of generated and grown scenarios, in order: A to Z, then N26 to N99."""

ACTIONS = (
    "crash",
    "restart",
    "partition",
    "heal",
    "pause",
    "resume",
    "link_down",
    "link_up",
    "join",
    "leave",
    "cut",
    "garble",
    "ungarble",
)
GARBLE_SHARE = 0.25
"""A garbling node's share of hostile messages unless its ``share`` says otherwise."""
WORKLOAD_KINDS = ("multicast", "lock")
DEFAULT_LATENCY = Latency("constant", value=1_000_000)
# The largest message body a UDP datagram carries: 65,507 bytes of IPv4 UDP payload
# less room for ringcast's frame header and security envelope.
MAX_DATAGRAM = 65_400


class ScenarioError(ValueError):
    """A scenario file is malformed; the message names the file and the key."""


@dataclass(frozen=True)
class LinkRule:
    """Per-link overrides of the network model (``[[network.links]]``); with ``match``
    (a message class name) they apply to that class of messages only, e.g. losing only
    the membership heartbeats on a link while unicast still works."""

    src: str
    dst: str
    latency: Latency | None = None
    loss: float | None = None
    duplication: float | None = None
    match: str | None = None


@dataclass(frozen=True)
class DropRule:
    """Drop the ``nth`` message (1-based) from ``src`` to ``dst`` (optionally only of one
    message class ``match``): targeted losses for the papers' worked examples."""

    src: str
    dst: str
    nth: int
    match: str | None = None


@dataclass(frozen=True)
class NetworkModel:
    latency: Latency = DEFAULT_LATENCY
    loss: float = 0.0
    duplication: float = 0.0
    reorder: float = 0.0
    reorder_delay: int = 2_000_000
    corrupt: float = 0.0  # a message's encoded frame gets random bytes flipped in flight
    networks: int = 1
    max_datagram: int = MAX_DATAGRAM
    loss_per_network: tuple[float, ...] = ()
    """Extra loss of each network (empty: none), on top of ``loss``."""
    links: tuple[LinkRule, ...] = ()
    drops: tuple[DropRule, ...] = ()


@dataclass(frozen=True)
class Workload:
    nodes: tuple[str, ...]
    kind: str = "multicast"
    rate: float = 100.0
    size: int = 100
    order: str = "agreed"
    start: int = 0
    count: int | None = None
    duration: int | None = None
    arrivals: str = "constant"
    hold: int = 1_000_000


@dataclass(frozen=True)
class Action:
    at: int
    action: str
    node: str | None = None
    groups: tuple[tuple[str, ...], ...] = ()
    network: int | None = None
    linger: int = 0
    cut_from: tuple[str, ...] = ()
    cut_to: tuple[str, ...] = ()
    share: float = 0.0
    """garble: the share of the node's messages that arrive with a hostile field."""


@dataclass(frozen=True)
class Scenario:
    name: str
    protocol: str
    nodes: tuple[str, ...]
    duration: int
    settings: Mapping[str, Any] = field(default_factory=dict)
    joiners: tuple[str, ...] = ()
    network: NetworkModel = NetworkModel()
    workloads: tuple[Workload, ...] = ()
    nemesis: tuple[Action, ...] = ()
    seed: int = 1
    count_bytes: bool = True
    trace_packets: bool = False
    fixed: bool = False
    source: str = "<scenario>"

    @property
    def all_nodes(self) -> tuple[str, ...]:
        return self.nodes + self.joiners

    def with_settings(self, **overrides: Any) -> Scenario:
        """A copy with protocol settings overridden (validated like the file's)."""
        spec = registry.get(self.protocol)
        raw = {**self.settings, **overrides}
        return replace(self, settings=spec.resolve_settings(raw, f"{self.source}: settings"))


# ---------------------------------------------------------------- parsing helpers


class _Table:
    """A TOML table being read, its keys already checked by :class:`_ScenarioFile`:
    names each key as the file does."""

    def __init__(self, raw: Any, where: str, sep: str = "."):
        if not isinstance(raw, dict):
            raise ScenarioError(f"{where}: expected a table, got {type(raw).__name__}")
        self.raw = raw
        self.where = where
        self.sep = sep

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    def has(self, key: str) -> bool:
        return key in self.raw

    def path(self, key: str) -> str:
        return f"{self.where}{self.sep}{key}" if self.where else key


def _err(where: str, msg: str) -> ScenarioError:
    return ScenarioError(f"{where}: {msg}")


def _duration(t: _Table, key: str, default: Any = None, *, required: bool = False) -> int | None:
    raw = t.get(key)
    if raw is None:
        if required:
            raise _err(t.path(key), "required")
        return default
    try:
        return parse_duration(raw, t.path(key))
    except ValueError as e:
        raise ScenarioError(str(e)) from None


def _duration_or(t: _Table, key: str, default: int) -> int:
    """``key``'s duration in nanoseconds, or ``default`` when the table leaves it out."""
    value = _duration(t, key)
    return default if value is None else value


def _prob(t: _Table, key: str, default: float = 0.0) -> float:
    raw = t.get(key, default)
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0.0 <= raw <= 1.0:
        raise _err(t.path(key), f"expected a probability between 0 and 1, got {raw!r}")
    return float(raw)


def _int(t: _Table, key: str, default: Any = None, *, minimum: int = 0) -> Any:
    raw = t.get(key, default)
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < minimum:
        raise _err(t.path(key), f"expected an integer >= {minimum}, got {raw!r}")
    return raw


def _node_list(raw: Any, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list):
        raise _err(where, f"expected a list of node ids, got {raw!r}")
    out = []
    for i, n in enumerate(raw):
        try:
            out.append(check_node_id(n))
        except ValueError as e:
            raise _err(f"{where}[{i}]", str(e)) from None
    dup = sorted({n for n in out if out.count(n) > 1})
    if dup:
        raise _err(where, f"node {dup[0]!r} listed twice")
    return tuple(out)


def _known(node: Any, known: tuple[str, ...], where: str) -> str:
    if node not in known:
        raise _err(where, f"unknown node {node!r} (nodes: {', '.join(known)})")
    return node


# ---------------------------------------------------------------- sections


def _parse_network(raw: Any, nodes: tuple[str, ...], where: str) -> NetworkModel:
    t = _Table(raw, where)
    kw: dict[str, Any] = {}
    if t.has("latency"):
        try:
            kw["latency"] = parse_latency(t.get("latency"), t.path("latency"))
        except ValueError as e:
            raise ScenarioError(str(e)) from None
    kw["loss"] = _prob(t, "loss")
    kw["duplication"] = _prob(t, "duplication")
    kw["reorder"] = _prob(t, "reorder")
    kw["reorder_delay"] = _duration_or(t, "reorder_delay", 2_000_000)
    kw["corrupt"] = _prob(t, "corrupt")
    kw["networks"] = _int(t, "networks", 1, minimum=1)
    kw["max_datagram"] = _int(t, "max_datagram", MAX_DATAGRAM, minimum=0)
    per_net = t.get("loss_per_network")
    if per_net is not None:
        where_pn = t.path("loss_per_network")
        if not isinstance(per_net, list) or len(per_net) != kw["networks"]:
            raise _err(
                where_pn,
                f"expected a list of one loss probability a network "
                f"({kw['networks']} networks), got {per_net!r}",
            )
        pn = _Table({f"[{k}]": v for k, v in enumerate(per_net)}, where_pn, sep="")
        kw["loss_per_network"] = tuple(_prob(pn, f"[{k}]") for k in range(len(per_net)))
    links = []
    for i, lr in enumerate(t.get("links", []) or []):
        lt = _Table(lr, f"{t.path('links')}[{i}]")
        src = _known(lt.get("from"), nodes, lt.path("from"))
        dst = _known(lt.get("to"), nodes, lt.path("to"))
        lat = None
        if lt.has("latency"):
            try:
                lat = parse_latency(lt.get("latency"), lt.path("latency"))
            except ValueError as e:
                raise ScenarioError(str(e)) from None
        loss = _prob(lt, "loss") if lt.has("loss") else None
        dup = _prob(lt, "duplication") if lt.has("duplication") else None
        lmatch = lt.get("match")
        if lmatch is not None and (not isinstance(lmatch, str) or not lmatch):
            raise _err(lt.path("match"), f"expected a message class name, got {lmatch!r}")
        links.append(LinkRule(src, dst, lat, loss, dup, lmatch))
    drops = []
    for i, dr in enumerate(t.get("drop", []) or []):
        dt = _Table(dr, f"{t.path('drop')}[{i}]")
        src = _known(dt.get("from"), nodes, dt.path("from"))
        dst = _known(dt.get("to"), nodes, dt.path("to"))
        nth = _int(dt, "nth", None, minimum=1)
        if nth is None:
            raise _err(dt.path("nth"), "required (1 drops the first matching message)")
        match = dt.get("match")
        if match is not None and not isinstance(match, str):
            raise _err(dt.path("match"), f"expected a message class name, got {match!r}")
        drops.append(DropRule(src, dst, nth, match))
    return NetworkModel(links=tuple(links), drops=tuple(drops), **kw)


def _parse_workload(raw: Any, nodes: tuple[str, ...], where: str) -> Workload:
    t = _Table(raw, where)
    sel = t.get("nodes", "all")
    if sel == "all":
        wl_nodes = nodes
    else:
        wl_nodes = _node_list(sel, t.path("nodes"))
        for i, n in enumerate(wl_nodes):
            _known(n, nodes, f"{t.path('nodes')}[{i}]")
    kind = t.get("kind", "multicast")
    if kind not in WORKLOAD_KINDS:
        raise _err(
            t.path("kind"), f"unknown workload kind {kind!r} (use {', '.join(WORKLOAD_KINDS)})"
        )
    rate = t.get("rate", 100.0)
    if isinstance(rate, bool) or not isinstance(rate, int | float) or rate < 0:
        raise _err(
            t.path("rate"),
            f"expected operations per second (0: as fast as flow control allows), got {rate!r}",
        )
    if rate == 0 and kind == "lock":
        raise _err(t.path("rate"), "a lock workload needs a positive rate")
    order = t.get("order", "agreed")
    if order not in ORDERS:
        raise _err(t.path("order"), f"unknown order {order!r} (use {', '.join(ORDERS)})")
    arrivals = t.get("arrivals", "constant")
    if arrivals not in ("constant", "poisson"):
        raise _err(t.path("arrivals"), f"unknown arrivals {arrivals!r} (use constant or poisson)")
    count = _int(t, "count", None, minimum=1)
    duration = _duration(t, "duration")
    if count is not None and duration is not None:
        raise _err(where, "give count or duration, not both")
    wl = Workload(
        nodes=wl_nodes,
        kind=kind,
        rate=float(rate),
        size=_int(t, "size", 100, minimum=0),
        order=order,
        start=_duration_or(t, "start", 0),
        count=count,
        duration=duration,
        arrivals=arrivals,
        hold=_duration_or(t, "hold", 1_000_000),
    )
    return wl


def _parse_action(raw: Any, all_nodes: tuple[str, ...], networks: int, where: str) -> Action:
    t = _Table(raw, where)
    at = _duration(t, "at", required=True)
    assert at is not None
    action = t.get("action")
    if action not in ACTIONS:
        raise _err(t.path("action"), f"unknown action {action!r} (use {', '.join(ACTIONS)})")
    node = None
    groups: tuple[tuple[str, ...], ...] = ()
    network = None
    if action in (
        "crash",
        "restart",
        "pause",
        "resume",
        "join",
        "leave",
        "link_down",
        "link_up",
        "garble",
        "ungarble",
    ):
        if not t.has("node"):
            raise _err(t.path("node"), f"required for {action}")
        node = _known(t.get("node"), all_nodes, t.path("node"))
    if action in ("link_down", "link_up"):
        network = _int(t, "network", 0)
        if network >= networks:
            raise _err(
                t.path("network"), f"network {network} does not exist (networks = {networks})"
            )
    linger = 0
    if action == "leave":
        linger = _duration_or(t, "linger", 0)
    share = 0.0
    if action == "garble":
        share = _prob(t, "share", GARBLE_SHARE)
        if share == 0.0:
            raise _err(t.path("share"), "a garbling node garbles some of its messages: > 0")
    cut_from: tuple[str, ...] = ()
    cut_to: tuple[str, ...] = ()
    if action == "cut":
        for key in ("from", "to"):
            if not t.has(key):
                raise _err(t.path(key), "required for cut (a list of nodes)")
            lst = _node_list(t.get(key), t.path(key))
            for n in lst:
                _known(n, all_nodes, t.path(key))
            if key == "from":
                cut_from = lst
            else:
                cut_to = lst
    if action == "partition":
        raw_groups = t.get("groups")
        if not isinstance(raw_groups, list) or len(raw_groups) < 2:
            raise _err(t.path("groups"), "a partition needs at least two groups of nodes")
        seen: set[str] = set()
        parsed = []
        for gi, g in enumerate(raw_groups):
            grp = _node_list(g, f"{t.path('groups')}[{gi}]")
            for n in grp:
                _known(n, all_nodes, f"{t.path('groups')}[{gi}]")
                if n in seen:
                    raise _err(t.path("groups"), f"node {n!r} is in two groups")
                seen.add(n)
            parsed.append(grp)
        groups = tuple(parsed)
    return Action(at, action, node, groups, network, linger, cut_from, cut_to, share)


def _check_schedule(sc: Scenario) -> None:
    """Replay the nemesis schedule on node states and refuse impossible steps."""
    state = {n: "up" for n in sc.nodes}
    state.update({n: "absent" for n in sc.joiners})
    links_down: set[tuple[str, int]] = set()
    need = {
        "crash": ("up", "paused"),
        "pause": ("up",),
        "resume": ("paused",),
        "restart": ("crashed",),
        "join": ("absent",),
        "leave": ("up",),
    }
    after = {
        "crash": "crashed",
        "pause": "paused",
        "resume": "up",
        "restart": "up",
        "join": "up",
        "leave": "left",
    }
    for i, a in enumerate(sc.nemesis):
        where = f"{sc.source}: nemesis[{i}] ({a.action} at {a.at}ns)"
        if a.at > sc.duration:
            raise ScenarioError(f"{where}: after the end of the run (duration {sc.duration}ns)")
        if a.action in need:
            assert a.node is not None
            s = state[a.node]
            if s not in need[a.action]:
                raise ScenarioError(f"{where}: node {a.node!r} is {s} then, cannot {a.action}")
            state[a.node] = after[a.action]
        elif a.action in ("link_down", "link_up"):
            assert a.node is not None and a.network is not None
            key = (a.node, a.network)
            if (a.action == "link_down") == (key in links_down):
                raise ScenarioError(
                    f"{where}: link of {a.node!r} on network {a.network} is already "
                    f"{'down' if key in links_down else 'up'}"
                )
            (links_down.add if a.action == "link_down" else links_down.discard)(key)


def parse_scenario(
    data: Mapping[str, Any], source: str = "<scenario>", *, checked: bool = False
) -> Scenario:
    """Validate a scenario given as a parsed TOML document.

    ``checked``: the document's tables and keys were validated already
    (:mod:`ringcast.sim.schema`), by the lab's driver before it sent the document to a
    task: a Spark executor runs only the ringcast that the driver shipped it, without
    pydantic. The values are parsed and checked either way."""
    if not checked:
        from ringcast.sim.schema import validate_file

        validate_file(data, source)
    t = _Table(dict(data), f"{source}:", sep=" ")

    def path(key: str) -> str:
        return f"{source}: {key}"

    name = t.get("name", Path(source).stem)
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"{path('name')}: expected a non-empty string")
    protocol = t.get("protocol")
    if protocol is None:
        raise ScenarioError(f"{path('protocol')}: required (one of {', '.join(registry.names())})")
    try:
        spec = registry.get(protocol)
    except ValueError as e:
        raise ScenarioError(f"{path('protocol')}: {e}") from None
    if not t.has("nodes"):
        raise ScenarioError(f'{path("nodes")}: required (the initial members, e.g. ["A", "B"])')
    try:
        nodes = _node_list(t.get("nodes"), path("nodes"))
        joiners = _node_list(t.get("joiners", []), path("joiners"))
    except ScenarioError:
        raise
    if not nodes:
        raise ScenarioError(f"{path('nodes')}: at least one node is needed")
    both = sorted(set(nodes) & set(joiners))
    if both:
        raise ScenarioError(f"{path('joiners')}: {both[0]!r} is also in nodes")
    all_nodes = nodes + joiners
    try:
        duration = parse_duration(t.get("duration", "1s"), path("duration"))
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    if duration <= 0:
        raise ScenarioError(f"{path('duration')}: must be positive")
    seed = t.get("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ScenarioError(f"{path('seed')}: expected an integer, got {seed!r}")
    count_bytes = t.get("count_bytes", True)
    trace_packets = t.get("trace_packets", False)
    fixed = t.get("fixed", False)
    raw_settings = t.get("settings", {})
    try:
        settings = spec.resolve_settings(raw_settings, f"{source}: settings")
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    network = _parse_network(t.get("network", {}), all_nodes, path("network"))
    raw_wl = t.get("workload", [])
    workloads = tuple(
        _parse_workload(w, all_nodes, f"{path('workload')}[{i}]") for i, w in enumerate(raw_wl)
    )
    for i, w in enumerate(workloads):
        if w.kind == "lock" and not spec.offers_lock:
            raise ScenarioError(
                f"{path('workload')}[{i}].kind: protocol {protocol!r} offers no lock"
            )
    raw_nem = t.get("nemesis", [])
    actions = [
        _parse_action(a, all_nodes, network.networks, f"{path('nemesis')}[{i}]")
        for i, a in enumerate(raw_nem)
    ]
    order = sorted(range(len(actions)), key=lambda i: actions[i].at)
    sc = Scenario(
        name=name,
        protocol=protocol,
        nodes=nodes,
        joiners=joiners,
        duration=duration,
        settings=settings,
        network=network,
        workloads=workloads,
        nemesis=tuple(actions[i] for i in order),
        seed=seed,
        count_bytes=count_bytes,
        trace_packets=trace_packets,
        fixed=fixed,
        source=source,
    )
    _check_schedule(sc)
    return sc


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario TOML file."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ScenarioError(f"{p}: cannot read scenario file: {e.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{p.name}: not valid TOML: {e}") from None
    return parse_scenario(data, p.name)
