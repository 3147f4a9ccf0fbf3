"""The tables of a scenario file and every key each may hold, as pydantic models:
closed (an unknown key is refused), strict (no value coerced). A value in the project's
own notation (a duration, a latency table, a node id) is typed ``Any`` here and parsed
by the section parsers of :mod:`ringcast.sim.scenario`, which also check the rules
between keys. Imported only where a file is first read (never by a Spark task: the
executors may lack pydantic)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ringcast.sim.scenario import ACTIONS, ScenarioError


class _Tbl(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Link(_Tbl):
    from_: Any = Field(None, alias="from")
    to: Any = None
    latency: Any = None
    loss: Any = None
    duplication: Any = None
    match: Any = None


class _Drop(_Tbl):
    from_: Any = Field(None, alias="from")
    to: Any = None
    nth: Any = None
    match: Any = None


class _Network(_Tbl):
    latency: Any = None
    loss: Any = None
    duplication: Any = None
    reorder: Any = None
    reorder_delay: Any = None
    corrupt: Any = None
    networks: Any = None
    max_datagram: Any = None
    loss_per_network: Any = None
    links: list[_Link] = []
    drop: list[_Drop] = []


class _Workload(_Tbl):
    nodes: Any = None
    kind: Any = None
    rate: Any = None
    size: Any = None
    order: Any = None
    start: Any = None
    count: Any = None
    duration: Any = None
    arrivals: Any = None
    hold: Any = None


class _Act(_Tbl):
    at: Any


class _OnNode(_Act):
    action: Literal["crash", "restart", "pause", "resume", "join", "ungarble"]
    node: Any


class _Leave(_Act):
    action: Literal["leave"]
    node: Any
    linger: Any = None


class _Link_(_Act):
    action: Literal["link_down", "link_up"]
    node: Any
    network: Any = None


class _Garble(_Act):
    action: Literal["garble"]
    node: Any
    share: Any = None


class _Cut(_Act):
    action: Literal["cut"]
    from_: Any = Field(alias="from")
    to: Any


class _Partition(_Act):
    action: Literal["partition"]
    groups: Any = None


class _Heal(_Act):
    action: Literal["heal"]


_Nemesis = Annotated[
    _OnNode | _Leave | _Link_ | _Garble | _Cut | _Partition | _Heal,
    Field(discriminator="action"),
]


class _ScenarioFile(_Tbl):
    name: Any = None
    protocol: Any = None
    nodes: Any = None
    joiners: Any = None
    duration: Any = None
    seed: Any = None
    count_bytes: bool = True
    trace_packets: bool = False
    fixed: bool = False
    settings: dict[str, Any] = {}
    network: _Network = _Network()
    workload: list[_Workload] = []
    nemesis: list[_Nemesis] = []


def _where(source: str, loc: tuple[int | str, ...]) -> str:
    """``x.toml: network.links[0].from``: the key as the file names it (the tag pydantic
    puts after a nemesis index, the action, is not part of it)."""
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif loc[0] == "nemesis" and i == 2 and part in ACTIONS:
            continue
        else:
            out += f".{part}" if out else part
    return f"{source}: {out}"


def _known_keys(model: type[BaseModel]) -> str:
    return ", ".join(sorted(f.alias or name for name, f in model.model_fields.items()))


_ACTION_MODELS: dict[str, type[BaseModel]] = {
    a: m
    for m in (_OnNode, _Leave, _Link_, _Garble, _Cut, _Partition, _Heal)
    for a in m.model_fields["action"].annotation.__args__  # type: ignore[union-attr]
}


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel]:
    """The model of the table ``loc`` (a key's path) ends in."""
    model: type[BaseModel] = _ScenarioFile
    for i, part in enumerate(loc[:-1]):
        if isinstance(part, int):
            continue
        if loc[0] == "nemesis" and i == 2:
            model = _ACTION_MODELS[str(part)]
            continue
        field = model.model_fields.get(str(part)) or next(
            f for f in model.model_fields.values() if f.alias == part
        )
        inner = field.annotation
        args = getattr(inner, "__args__", ())
        model = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), inner)  # type: ignore[assignment]
    return model


def _message(err: Mapping[str, Any]) -> str:
    """What the key should have held, in the words the section parsers use."""
    loc, kind, value = tuple(err["loc"]), err["type"], err.get("input")
    if kind == "extra_forbidden":
        return f"unknown key (known here: {_known_keys(_model_at(loc))})"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        action = value.get("action") if isinstance(value, dict) else None
        return f"unknown action {action!r} (use {', '.join(ACTIONS)})"
    if kind == "missing":
        tag = loc[2] if loc[0] == "nemesis" and len(loc) > 3 else None
        return f"required for {tag}" if tag and loc[-1] != "at" else "required"
    if kind == "bool_type":
        return f"expected true or false, got {value!r}"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"expected a table, got {type(value).__name__}"
    if kind == "list_type":
        return f"use [[{'.'.join(str(p) for p in loc)}]] tables"
    return str(err["msg"])


def validate_file(data: Mapping[str, Any], source: str) -> None:
    """Refuse a scenario whose tables hold a key they do not know, or a value of the
    wrong shape, naming the file and the key (an unknown key first)."""
    try:
        _ScenarioFile.model_validate(dict(data))
    except ValidationError as e:
        errors = e.errors(include_url=False)
        first = next((x for x in errors if x["type"] == "extra_forbidden"), errors[0])
        loc = tuple(first["loc"])
        if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
            loc = (*loc, "action")
        raise ScenarioError(f"{_where(source, loc)}: {_message(first)}") from None
