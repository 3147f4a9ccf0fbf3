"""The protocol registry: how a scenario's or a cluster file's ``protocol = "name"`` is built.

A protocol family registers a :class:`ProtocolSpec`: its name, a factory building one
node's machine from a :class:`~ringcast.core.machine.MachineContext`, and its settings
with their kinds and defaults. Settings are validated here, once, for the simulator
and the runtime alike: an unknown key or a value of the wrong kind is an error that
names the key.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ringcast.core.machine import Machine, MachineContext
from ringcast.core.units import parse_duration

SETTING_KINDS = ("duration", "int", "float", "bool", "str")


@dataclass(frozen=True)
class Setting:
    """One protocol setting. ``duration`` values are integer nanoseconds once parsed. Its
    default is the same in the simulator and on real processes."""

    kind: str
    default: Any
    doc: str = ""
    minimum: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in SETTING_KINDS:
            raise ValueError(f"unknown setting kind {self.kind!r}")


PROPERTIES: tuple[str, ...] = (
    "view_agreement",
    "total_order",
    "integrity",
    "fifo",
    "virtual_synchrony",
    "safe_delivery",
    "mutual_exclusion",
    "single_token",
    "convergence",
    "leader_agreement",
    "delivery_progress",
    "merge_atomicity",
)
"""Every safety and liveness property the lab checks, by the names of the design."""

DEFAULT_CLAIMS: frozenset[str] = frozenset(
    {"view_agreement", "integrity", "fifo", "convergence", "leader_agreement"}
)
"""What a protocol that declares no claims is held to."""

HOST_KINDS: tuple[str, ...] = (
    "submit",
    "deliver",
    "view",
    "leader",
    "state",
    "lock",
    "fault",
    "stats",
    "drop",
    "invariant",
)
"""Trace kinds every host writes or every protocol may write (the trace schema)."""


@dataclass(frozen=True)
class ProtocolSpec:
    """Everything the hosts and the lab know about a protocol family, declared with it.

    * ``claims``: the properties the lab holds its traces to (see :data:`PROPERTIES`);
    * ``order_scope``: ``run`` (total order over every delivery of a run, Raincore's one
      token order) or ``view`` (deliveries made in one configuration, Totem's extended
      virtual synchrony);
    * ``total_orders``: the delivery orders total order applies to (None: every one);
    * ``converge_on``: what "one same configuration" means for convergence, ``view``
      (the same id and members) or ``members`` (the same member set);
    * ``trace_kinds``: the protocol's own trace kinds beyond :data:`HOST_KINDS`;
    * ``wire_ids``: the inclusive range of wire type ids its messages use;
    * ``offers_lock``: whether it implements ``LockRequest`` / ``LockGranted``;
    * ``timeout``: its failure-detection timeout, as the name of the setting that holds
      it (Raincore's ``hungry_timeout``, Totem's ``token_timeout``, Tribes'
      ``member_drop_time``) or, where no one setting holds it, a function of the
      resolved settings (GMS: heartbeat period x missed heartbeats): the hostile
      generator scales its faults by it, and convergence bounds are stated in it;
    * ``networks``: how many networks it uses at once (``None``: any number, a
      redundant ring); in a cluster with more, a single-network protocol's packets go
      out on network 0 and the other networks stay unused.
    """

    name: str
    factory: Callable[[MachineContext], Machine]
    settings: Mapping[str, Setting] = field(default_factory=dict)
    doc: str = ""
    offers_lock: bool = False
    claims: frozenset[str] = DEFAULT_CLAIMS
    order_scope: str = "run"
    total_orders: tuple[str, ...] | None = ("agreed", "safe")
    converge_on: str = "view"
    trace_kinds: tuple[str, ...] = ()
    wire_ids: tuple[int, int] | None = None
    networks: int | None = 1
    timeout: str | Callable[[Mapping[str, Any]], int] | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.claims) - set(PROPERTIES))
        if unknown:
            raise ValueError(
                f"protocol {self.name!r}: unknown property {unknown[0]!r} "
                f"(known: {', '.join(PROPERTIES)})"
            )
        if self.order_scope not in ("run", "view"):
            raise ValueError(f"protocol {self.name!r}: order_scope must be 'run' or 'view'")
        if self.converge_on not in ("view", "members"):
            raise ValueError(f"protocol {self.name!r}: converge_on must be 'view' or 'members'")
        if isinstance(self.timeout, str) and self.timeout not in self.settings:
            raise ValueError(f"protocol {self.name!r}: timeout names no setting {self.timeout!r}")
        object.__setattr__(self, "claims", frozenset(self.claims))

    def timeout_ns(self, settings: Mapping[str, Any] | None = None) -> int | None:
        """The failure-detection timeout in ns with ``settings`` applied (None: none)."""
        if self.timeout is None:
            return None
        resolved = self.resolve_settings(settings or {})
        if isinstance(self.timeout, str):
            return int(resolved[self.timeout])
        return int(self.timeout(resolved))

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every trace kind this protocol's runs can hold."""
        return (*HOST_KINDS, *(k for k in self.trace_kinds if k not in HOST_KINDS))

    def resolve_settings(self, given: Mapping[str, Any], where: str = "settings") -> dict[str, Any]:
        """Defaults overlaid with ``given``; raise ``ValueError`` naming a bad or unknown key."""
        out = {k: s.default for k, s in self.settings.items()}
        for key, raw in given.items():
            spec = self.settings.get(key)
            if spec is None:
                known = ", ".join(sorted(self.settings)) or "none"
                raise ValueError(
                    f"{where}.{key}: unknown setting for protocol {self.name!r} (known: {known})"
                )
            out[key] = _convert(spec, raw, f"{where}.{key}")
        return out


