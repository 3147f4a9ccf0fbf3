"""Generated per-message codecs: the fast path of :mod:`ringcast.core.codec`.

The generic codec walks a list of per-field functions for every message, which is
simple and gives precise errors but costs a Python call per field. Here, once per
message class at registration, the field plan is turned into the source of one
encoder, one decoder and one size function (as :mod:`dataclasses` does for
``__init__``):
consecutive ``int`` fields become one ``struct`` call, strings and bytes are sliced
inline, a frozen slots dataclass is filled slot by slot without going through its
``__init__``, and a nested message made only of such fields (a frame's ring id, the
chunks in its tuple) is written into its container's functions instead of called:
one Totem frame is one function call each way, not four.

The size function counts the bytes the encoder would write without writing them
(what the simulator needs to account for traffic). It accepts a narrower set of
values than the encoder: exactly ``int`` in the signed 64-bit range, exactly
``bool``, ``str``, ``bytes`` and ``tuple`` (of fewer than 2**32 items), and a body
under 4 GiB (so that every string's length prefix fits its u32); on anything else it
raises, and :func:`ringcast.core.codec.encoded_size` counts the encoder's bytes
instead.

The generated functions only handle well-formed input. On anything unexpected they
raise, and the caller falls back to the generic codec, which then produces exactly
the error (``DecodeError`` / ``EncodeError``) it always did. A message nested in
another is decoded by its own generated decoder alone, which raises too, so a frame
falls back once, as a whole, and the generic path then decodes it with generic
decoders only: two linear passes at worst, whatever the nesting. The two paths are
checked against each other by the codec's property tests.
"""

from __future__ import annotations

import dataclasses
import struct
import types
import typing
from collections.abc import Callable
from typing import Any

Enc = Callable[[Any, list[bytes]], None]
Dec = Callable[[memoryview, int], tuple[Any, int]]
Size = Callable[[Any], int]

_U32 = struct.Struct("!I")
_INT = "type({v}) is not int or not -0x8000000000000000 <= {v} <= 0x7FFFFFFFFFFFFFFF"
"""The condition under which ``{v}`` is not an int the size function can count (8 bytes)."""


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


def _settable(cls: type) -> list[Any] | None:
    """The slot descriptors of a frozen slots dataclass without ``__post_init__`` (its
    fields can be set one by one as its ``__init__`` would), else None."""
    slots = [cls.__dict__.get(f.name) for f in dataclasses.fields(cls)]
    if hasattr(cls, "__post_init__") or not all(
        isinstance(s, types.MemberDescriptorType) for s in slots
    ):
        return None
    return slots


def _inlinable(tp: Any, registered: dict[type, Any]) -> bool:
    """A registered message whose fields are all ints, bools, strings, bytes, inlinable
    messages or tuples of those: its codec can be written into its container's."""
    if not (isinstance(tp, type) and tp in registered and _settable(tp) is not None):
        return False
    hints = typing.get_type_hints(tp)
    for f in dataclasses.fields(tp):
        h = hints[f.name]
        kind = _kind(h, registered)
        if kind in ("int", "bool", "str", "bytes"):
            continue
        if kind == "msg" and _inlinable(h, registered):
            continue
        if kind == "tuple":
            inner = typing.get_args(h)[0]
            if inner in (int, str, bytes) or _inlinable(inner, registered):
                continue
        return False
    return True


