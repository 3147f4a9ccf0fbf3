"""Sweep files: scenarios x a parameter grid x seeds, expanded into run specifications.

A sweep is a TOML file::

    name = "default"
    scenarios = ["../scenarios/*/*.toml"]   # globs, relative to the sweep file
    protocols = ["raincore", "totem"]       # optional: keep only these
    seeds = 5                               # 1..5, or a list of seeds
    partitions = 0                          # Spark tasks (0: four per core)

    [grid]                                  # every combination, per scenario
    nodes = ["as_is", 3, 5]                 # a count: the first N of A, B, C, ...
    "network.loss" = [0.0, 0.02]            # any scenario key, dotted
    "settings.token_timeout" = ["20ms"]     # protocol settings: only where they exist
    faults = ["as_is", "none"]              # keep or drop the nemesis schedule

A combination a scenario cannot take (a fault on a node the ``nodes`` value removed)
is skipped and reported, never run.

Growing a scenario (``nodes`` above its own count) adds nodes that its faults never
name. A ``partition`` fault would leave them out of every group, and unlisted nodes
form one more group: a 2|3 partition of five nodes would become a three-way 2|3|1
split of six in which no side holds a majority. The added nodes therefore join the
largest group of each partition (the last of the largest on a tie), so the sides keep
their roles: 2|3 of five becomes 2|4 of six.

Instead of (or beside) scenario files, a sweep can draw its scenarios from a seeded
generator, one scenario per protocol and seed::

    name = "hostile"
    protocols = ["raincore", "totem"]       # required with a generator
    seeds = 10000                           # generator seeds 1..N, each its own run

    [generator]
    kind = "hostile"                        # ringcast.sim.hostile
    # settings.raincore = { hungry_timeout = "300ms" }   # optional, per protocol
    # garble = 0.3                          # optional: members gone bad among the faults
    # nodes = [16, 32]                      # optional: group sizes drawn from (3 to 8)
    # quiet = 40                            # optional: the quiet end, in timeouts (12)

The hostile generator scales its faults by the protocol's failure-detection timeout
(its spec's ``timeout`` setting). Generated points take no grid. With ``garble`` one or
two members send that share of their messages corrupted for a while (the nemesis
``garble``); what a liar says is not held to the safety claims, so such a sweep is
checked for liveness (``--claims 'P=convergence+delivery_progress'``).

A sweep may declare the violations it expects (a control, kept because it fails), one
``[[expect]]`` table each (:mod:`ringcast.lab.expect`)::

    [[expect]]
    protocol = "gms"                                 # a registered protocol
    where = { "settings.view_install" = "plain" }    # optional: grid values of the point
    violates = ["convergence"]                       # property names
    why = "plain installs views without acknowledgements"

A ``where`` key must be a key of the grid (a ``settings.`` key a setting of the
protocol) and its value one of the grid's values for it.

A scenario with ``fixed = true`` is a worked example with exact timings (a seed's
figure): the grid runs it only at points that
leave it unchanged (``as_is``, its own group size, the values it already has) and
skips and reports every other point.
"""

from __future__ import annotations

import copy
import dataclasses
import glob
import itertools
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ringcast.lab.errors import LabError
from ringcast.lab.expect import EXPECT_KEY, Expectation
from ringcast.protocols import registry
from ringcast.protocols.registry import PROPERTIES
from ringcast.sim.scenario import NODE_NAMES, ScenarioError, parse_scenario

if TYPE_CHECKING:  # the sweep file's schema is the driver's alone (executors lack pydantic)
    from ringcast.lab.sweepfile import _Expect, _Generator


def is_fixed(doc: dict[str, Any]) -> bool:
    """Whether a parsed scenario document declares itself ``fixed = true``."""
    return doc.get("fixed") is True


@dataclass(frozen=True)
class RunSpec:
    """One simulation of a sweep: which scenario point and which seed."""

    run: str
    protocol: str
    scenario: str
    point: str
    params: str  # JSON of the grid values of this point
    seed: int
    nodes: int
    scenario_index: int  # index into Sweep.documents


@dataclass
class Sweep:
    name: str
    source: str
    files: list[Path]
    grid: dict[str, list[Any]]
    seeds: list[int]
    partitions: int = 0
    documents: list[dict[str, Any]] = field(default_factory=list)
    runs: list[RunSpec] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    expect: list[Expectation] = field(default_factory=list)
    live: LiveSweep | None = None
    """Set when the sweep asks for live runs (``live = true`` or a ``[live]`` table)."""


@dataclass(frozen=True)
class LiveSweep:
    """A sweep's ``live`` key: run on real processes (``ringcast.live``), one run after
    another; ``sample``: only that many of the runs, drawn by the sweep's name (None:
    all); ``real_latency``: run on the bridges' latency instead of the scenarios'
    latency model (``ringcast live --real-latency``)."""

    sample: int | None = None
    real_latency: bool = False


