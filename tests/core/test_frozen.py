"""core.frozen.fast_init: the same instances as the dataclass's own __init__ builds."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest

from ringcast.core.effects import Record, Send
from ringcast.core.frozen import fast_init


@fast_init
@dataclass(frozen=True, slots=True)
class _Fast:
    a: int
    b: str = "b"
    c: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Plain:
    a: int
    b: str = "b"
    c: dict[str, Any] = field(default_factory=dict)


def test_fields_defaults_and_factories_as_the_dataclass_sets_them() -> None:
    for args, kwargs in [((1,), {}), ((1, "x"), {}), ((), {"a": 2, "c": {"k": 1}})]:
        fast, plain = _Fast(*args, **kwargs), _Plain(*args, **kwargs)
        assert dataclasses.astuple(fast) == dataclasses.astuple(plain)
    assert _Fast(1).c is not _Fast(1).c  # a fresh default from the factory each time
    with pytest.raises(TypeError):
        _Fast()  # type: ignore[call-arg]


def test_the_instance_stays_a_frozen_dataclass() -> None:
    x = _Fast(1, "y", {"k": 2})
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.a = 2  # type: ignore[misc]
    assert x == _Fast(1, "y", {"k": 2}) and x != _Fast(2)
    assert repr(x) == "_Fast(a=1, b='y', c={'k': 2})"
    assert dataclasses.replace(x, a=3) == _Fast(3, "y", {"k": 2})
    s = Send("B", "m", network=1)
    assert hash(s) == hash(Send("B", "m", 1)) and pickle.loads(pickle.dumps(s)) == s
    assert Record.of("drop", reason="r").fields == {"reason": "r"}


def test_a_class_it_cannot_serve_is_refused() -> None:
    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(frozen=True, slots=True)
    class PostInit:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclass(frozen=True, slots=True)
    class KwOnly:
        a: int = field(kw_only=True)

    for cls in (NoSlots, PostInit, KwOnly):
        with pytest.raises(TypeError):
            fast_init(cls)