class _Writer:
    """Writes the source of one message's fast encoder, decoder and size function, a
    nested message (a ring id in a frame, a chunk in its tuple) written inline rather
    than called."""

    def __init__(
        self,
        registered: dict[type, tuple[int, Enc, Dec]],
        item_codecs: dict[Any, tuple[Enc, Dec, int]],
        sizes: dict[type, Size],
    ):
        self.registered = registered
        self.item_codecs = item_codecs
        self.sizes = sizes
        self.ns: dict[str, Any] = {"_Fallback": _Fallback, "_u32": _U32, "new": object.__new__}
        self.enc: list[str] = []
        self.dec: list[str] = []
        self.size: list[str] = []
        self._n = 0

    def local(self, prefix: str) -> str:
        """A fresh variable name."""
        self._n += 1
        return f"{prefix}{self._n}"

    def name(self, prefix: str, value: Any) -> str:
        """A fresh global name of the generated code, bound to ``value``."""
        key = self.local(prefix)
        self.ns[key] = value
        return key

    def message(
        self,
        cls: type,
        src: str,
        pad: str,
        field_codecs: list[tuple[Enc, Dec, Size]] | None = None,
    ) -> str:
        """Lines encoding the message in variable ``src``, adding its encoded size to
        ``total`` and decoding one into the variable returned; ``field_codecs`` (the top
        message's) serve fields of other kinds, which nested messages do not have."""
        hints = typing.get_type_hints(cls)
        names = [f.name for f in dataclasses.fields(cls)]
        me = self.name("cls", cls)
        self.enc.append(f"{pad}if type({src}) is not {me}: raise _Fallback")
        self.size.append(f"{pad}if type({src}) is not {me}: raise _Fallback")
        fixed = 0  # the bytes of this message that do not depend on its values
        values: list[str] = []
        i, k = 0, len(names)
        while i < k:
            kind = _kind(hints[names[i]], self.registered)
            if kind == "int":
                j = i
                while j < k and _kind(hints[names[j]], self.registered) == "int":
                    j += 1
                run = [self.local("v") for _ in range(i, j)]
                st = self.name("s", struct.Struct("!" + "q" * (j - i)))
                width = 8 * (j - i)
                self.dec += [
                    f"{pad}if off + {width} > n: raise _Fallback",
                    f"{pad}{', '.join(run)}, = {st}.unpack_from(buf, off)",
                    f"{pad}off += {width}",
                ]
                for x, v in zip(range(i, j), run, strict=True):
                    self.enc += [
                        f"{pad}{v} = {src}.{names[x]}",
                        f"{pad}if type({v}) is not int: raise _Fallback",
                    ]
                    self.size += [
                        f"{pad}{v} = {src}.{names[x]}",
                        f"{pad}if {_INT.format(v=v)}: raise _Fallback",
                    ]
                self.enc.append(f"{pad}ap({st}.pack({', '.join(run)}))")
                fixed += width
                values += run
                i = j
                continue
            hint, name = hints[names[i]], names[i]
            v = self.local("v")
            if kind == "bool":
                self.dec += [
                    f"{pad}if off >= n or buf[off] > 1: raise _Fallback",
                    f"{pad}{v} = buf[off] == 1",
                    f"{pad}off += 1",
                ]
                self.enc.append(f"{pad}ap(b'\\x01' if {src}.{name} else b'\\x00')")
                self.size.append(f"{pad}if type({src}.{name}) is not bool: raise _Fallback")
                fixed += 1
            elif kind in ("str", "bytes"):
                self._sized(v, kind, pad)
                self.enc += [
                    f"{pad}{v} = {src}.{name}",
                    f"{pad}if type({v}) is not {kind}: raise _Fallback",
                ]
                if kind == "str":
                    self.enc.append(f"{pad}{v} = {v}.encode()")
                self.enc += [f"{pad}ap(_u32.pack(len({v})))", f"{pad}ap({v})"]
                self._size_sized(v, f"{src}.{name}", kind, pad)
                fixed += 4
            elif kind == "msg" and _inlinable(hint, self.registered):
                self.enc.append(f"{pad}{v} = {src}.{name}")
                self.size.append(f"{pad}{v} = {src}.{name}")
                got = self.message(hint, v, pad)
                self.dec.append(f"{pad}{v} = {got}")
            elif kind == "tuple" and self._tuple(v, hint, f"{src}.{name}", pad):
                fixed += 4
            else:  # an enum, an optional, a message not inlined, ...: the field's own codec
                if field_codecs is None:
                    raise AssertionError(f"{cls.__name__}.{name} cannot be inlined")
                enc, dec, size = field_codecs[i]
                e, d, z = self.name("e", enc), self.name("d", dec), self.name("z", size)
                self.dec.append(f"{pad}{v}, off = {d}(buf, off)")
                self.enc.append(f"{pad}{e}({src}.{name}, out)")
                self.size.append(f"{pad}total += {z}({src}.{name})")
            values.append(v)
            i += 1
        if fixed:
            self.size.append(f"{pad}total += {fixed}")
        out = self.local("o")
        slots = _settable(cls)
        if slots is not None:
            # A frozen slots dataclass: set each slot as its __init__ would, minus the
            # detour through the frozen __setattr__.
            self.dec.append(f"{pad}{out} = new({me})")
            for slot, v in zip(slots, values, strict=True):
                self.dec.append(f"{pad}{self.name('set', slot.__set__)}({out}, {v})")
        else:
            self.dec.append(f"{pad}{out} = {me}({', '.join(values)})")
        return out

    def _sized(self, v: str, kind: str, pad: str) -> None:
        make = "str(buf[off:end], 'utf-8')" if kind == "str" else "bytes(buf[off:end])"
        self.dec += [
            f"{pad}if off + 4 > n: raise _Fallback",
            f"{pad}ln, = _u32.unpack_from(buf, off)",
            f"{pad}off += 4",
            f"{pad}end = off + ln",
            f"{pad}if end > n: raise _Fallback",
            f"{pad}{v} = {make}",
            f"{pad}off = end",
        ]

    def _size_sized(self, v: str, src: str, kind: str, pad: str) -> None:
        """Size lines of the string or bytes in ``src``, less its 4-byte length prefix."""
        if v != src:
            self.size.append(f"{pad}{v} = {src}")
        self.size.append(f"{pad}if type({v}) is not {kind}: raise _Fallback")
        if kind == "str":  # an ASCII string encodes to one byte a character
            self.size.append(f"{pad}total += len({v}) if {v}.isascii() else len({v}.encode())")
        else:
            self.size.append(f"{pad}total += len({v})")

    def _tuple(self, v: str, hint: Any, src: str, pad: str) -> bool:
        """A tuple of ints, strings, bytes or messages; False for other items."""
        inner = typing.get_args(hint)[0]
        items, x = self.local("items"), self.local("x")
        head = [
            f"{pad}if off + 4 > n: raise _Fallback",
            f"{pad}count, = _u32.unpack_from(buf, off)",
            f"{pad}off += 4",
        ]
        enc_head = [
            f"{pad}{v} = {src}",
            f"{pad}if type({v}) is not tuple: raise _Fallback",
            f"{pad}ap(_u32.pack(len({v})))",
        ]
        size_head = [
            f"{pad}{v} = {src}",
            f"{pad}if type({v}) is not tuple or len({v}) > 0xFFFFFFFF: raise _Fallback",
        ]
        if _inlinable(inner, self.registered):
            self.dec += [*head, f"{pad}{items} = []", f"{pad}for _ in range(count):"]
            self.enc += [*enc_head, f"{pad}for {x} in {v}:"]
            self.size += [*size_head, f"{pad}for {x} in {v}:"]
            got = self.message(inner, x, pad + "    ")
            self.dec += [f"{pad}    {items}.append({got})", f"{pad}{v} = tuple({items})"]
            return True
        if inner is int:
            self.size += [
                *size_head,
                f"{pad}for {x} in {v}:",
                f"{pad}    if {_INT.format(v=x)}: raise _Fallback",
                f"{pad}total += 8 * len({v})",
            ]
        elif inner is str or inner is bytes:
            self.size += [*size_head, f"{pad}for {x} in {v}:"]
            self._size_sized(x, x, inner.__name__, pad + "    ")
            self.size.append(f"{pad}total += 4 * len({v})")
        elif inner in self.registered:
            z = self.name("z", self.sizes[inner])
            self.size += [*size_head, f"{pad}for {x} in {v}: total += {z}({x})"]
        if inner in self.registered:
            _, ienc, idec = self.registered[inner]
            minimum = 0
        elif inner in self.item_codecs:
            ienc, idec, minimum = self.item_codecs[inner]
        else:
            return False
        e, d = self.name("e", ienc), self.name("d", idec)
        self.dec += [
            *head,
            f"{pad}if off + count * {minimum} > n: raise _Fallback",
            f"{pad}{items} = []",
            f"{pad}for _ in range(count):",
            f"{pad}    {x}, off = {d}(buf, off)",
            f"{pad}    {items}.append({x})",
            f"{pad}{v} = tuple({items})",
        ]
        self.enc += [*enc_head, f"{pad}for {x} in {v}: {e}({x}, out)"]
        return True