def _parse_live(raw: Any, source: str) -> LiveSweep | None:
    if raw is False or raw is None:
        return None
    if raw is True:
        return LiveSweep()
    if not isinstance(raw, dict):
        raise LabError(f"{source}: live: expected true or a table (sample, real_latency)")
    unknown = sorted(set(raw) - {"sample", "real_latency"})
    if unknown:
        raise LabError(f"{source}: live.{unknown[0]}: unknown key (known: real_latency, sample)")
    sample = raw.get("sample")
    if sample is not None and (
        isinstance(sample, bool) or not isinstance(sample, int) or sample < 1
    ):
        raise LabError(f"{source}: live.sample: expected a positive number of runs, got {sample!r}")
    real = raw.get("real_latency", False)
    if not isinstance(real, bool):
        raise LabError(f"{source}: live.real_latency: expected true or false, got {real!r}")
    return LiveSweep(sample, real)


def load_sweep(path: str | Path, *, seeds: int | None = None) -> Sweep:
    """Read a sweep file and expand it (``seeds`` overrides the file's seed count)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except OSError as e:
        raise LabError(f"{p}: cannot read sweep file: {e.strerror}") from None
    except UnicodeDecodeError:
        raise LabError(f"{p}: not valid TOML: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise LabError(f"{p.name}: not valid TOML: {e}") from None
    return parse_sweep(data, p.name, base=p.parent, seeds=seeds)


def parse_sweep(
    data: dict[str, Any], source: str = "<sweep>", *, base: Path = Path(), seeds: int | None = None
) -> Sweep:
    """Validate a parsed sweep document and expand its runs."""
    if seeds is not None:
        data = {**data, "seeds": seeds}
    from ringcast.lab.sweepfile import validate

    doc = validate(data, source)
    generator = data.get("generator")
    patterns = (
        doc.scenarios if doc.scenarios is not None else ([] if generator is not None else None)
    )
    if isinstance(patterns, str):
        patterns = [patterns]
    if patterns is None or (not patterns and generator is None):
        raise LabError(f"{source}: scenarios: expected a list of file globs")
    files: list[Path] = []
    for pat in patterns:
        full = pat if Path(pat).is_absolute() else str(base / pat)
        found = sorted(Path(f) for f in glob.glob(full))
        if not found:
            raise LabError(f"{source}: scenarios: {pat!r} matches no file")
        files += [f for f in found if f not in files]
    seed_list = list(range(1, doc.seeds + 1)) if isinstance(doc.seeds, int) else list(doc.seeds)
    grid = data.get("grid", {})
    partitions = doc.partitions
    protocols = data.get("protocols")
    expect = [
        _expectation(t, grid, f"{source}: [[{EXPECT_KEY}]] #{k}")
        for k, t in enumerate(doc.expect, 1)
    ]
    sweep = Sweep(
        str(data.get("name", Path(source).stem)), source, files, grid, seed_list, partitions
    )
    sweep.expect = expect
    sweep.live = _parse_live(data.get("live"), source)
    _expand(sweep, protocols)
    if generator is not None:
        assert doc.generator is not None
        _generate(sweep, doc.generator, protocols, source)
    if not sweep.runs:
        raise LabError(f"{source}: no runs: every scenario point was skipped or filtered out")
    return sweep


def parse_expectations(raw: Any, grid: dict[str, list[Any]], source: str) -> list[Expectation]:
    """Validate the ``[[expect]]`` tables of a sweep file against its ``grid``."""
    from ringcast.lab.sweepfile import expect_tables

    tables = expect_tables(raw, source)
    return [
        _expectation(t, grid, f"{source}: [[{EXPECT_KEY}]] #{k}") for k, t in enumerate(tables, 1)
    ]


def _expectation(t: _Expect, grid: dict[str, list[Any]], at: str) -> Expectation:
    proto = t.protocol
    try:
        spec = registry.get(proto)
    except ValueError as e:
        raise LabError(f"{at}: protocol: {e}") from None
    violates = [t.violates] if isinstance(t.violates, str) else t.violates
    for name in violates:
        if name not in PROPERTIES:
            raise LabError(
                f"{at}: violates: unknown property {name!r} (known: {', '.join(PROPERTIES)})"
            )
    if not t.why.strip():
        from ringcast.lab.sweepfile import EXPECT_SAYS

        raise LabError(f"{at}: why: {EXPECT_SAYS['why']}")
    point: dict[str, Any] = {}
    for key, value in t.where.items():
        if key not in grid:
            known = ", ".join(grid) or "the grid is empty"
            raise LabError(f"{at}: where.{key}: not a key of the grid ({known})")
        if key.startswith("settings.") and key.split(".", 1)[1] not in spec.settings:
            raise LabError(f"{at}: where.{key}: not a setting of protocol {proto}")
        flag = isinstance(value, bool)  # True == 1, but not as a grid value
        same = [v for v in grid[key] if v == value and isinstance(v, bool) == flag]
        if not same:
            values = ", ".join(map(repr, grid[key]))
            raise LabError(f"{at}: where.{key}: {value!r} is not a value of the grid ({values})")
        point[key] = same[0]  # the grid's own value: 3 and 3.0 name one point
    return Expectation(proto, tuple(dict.fromkeys(violates)), t.why.strip(), point)


def _set(doc: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    cur = doc
    for k in keys[:-1]:
        cur = cur.setdefault(k, {})
        if not isinstance(cur, dict):
            raise ScenarioError(f"{dotted}: {k} is not a table")
    cur[keys[-1]] = value


def apply_point(doc: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """A copy of scenario document ``doc`` with the grid values ``params`` applied."""
    out = copy.deepcopy(doc)
    for key, value in params.items():
        if key == "nodes":
            if value == "as_is":
                continue
            if not isinstance(value, int) or value < 1:
                raise ScenarioError(f"nodes: expected a node count, got {value!r}")
            current = list(out.get("nodes", []))
            extra = [n for n in NODE_NAMES if n not in current and n not in out.get("joiners", [])]
            out["nodes"] = (current + extra)[:value]
            _grow_partitions(out, [n for n in out["nodes"] if n not in current])
        elif key == "faults":
            if value == "none":
                out.pop("nemesis", None)
            elif value != "as_is":
                raise ScenarioError(f"faults: expected as_is or none, got {value!r}")
        else:
            _set(out, key, value)
    return out


def _grow_partitions(doc: dict[str, Any], added: list[str]) -> None:
    """Put the ``added`` nodes into the largest group of every partition fault."""
    if not added:
        return
    for entry in doc.get("nemesis", []):
        if not isinstance(entry, dict) or entry.get("action") != "partition":
            continue
        groups = entry.get("groups")
        if not isinstance(groups, list) or not groups:
            continue
        if not all(isinstance(g, list) for g in groups):
            continue  # malformed: parse_scenario names the error
        listed = {n for g in groups for n in g}
        new = [n for n in added if n not in listed]
        if not new:
            continue
        largest = max(range(len(groups)), key=lambda k: (len(groups[k]), k))
        entry["groups"] = [g + new if k == largest else g for k, g in enumerate(groups)]


def _label(params: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in params.items()) or "base"


SPECIAL_AXES = ("nodes", "faults")
"""Grid keys that are not scenario keys (see :func:`apply_point`)."""


def _check_axis(doc: dict[str, Any], key: str, value: Any, f: Path, source: str) -> None:
    """``LabError`` when grid ``key`` is no key of a scenario (a typo such as
    ``network.los``): the scenario parser, given the key alone, names it unknown."""
    try:
        parse_scenario(apply_point(doc, {key: value}), f.name)
    except ScenarioError as e:
        msg = str(e)
        if f" {key}: unknown key" in msg or (msg.startswith(f"{key}:") and "not a table" in msg):
            raise LabError(f"{source}: grid: {key!r} is not a scenario key: {msg}") from None


def _check_settings_axes(sweep: Sweep, seen: set[str]) -> None:
    """``LabError`` for a ``settings.`` grid key that no protocol of the sweep has."""
    for key in sweep.grid:
        if not key.startswith("settings."):
            continue
        name = key.split(".", 1)[1]
        specs = [registry.get(p) for p in sorted(seen)]
        if seen and not any(name in spec.settings for spec in specs):
            known = sorted({k for spec in specs for k in spec.settings})
            raise LabError(
                f"{sweep.source}: grid: {key!r}: {name!r} is a setting of none of the sweep's "
                f"protocols ({', '.join(sorted(seen))}; their settings: {', '.join(known)})"
            )


def _expand(sweep: Sweep, protocols: list[str] | None) -> None:
    seen: set[str] = set()
    checked_axes = False
    for f in sweep.files:
        try:
            text = f.read_text()
            doc = tomllib.loads(text)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise LabError(f"{f}: cannot read scenario: {e}") from None
        fixed = is_fixed(doc)
        proto = doc.get("protocol")
        if protocols and proto not in protocols:
            continue
        try:
            spec = registry.get(str(proto))
        except ValueError as e:
            sweep.skipped.append(f"{f.name}: {e}")
            continue
        seen.add(spec.name)
        if not checked_axes:  # every scenario has the same keys: one is enough
            for key, axis in sweep.grid.items():
                if key not in SPECIAL_AXES and not key.startswith("settings."):
                    _check_axis(doc, key, axis[0], f, sweep.source)
            checked_axes = True
        axes = {
            k: v
            for k, v in sweep.grid.items()
            if not k.startswith("settings.") or k.split(".", 1)[1] in spec.settings
        }
        base_sc = None
        if fixed:
            try:
                base_sc = parse_scenario(doc, f.name)
            except ScenarioError as e:
                sweep.skipped.append(f"{f.name}: {e}")
                continue
        for values in itertools.product(*axes.values()):
            params = dict(zip(axes, values, strict=True))
            try:
                point_doc = apply_point(doc, params)
                sc = parse_scenario(point_doc, f.name)
            except ScenarioError as e:
                sweep.skipped.append(f"{f.name} at {_label(params)}: {e}")
                continue
            if base_sc is not None and sc != base_sc:
                sweep.skipped.append(
                    f"{f.name} at {_label(params)}: a worked example with exact timings"
                    " (fixed = true) runs only as it is"
                )
                continue
            index = len(sweep.documents)
            sweep.documents.append(point_doc)
            label = _label(params)
            for seed in sweep.seeds:
                sweep.runs.append(
                    RunSpec(
                        run=f"{sc.name}@{label}:{seed}",
                        protocol=sc.protocol,
                        scenario=sc.name,
                        point=label,
                        params=json.dumps(params, sort_keys=True),
                        seed=seed,
                        nodes=len(sc.nodes),
                        scenario_index=index,
                    )
                )
    _check_settings_axes(sweep, seen)


GENERATORS = ("hostile",)


def _group_sizes(gen: dict[str, Any], where: str) -> tuple[int, int]:
    """The generator's ``nodes``: a group size, or ``[fewest, most]`` to draw from."""
    from ringcast.sim.hostile import HOSTILE

    value = gen.get("nodes", list(HOSTILE.nodes))
    sizes = [value, value] if isinstance(value, int) and not isinstance(value, bool) else value
    if (
        not isinstance(sizes, list)
        or len(sizes) != 2
        or not all(isinstance(k, int) and not isinstance(k, bool) for k in sizes)
        or not 1 <= sizes[0] <= sizes[1] <= len(NODE_NAMES)
    ):
        raise LabError(
            f"{where}.nodes: expected a group size or [fewest, most] within 1..{len(NODE_NAMES)},"
            f" got {value!r}"
        )
    return sizes[0], sizes[1]


