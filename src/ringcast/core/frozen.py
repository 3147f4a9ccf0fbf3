"""A cheaper ``__init__`` for the frozen slots dataclasses a simulation builds by the million.

A frozen dataclass's own ``__init__`` sets each field with ``object.__setattr__(self,
name, value)``, the detour its ``__setattr__`` (which refuses every assignment) makes
necessary. A field of a slots dataclass is a slot, a member descriptor on the class, and
its ``__set__`` stores the value directly: :func:`fast_init` gives the class an
``__init__`` that does just that, field by field, in the order, with the names and the
defaults of the dataclass's own. Nothing else changes: the instance is as frozen as
before (assigning to a field still raises), and equality, hashing, ``repr``,
``dataclasses.replace`` and pickling are the dataclass's. The wire codec's decoder
builds messages the same way (``core/_codegen.py``).

Events, effects and the hottest wire messages (the reliable layer's frames, Totem's
frames and token) use it: each received packet and each effect is one or two of them.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any, TypeVar

T = TypeVar("T", bound=type)

_FACTORY = object()
"""The default of a parameter whose field has a ``default_factory``: call the factory."""


def fast_init(cls: T) -> T:
    """Give the frozen slots dataclass ``cls`` an ``__init__`` that sets its slots directly.

    Raises ``TypeError`` for a class it cannot serve so (not a slots dataclass, a
    ``__post_init__``, a keyword-only or ``init=False`` field).
    """
    fields = dataclasses.fields(cls)
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: fast_init does not run __post_init__")
    ns: dict[str, Any] = {"_FACTORY": _FACTORY}
    params: list[str] = []
    body: list[str] = []
    for f in fields:
        slot = cls.__dict__.get(f.name)
        if not isinstance(slot, types.MemberDescriptorType) or f.kw_only or not f.init:
            raise TypeError(f"{cls.__name__}.{f.name}: not a plain slot fast_init can set")
        name = f.name
        ns[f"_set_{name}"] = slot.__set__
        if f.default is not dataclasses.MISSING:
            ns[f"_default_{name}"] = f.default
            params.append(f"{name}=_default_{name}")
        elif f.default_factory is not dataclasses.MISSING:
            ns[f"_factory_{name}"] = f.default_factory
            params.append(f"{name}=_FACTORY")
            body.append(f"    if {name} is _FACTORY: {name} = _factory_{name}()")
        else:
            params.append(name)
        body.append(f"    _set_{name}(self, {name})")
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body or ["    pass"])
    exec(source, ns)  # the source is built above from the field names only
    init = ns["__init__"]
    own = cls.__init__  # type: ignore[misc]
    init.__qualname__ = own.__qualname__
    init.__annotations__ = dict(own.__annotations__)
    init.__doc__ = own.__doc__
    cls.__init__ = init  # type: ignore[misc]
    return cls