def generate(
    cls: type,
    field_codecs: list[tuple[Enc, Dec, Size]],
    registered: dict[type, tuple[int, Enc, Dec]],
    item_codecs: dict[Any, tuple[Enc, Dec, int]],
    sizes: dict[type, Size],
    generic: tuple[Enc, Dec],
) -> tuple[Enc, Dec, Size]:
    """Build the fast encoder and decoder of ``cls``, each falling back to ``generic``,
    and its size function (which raises on what it does not count; see the module's
    doc). ``field_codecs`` are the fields' own codecs and size functions, ``sizes``
    the size functions of the messages registered so far."""
    w = _Writer(registered, item_codecs, sizes)
    w.enc = ["def fast_enc(msg, out):", "    ap = out.append"]
    w.dec = ["def fast_dec(buf, off):", "    n = len(buf)"]
    w.size = ["def fast_size(msg):", "    total = 0"]
    result = w.message(cls, "msg", "    ", field_codecs)
    w.dec.append(f"    return {result}, off")
    w.size += ["    if total > 0xFFFFFFFF: raise _Fallback", "    return total"]
    ns = w.ns
    enc_src, dec_src, size_src = w.enc, w.dec, w.size
    exec("\n".join(enc_src), ns)  # source built above from field names only
    exec("\n".join(dec_src), ns)
    exec("\n".join(size_src), ns)
    fast_enc: Enc = ns["fast_enc"]
    fast_dec: Dec = ns["fast_dec"]
    fast_size: Size = ns["fast_size"]
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

    enc.generic, enc.fast = generic_enc, fast_enc  # type: ignore[attr-defined]
    dec.generic, dec.fast = generic_dec, fast_dec  # type: ignore[attr-defined]
    return enc, dec, fast_size