def _convert(spec: Setting, raw: Any, where: str) -> Any:
    kind = spec.kind
    if kind == "duration":
        value: Any = parse_duration(raw, where)
    elif kind == "bool":
        if not isinstance(raw, bool):
            raise ValueError(f"{where}: expected true or false, got {raw!r}")
        value = raw
    elif kind == "int":
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise ValueError(f"{where}: expected an integer, got {raw!r}")
        value = raw
    elif kind == "float":
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise ValueError(f"{where}: expected a number, got {raw!r}")
        value = float(raw)
    else:
        if not isinstance(raw, str):
            raise ValueError(f"{where}: expected a string, got {raw!r}")
        value = raw
    if spec.minimum is not None and kind != "str" and value < spec.minimum:
        raise ValueError(f"{where}: {raw!r} is below the minimum {spec.minimum}")
    return value


_REGISTRY: dict[str, ProtocolSpec] = {}

ENTRY_POINT_GROUP = "ringcast.protocols"
"""Protocol families are found through this entry-point group, ringcast's own as any
plugin's: ``[project.entry-points."ringcast.protocols"] name = "package:SPEC"``."""

_loaded = False


def register(spec: ProtocolSpec) -> ProtocolSpec:
    if spec.name in _REGISTRY and _REGISTRY[spec.name] is not spec:
        raise ValueError(f"protocol {spec.name!r} registered twice")
    _REGISTRY[spec.name] = spec
    return spec


def _entry_points() -> importlib.metadata.EntryPoints:
    """The installed entry points of :data:`ENTRY_POINT_GROUP`."""
    return importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)


def _load_entry_points() -> None:
    """Import every protocol package of the entry-point group (once per process).

    A package registers its spec when imported; the entry point names that spec, and
    one whose object is not a :class:`ProtocolSpec` of the same name is an error.
    """
    global _loaded
    if _loaded:
        return
    _loaded = True
    for ep in _entry_points():
        spec = ep.load()
        if not isinstance(spec, ProtocolSpec) or spec.name != ep.name:
            raise ValueError(
                f"entry point {ep.name!r} = {ep.value!r} in group {ENTRY_POINT_GROUP!r} "
                f"is not the ProtocolSpec named {ep.name!r}"
            )
        if _REGISTRY.get(spec.name) is not spec:
            register(spec)


def get(name: str) -> ProtocolSpec:
    _load_entry_points()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise ValueError(f"unknown protocol {name!r} (known: {known})") from None


def names() -> list[str]:
    """Every registered protocol, including any a plugin or a test registered."""
    _load_entry_points()
    return sorted(_REGISTRY)


def installed_names() -> list[str]:
    """The protocols installed through the entry-point group (ringcast's own and every
    installed plugin's), not those a test or a script registered by hand."""
    _load_entry_points()
    return sorted({ep.name for ep in _entry_points()})


def builtin_names() -> list[str]:
    """The protocols ringcast ships: its own entry points, whose specs are defined under
    ``ringcast.protocols``. Not a plugin's, nor one a test or a script registered by
    hand, even with a shipped family's factory (a variant with a bug planted in it)."""
    _load_entry_points()
    return sorted(
        {ep.name for ep in _entry_points() if ep.module.startswith("ringcast.protocols.")}
    )