def _generate(sweep: Sweep, gen: _Generator, protocols: Any, source: str) -> None:
    """Expand a ``[generator]`` table: one generated scenario per protocol and seed."""
    from ringcast.sim.hostile import HOSTILE, hostile_scenario

    where = f"{source}: generator"
    raw_nodes = {} if gen.nodes is None else {"nodes": gen.nodes}
    harshness = dataclasses.replace(
        HOSTILE,
        garble=float(gen.garble),
        quiet=float(HOSTILE.quiet if gen.quiet is None else gen.quiet),
        nodes=_group_sizes(raw_nodes, where),
    )
    if gen.kind is None:
        from ringcast.lab.sweepfile import GENERATOR_SAYS

        raise LabError(f"{where}.kind: {GENERATOR_SAYS['kind']}")
    if not isinstance(protocols, list) or not protocols:
        raise LabError(f"{source}: protocols: a generator needs the list of protocols to run")
    all_settings = gen.settings
    for proto in protocols:
        try:
            spec = registry.get(str(proto))
        except ValueError as e:
            sweep.skipped.append(f"generator: {e}")
            continue
        settings = all_settings.get(proto, {})
        try:
            timeout = spec.timeout_ns(settings)
        except ValueError as e:
            raise LabError(f"{where}.settings.{proto}: {e}") from None
        if timeout is None:
            sweep.skipped.append(
                f"generator: protocol {proto!r} declares no failure-detection timeout"
            )
            continue
        for seed in sweep.seeds:
            try:
                run = hostile_scenario(
                    seed, spec.name, token_timeout=timeout, settings=settings, harshness=harshness
                )
            except (ScenarioError, ValueError) as e:
                sweep.skipped.append(f"generator {proto}:{seed}: {e}")
                continue
            index = len(sweep.documents)
            sweep.documents.append(run.doc)
            sc = run.scenario
            sweep.runs.append(
                RunSpec(
                    run=f"{sc.name}:{seed}",
                    protocol=sc.protocol,
                    scenario=sc.name,
                    point="generated",
                    params=json.dumps({"generator": gen.kind}),
                    seed=seed,
                    nodes=len(sc.nodes),
                    scenario_index=index,
                )
            )
