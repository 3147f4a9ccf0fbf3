"""The protocol registry: how a scenario's or a cluster file's ``protocol = "name"`` is built.

A protocol family registers a :class:`ProtocolSpec`: its name, a factory building one
node's machine from a :class:`~ringcast.core.machine.MachineContext`, and its settings
with their kinds and defaults. Settings are validated here, once, for the simulator
and the runtime alike: an unknown key or a value of the wrong kind is an error that
names the key.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ringcast.core.machine import Machine, MachineContext
from ringcast.core.units import parse_duration

SETTING_KINDS = ("duration", "int", "float", "bool", "str")


@dataclass(frozen=True)
class Setting:
    """One protocol setting. ``duration`` values are integer nanoseconds once parsed."""

    kind: str
    default: Any
    doc: str = ""
    minimum: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in SETTING_KINDS:
            raise ValueError(f"unknown setting kind {self.kind!r}")


@dataclass(frozen=True)
class ProtocolSpec:
    name: str
    factory: Callable[[MachineContext], Machine]
    settings: Mapping[str, Setting] = field(default_factory=dict)
    doc: str = ""
    offers_lock: bool = False

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

# Protocol packages imported on first lookup; each calls register() at import.
_BUILTIN = (
    "ringcast.protocols.basic",
    "ringcast.protocols.raincore",
    "ringcast.protocols.totem",
)


def register(spec: ProtocolSpec) -> ProtocolSpec:
    if spec.name in _REGISTRY and _REGISTRY[spec.name] is not spec:
        raise ValueError(f"protocol {spec.name!r} registered twice")
    _REGISTRY[spec.name] = spec
    return spec


def _load_builtins() -> None:
    for mod in _BUILTIN:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:  # a protocol package that exists but fails to import is a bug
                raise


def get(name: str) -> ProtocolSpec:
    _load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise ValueError(f"unknown protocol {name!r} (known: {known})") from None


def names() -> list[str]:
    """Every registered protocol, including any a plugin or a test registered."""
    _load_builtins()
    return sorted(_REGISTRY)


def builtin_names() -> list[str]:
    """The protocols ringcast ships (those defined under ``ringcast.protocols``)."""
    _load_builtins()
    return sorted(
        name
        for name, spec in _REGISTRY.items()
        if getattr(spec.factory, "__module__", "").startswith("ringcast.protocols.")
    )
