"""The sweep file's schema (:mod:`ringcast.lab.grid` reads sweep files): its tables
typed with pydantic, no other key allowed, no value coerced, and a schema error turned
into one line naming the file, the key and what it should hold.

Only the driver reads sweep files: the executors, which import :mod:`ringcast.lab.grid`
for the points they run, never import this module, so a cluster's executors need no
pydantic.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ringcast.lab.errors import LabError
from ringcast.lab.expect import EXPECT_KEY

EXPECT_FIELDS = ("protocol", "where", "violates", "why")


class _Table(BaseModel):
    """A TOML table of the sweep file: its keys typed, no other key allowed, no value
    coerced (``true`` is not a count)."""

    model_config = ConfigDict(extra="forbid", strict=True)


_Count = Annotated[int, Field(ge=0)]
_Share = Annotated[float, Field(ge=0, le=1)]
_Timeouts = Annotated[float, Field(ge=1, le=1000)]


class _Generator(_Table):
    kind: Literal["hostile"] | None = None
    garble: _Share = 0.0
    quiet: _Timeouts | None = None
    nodes: Any = None  # a group size or [fewest, most]: _group_sizes checks it
    settings: dict[str, Any] = {}


class _Expect(_Table):
    protocol: str
    violates: str | Annotated[list[str], Field(min_length=1)]
    why: str
    where: dict[str, Any] = {}


class _SweepFile(_Table):
    name: Any = None
    scenarios: str | list[str] | None = None
    seeds: Annotated[int, Field(ge=1)] | Annotated[list[_Count], Field(min_length=1)] = 1
    grid: dict[str, Annotated[list[Any], Field(min_length=1)]] = {}
    partitions: _Count = 0
    protocols: Any = None
    expect: list[_Expect] = []
    live: Any = None  # true or a table: _parse_live checks it
    generator: _Generator | None = None


SWEEP_SAYS = {
    "scenarios": "expected a list of file globs",
    "grid": "expected a table of non-empty lists",
    "partitions": "expected an integer >= 0",
}
GENERATOR_SAYS = {
    "kind": "expected one of " + ", ".join(("hostile",)),
    "settings": "expected a table of protocol settings tables",
}
EXPECT_SAYS = {
    "protocol": "expected a protocol name",
    "violates": "expected a non-empty list of property names",
    "why": "expected a sentence saying why the violation is expected",
    "where": "expected a table of grid keys and values",
}


def sweep_error(err: Any, data: dict[str, Any], source: str) -> LabError:
    """One line naming the file, the key and what it should hold, for a schema error."""
    loc, kind, value = tuple(err["loc"]), err["type"], err.get("input")
    top = str(loc[0])
    if kind == "extra_forbidden" and len(loc) == 1:
        known = ", ".join(sorted(_SweepFile.model_fields))
        return LabError(f"{source}: {top}: unknown key (known: {known})")
    if top == "seeds":
        return LabError(
            f"{source}: seeds: expected a positive count or a list of integers >= 0, "
            f"got {data.get('seeds')!r}"
        )
    if top == "generator":
        where = f"{source}: generator"
        if len(loc) == 1:
            return LabError(f"{where}: expected a table")
        key = str(loc[1])
        if kind == "extra_forbidden":
            known = ", ".join(sorted(_Generator.model_fields))
            return LabError(f"{where}.{key}: unknown key (known: {known})")
        if key == "garble":
            return LabError(
                f"{where}.garble: expected a share of messages in [0, 1], got {value!r}"
            )
        if key == "quiet":
            return LabError(
                f"{where}.quiet: expected a number of timeouts in [1, 1000], got {value!r}"
            )
        return LabError(f"{where}.{key}: {GENERATOR_SAYS[key]}")
    if top == EXPECT_KEY:
        if len(loc) <= 2 or not isinstance(loc[1], int):
            return LabError(f"{source}: {EXPECT_KEY}: expected [[{EXPECT_KEY}]] tables")
        at = f"{source}: [[{EXPECT_KEY}]] #{loc[1] + 1}"
        key = str(loc[2])
        if kind == "extra_forbidden":
            return LabError(f"{at}: {key}: unknown key (known: {', '.join(EXPECT_FIELDS)})")
        if kind == "missing":
            return LabError(f"{at}: {key}: missing")
        return LabError(f"{at}: {key}: {EXPECT_SAYS[key]}")
    return LabError(f"{source}: {top}: {SWEEP_SAYS.get(top, err['msg'])}")


def validate(data: dict[str, Any], source: str) -> _SweepFile:
    """The sweep file's keys typed, or a :class:`LabError` for the first that is wrong
    (an unknown key first, then a missing one)."""
    try:
        return _SweepFile.model_validate(data)
    except ValidationError as e:
        errors = e.errors(include_url=False)
        rank = {"extra_forbidden": 0, "missing": 1}
        first = min(errors, key=lambda x: (rank.get(x["type"], 2), errors.index(x)))
        raise sweep_error(first, data, source) from None


def expect_tables(raw: Any, source: str) -> list[_Expect]:
    """The ``[[expect]]`` tables typed, or a :class:`LabError` for the first that is wrong."""
    try:
        return _SweepFile.model_validate({EXPECT_KEY: raw}).expect
    except ValidationError as e:
        raise sweep_error(e.errors(include_url=False)[0], {}, source) from None
