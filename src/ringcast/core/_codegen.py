"""Generated per-message codecs: the fast path of :mod:`ringcast.core.codec`.

The generic codec walks a list of per-field functions for every message, which is
simple and gives precise errors but costs a Python call per field. Here, once per
message class at registration, the field plan is turned into the source of one
encoder and one decoder function (as :mod:`dataclasses` does for ``__init__``):
consecutive ``int`` fields become one ``struct`` call, strings and bytes are sliced
inline, and a frozen slots dataclass is filled slot by slot without going through
its ``__init__``.

The generated functions only handle well-formed input. On anything unexpected they
raise, and the caller falls back to the generic codec, which then produces exactly
the error (``DecodeError`` / ``EncodeError``) it always did. The two paths are
checked against each other by the codec's property tests.
"""

from __future__ import annotations

import struct
import types
import typing
from collections.abc import Callable
from typing import Any

Enc = Callable[[Any, list[bytes]], None]
Dec = Callable[[memoryview, int], tuple[Any, int]]

_U32 = struct.Struct("!I")


class _Fallback(Exception):
    """The generated code met input it does not handle; use the generic codec."""


def _kind(tp: Any, registered: dict[type, Any]) -> str:
    if tp is int or tp is bool or tp is str or tp is bytes:
        return tp.__name__
    if isinstance(tp, type) and tp in registered:
        return "msg"
    args = typing.get_args(tp)
    if typing.get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis:
        return "tuple"
    return "other"


def generate(
    cls: type,
    names: list[str],
    hints: dict[str, Any],
    field_codecs: list[tuple[Enc, Dec]],
    registered: dict[type, tuple[int, Enc, Dec]],
    item_codecs: dict[str, tuple[Enc, Dec, int]],
    generic: tuple[Enc, Dec],
) -> tuple[Enc, Dec]:
    """Build the fast encoder and decoder of ``cls``, each falling back to ``generic``."""
    ns: dict[str, Any] = {"cls": cls, "_Fallback": _Fallback, "_u32": _U32}
    enc_src = [
        "def fast_enc(msg, out):",
        "    if type(msg) is not cls: raise _Fallback",
        "    ap = out.append",
    ]
    dec_src = ["def fast_dec(buf, off):", "    n = len(buf)"]
    values: list[str] = []
    i, k = 0, len(names)
    while i < k:
        kind = _kind(hints[names[i]], registered)
        if kind == "int":
            j = i
            while j < k and _kind(hints[names[j]], registered) == "int":
                j += 1
            run = [f"v{x}" for x in range(i, j)]
            ns[f"s{i}"] = struct.Struct("!" + "q" * (j - i))
            width = 8 * (j - i)
            dec_src += [
                f"    if off + {width} > n: raise _Fallback",
                f"    {', '.join(run)}, = s{i}.unpack_from(buf, off)",
                f"    off += {width}",
            ]
            for x in range(i, j):
                enc_src += [
                    f"    v{x} = msg.{names[x]}",
                    f"    if type(v{x}) is not int: raise _Fallback",
                ]
            enc_src.append(f"    ap(s{i}.pack({', '.join(run)}))")
            values += run
            i = j
            continue
        v, name = f"v{i}", names[i]
        if kind == "bool":
            dec_src += [
                "    if off >= n or buf[off] > 1: raise _Fallback",
                f"    {v} = buf[off] == 1",
                "    off += 1",
            ]
            enc_src.append(f"    ap(b'\\x01' if msg.{name} else b'\\x00')")
        elif kind in ("str", "bytes"):
            make = "str(buf[off:end], 'utf-8')" if kind == "str" else "bytes(buf[off:end])"
            dec_src += [
                "    if off + 4 > n: raise _Fallback",
                "    ln, = _u32.unpack_from(buf, off)",
                "    off += 4",
                "    end = off + ln",
                "    if end > n: raise _Fallback",
                f"    {v} = {make}",
                "    off = end",
            ]
            enc_src += [f"    {v} = msg.{name}", f"    if type({v}) is not {kind}: raise _Fallback"]
            if kind == "str":
                enc_src.append(f"    {v} = {v}.encode()")
            enc_src += [f"    ap(_u32.pack(len({v})))", f"    ap({v})"]
        elif (
            kind == "tuple"
            and typing.get_args(hints[name])[0] in item_codecs.keys() | registered.keys()
        ):
            inner = typing.get_args(hints[name])[0]
            if inner in registered:
                _, ienc, idec = registered[inner]
                minimum = 0
            else:
                ienc, idec, minimum = item_codecs[inner]
            ns[f"e{i}"], ns[f"d{i}"] = ienc, idec
            dec_src += [
                "    if off + 4 > n: raise _Fallback",
                "    count, = _u32.unpack_from(buf, off)",
                "    off += 4",
                f"    if off + count * {minimum} > n: raise _Fallback",
                "    items = []",
                "    for _ in range(count):",
                f"        x, off = d{i}(buf, off)",
                "        items.append(x)",
                f"    {v} = tuple(items)",
            ]
            enc_src += [
                f"    {v} = msg.{name}",
                f"    if type({v}) is not tuple: raise _Fallback",
                f"    ap(_u32.pack(len({v})))",
                f"    for x in {v}: e{i}(x, out)",
            ]
        else:  # a nested message, an enum, an optional, ...: the field's own codec
            ns[f"e{i}"], ns[f"d{i}"] = field_codecs[i]
            dec_src.append(f"    {v}, off = d{i}(buf, off)")
            enc_src.append(f"    e{i}(msg.{name}, out)")
        values.append(v)
        i += 1
    slots = [cls.__dict__.get(n) for n in names]
    if not hasattr(cls, "__post_init__") and all(
        isinstance(s, types.MemberDescriptorType) for s in slots
    ):
        # A frozen slots dataclass: set each slot as its __init__ would, minus the detour
        # through the frozen __setattr__.
        ns["new"] = object.__new__
        dec_src.append("    o = new(cls)")
        for x, slot in enumerate(slots):
            ns[f"set{x}"] = slot.__set__  # type: ignore[union-attr]
            dec_src.append(f"    set{x}(o, {values[x]})")
        dec_src.append("    return o, off")
    else:
        dec_src.append(f"    return cls({', '.join(values)}), off")
    exec("\n".join(enc_src), ns)  # source built above from field names only
    exec("\n".join(dec_src), ns)
    fast_enc: Enc = ns["fast_enc"]
    fast_dec: Dec = ns["fast_dec"]
    generic_enc, generic_dec = generic

    def enc(msg: Any, out: list[bytes]) -> None:
        mark = len(out)
        try:
            fast_enc(msg, out)
        except Exception:
            del out[mark:]
            generic_enc(msg, out)

    def dec(buf: memoryview, off: int) -> tuple[Any, int]:
        try:
            return fast_dec(buf, off)
        except Exception:
            return generic_dec(buf, off)

    enc.generic = generic_enc  # type: ignore[attr-defined]
    dec.generic = generic_dec  # type: ignore[attr-defined]
    return enc, dec
