"""The wire codec: a compact binary frame with per-protocol message registration.

Frame layout (network byte order)::

    magic   2 bytes  b"RC"
    version u8       WIRE_VERSION
    type    u16      message type id (registered per protocol)
    cluster u32      cluster id (a hash of the cluster name)
    slen    u8       length of the sender id
    sender  slen     sender node id, UTF-8
    length  u32      length of the body
    body    length   the message's fields, in declaration order

A message type is a frozen dataclass decorated with :func:`wire`. Its fields are
encoded from their annotations: ``int`` (i64), ``bool``, ``float``, ``str``,
``bytes``, ``IntEnum`` subclasses, another registered message (inline), ``object``
(any registered message, tagged with its type id), ``X | None`` and ``tuple[X, ...]``
of any of those. Decoding any byte string either returns a
:class:`Frame` or raises :class:`DecodeError`, never anything else.

**Cost.** Decoding is linear in the frame's length, whatever the bytes: a frame is
decoded once by the generated fast decoder (:mod:`ringcast.core._codegen`) and, only if
that fails, once more by the generic one, which names the error. Neither retries a
nested message: each path decodes a message inside another with its own kind of decoder
(the fast path with fast decoders that raise on anything unexpected, the generic path
with generic ones), so a failure deep inside costs two passes over the frame, not two
per level. Messages nest through ``object`` fields (a redundant-ring packet carries a
single-ring message, a reliable-unicast frame its payload) at most
:data:`MAX_NESTING` deep; a deeper frame is refused with :class:`DecodeError` (no
protocol nests more than two).
"""

from __future__ import annotations

import enum
import functools
import struct
import threading
import types
import typing
import zlib
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, TypeVar

from ringcast.core import _codegen

MAGIC = b"RC"
WIRE_VERSION = 1
MAX_FRAME = 1 << 24
MAX_NESTING = 4
"""Messages carried in ``object`` fields inside one frame, one in another, at most."""
FAST_CODECS = True  # generated per-class codecs (see _codegen); the generic path is the reference

_HEAD = struct.Struct("!2sBHIB")
_U32 = struct.Struct("!I")
_I64 = struct.Struct("!q")
_F64 = struct.Struct("!d")
_U8 = struct.Struct("!B")


class DecodeError(ValueError):
    """The bytes are not a valid ringcast frame; the message says why."""


class EncodeError(ValueError):
    """A message could not be encoded (a field out of range, an unregistered type)."""


@dataclass(frozen=True, slots=True)
class Frame:
    msg_type: int
    cluster_id: int
    sender: str
    msg: Any


def cluster_id_of(name: str) -> int:
    """The 32-bit cluster id carried in every frame, derived from the cluster's name."""
    return zlib.crc32(name.encode()) & 0xFFFFFFFF


_Enc = Callable[[Any, list[bytes]], None]
_Dec = Callable[[memoryview, int], tuple[Any, int]]
_Size = Callable[[Any], int]

_BY_TYPE: dict[int, type] = {}
_CODECS: dict[type, tuple[int, _Enc, _Dec]] = {}
"""Per class: its type id, its encoder and its decoder (fast, falling back to generic)."""
_FAST: dict[type, tuple[int, _Enc, _Dec]] = {}
"""Per class: as ``_CODECS``, with the fast decoder alone (it raises anything on input it
does not take): what a fast decoder calls for a message nested in its own."""
_GENERIC_DEC: dict[type, _Dec] = {}
"""Per class: the generic decoder alone: what a generic decoder calls for a nested one."""
_SIZES: dict[type, _Size] = {}
"""Per class: its generated size function, which raises on values it does not count (see
:func:`encoded_size`); empty when the generated codecs are switched off."""

T = TypeVar("T")


def wire(type_id: int) -> Callable[[type[T]], type[T]]:
    """Register a frozen dataclass as a wire message with the given type id (1..65535)."""

    def register(cls: type[T]) -> type[T]:
        if not is_dataclass(cls):
            raise TypeError(f"{cls.__name__} must be a dataclass to be a wire message")
        if not 0 < type_id < 0x10000:
            raise ValueError(f"message type id {type_id} out of range 1..65535")
        if type_id in _BY_TYPE and _BY_TYPE[type_id] is not cls:
            other = _BY_TYPE[type_id].__name__
            raise ValueError(f"message type id {type_id:#06x} already used by {other}")
        enc, dec, fast_dec, generic_dec, size = _compile_message(cls)
        _BY_TYPE[type_id] = cls
        _CODECS[cls] = (type_id, enc, dec)
        _FAST[cls] = (type_id, enc, fast_dec)
        _GENERIC_DEC[cls] = generic_dec
        if size is not None:
            _SIZES[cls] = size
        return cls

    return register


def registered_types() -> dict[int, type]:
    """Every registered message class by type id (for tests and tooling)."""
    return dict(_BY_TYPE)


def type_id_of(cls: type) -> int:
    return _CODECS[cls][0]


# ---------------------------------------------------------------- field codecs


def _need(buf: memoryview, off: int, n: int) -> None:
    if n < 0 or off + n > len(buf):
        raise DecodeError(f"truncated: need {n} bytes at offset {off}, have {len(buf) - off}")


def _enc_int(v: Any, out: list[bytes]) -> None:
    if type(v) is not int and not isinstance(v, int):
        raise EncodeError(f"expected int, got {type(v).__name__}")
    try:
        out.append(_I64.pack(v))
    except struct.error as e:
        raise EncodeError(f"int {v} out of 64-bit range") from e


def _dec_int(buf: memoryview, off: int) -> tuple[Any, int]:
    _need(buf, off, 8)
    return _I64.unpack_from(buf, off)[0], off + 8


def _enc_bool(v: Any, out: list[bytes]) -> None:
    out.append(b"\x01" if v else b"\x00")


def _dec_bool(buf: memoryview, off: int) -> tuple[Any, int]:
    _need(buf, off, 1)
    b = buf[off]
    if b > 1:
        raise DecodeError(f"bad bool byte {b} at offset {off}")
    return b == 1, off + 1


def _enc_float(v: Any, out: list[bytes]) -> None:
    out.append(_F64.pack(v))


def _dec_float(buf: memoryview, off: int) -> tuple[Any, int]:
    _need(buf, off, 8)
    return _F64.unpack_from(buf, off)[0], off + 8


def _enc_bytes(v: Any, out: list[bytes]) -> None:
    if not isinstance(v, bytes | bytearray | memoryview):
        raise EncodeError(f"expected bytes, got {type(v).__name__}")
    out.append(_U32.pack(len(v)))
    out.append(bytes(v))


def _dec_bytes(buf: memoryview, off: int) -> tuple[Any, int]:
    _need(buf, off, 4)
    (n,) = _U32.unpack_from(buf, off)
    off += 4
    _need(buf, off, n)
    return bytes(buf[off : off + n]), off + n


def _enc_str(v: Any, out: list[bytes]) -> None:
    if not isinstance(v, str):
        raise EncodeError(f"expected str, got {type(v).__name__}")
    _enc_bytes(v.encode(), out)


def _dec_str(buf: memoryview, off: int) -> tuple[Any, int]:
    raw, off = _dec_bytes(buf, off)
    try:
        return raw.decode(), off
    except UnicodeDecodeError as e:
        raise DecodeError(f"invalid UTF-8 in string field: {e.reason}") from None


def _enum_codec(cls: type[enum.IntEnum]) -> tuple[_Enc, _Dec]:
    def enc(v: Any, out: list[bytes]) -> None:
        out.append(_I64.pack(int(v)))

    def dec(buf: memoryview, off: int) -> tuple[Any, int]:
        raw, off = _dec_int(buf, off)
        try:
            return cls(raw), off
        except ValueError:
            raise DecodeError(f"{raw} is not a valid {cls.__name__}") from None

    return enc, dec


def _tuple_codec(item_enc: _Enc, item_dec: _Dec, min_item: int) -> tuple[_Enc, _Dec]:
    def enc(v: Any, out: list[bytes]) -> None:
        out.append(_U32.pack(len(v)))
        for x in v:
            item_enc(x, out)

    def dec(buf: memoryview, off: int) -> tuple[Any, int]:
        _need(buf, off, 4)
        (n,) = _U32.unpack_from(buf, off)
        off += 4
        # Each item takes at least min_item bytes: refuse counts the buffer cannot hold.
        _need(buf, off, n * min_item)
        items = []
        for _ in range(n):
            x, off = item_dec(buf, off)
            items.append(x)
        return tuple(items), off

    return enc, dec


def _optional_codec(inner_enc: _Enc, inner_dec: _Dec) -> tuple[_Enc, _Dec]:
    def enc(v: Any, out: list[bytes]) -> None:
        if v is None:
            out.append(b"\x00")
        else:
            out.append(b"\x01")
            inner_enc(v, out)

    def dec(buf: memoryview, off: int) -> tuple[Any, int]:
        present, off = _dec_bool(buf, off)
        if not present:
            return None, off
        return inner_dec(buf, off)

    return enc, dec


_PRIMS: dict[Any, tuple[_Enc, _Dec, int]] = {
    int: (_enc_int, _dec_int, 8),
    bool: (_enc_bool, _dec_bool, 1),
    float: (_enc_float, _dec_float, 8),
    bytes: (_enc_bytes, _dec_bytes, 4),
    str: (_enc_str, _dec_str, 4),
}


_U16 = struct.Struct("!H")


def _enc_any(v: Any, out: list[bytes]) -> None:
    """A field annotated ``object`` holds any registered message: its type id, then its body."""
    try:
        type_id, enc, _ = _CODECS[type(v)]
    except KeyError:
        raise EncodeError(f"{type(v).__name__} is not a registered wire message") from None
    out.append(_U16.pack(type_id))
    enc(v, out)


class _Nesting(threading.local):
    depth = 0


_nesting = _Nesting()


def _any_decoder(decoders: dict[type, Any], fast: bool) -> _Dec:
    """The decoder of an ``object`` field: a type id, then that message's body, decoded
    by ``decoders[cls]`` (the fast ones, or the generic ones; see the module's doc), at
    most :data:`MAX_NESTING` deep."""

    def dec(buf: memoryview, off: int) -> tuple[Any, int]:
        _need(buf, off, 2)
        (type_id,) = _U16.unpack_from(buf, off)
        cls = _BY_TYPE.get(type_id)
        if cls is None:
            raise DecodeError(f"unknown nested message type {type_id:#06x}")
        nesting = _nesting
        if nesting.depth >= MAX_NESTING:
            raise DecodeError(f"messages nested more than {MAX_NESTING} deep")
        nesting.depth += 1
        try:
            return (decoders[cls][2] if fast else decoders[cls])(buf, off + 2)  # type: ignore[no-any-return]
        finally:
            nesting.depth -= 1

    return dec


_dec_any_fast = _any_decoder(_FAST, True)
_dec_any_generic = _any_decoder(_GENERIC_DEC, False)


def _size_any(v: Any) -> int:
    """The encoded size of an ``object`` field: a type id, then the message's body."""
    return 2 + _SIZES[type(v)](v)


def _size_by_encoding(enc: _Enc, v: Any) -> int:
    out: list[bytes] = []
    enc(v, out)
    return sum(map(len, out))


def _size_for(tp: Any, owner: str) -> _Size:
    """The size function of a field of type ``tp`` that the generated size function does
    not count inline: a message's own, else the length of what the field's encoder writes."""
    if tp is object:
        return _size_any
    if isinstance(tp, type) and tp in _SIZES:
        return _SIZES[tp]
    return functools.partial(_size_by_encoding, _codec_for(tp, owner, False)[0])


def _codec_for(tp: Any, owner: str, fast: bool) -> tuple[_Enc, _Dec, int]:
    """The encoder, decoder and least encoded size of a field of type ``tp``; a message
    inside it is decoded by its fast decoder alone if ``fast``, else its generic one."""
    if tp is object:
        return _enc_any, _dec_any_fast if fast else _dec_any_generic, 2
    if tp in _PRIMS:
        return _PRIMS[tp]
    if isinstance(tp, type) and issubclass(tp, enum.IntEnum):
        enc, dec = _enum_codec(tp)
        return enc, dec, 8
    if isinstance(tp, type) and tp in _CODECS:
        _, enc, _ = _CODECS[tp]
        return enc, _FAST[tp][2] if fast else _GENERIC_DEC[tp], 0
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        ienc, idec, imin = _codec_for(args[0], owner, fast)
        enc, dec = _tuple_codec(ienc, idec, imin)
        return enc, dec, 4
    if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        inner = args[0] if args[1] is type(None) else args[1]
        ienc, idec, _ = _codec_for(inner, owner, fast)
        enc, dec = _optional_codec(ienc, idec)
        return enc, dec, 1
    raise TypeError(f"{owner}: field type {tp!r} has no wire encoding")


def _compile_message(cls: type) -> tuple[_Enc, _Dec, _Dec, _Dec, _Size | None]:
    """The encoder of ``cls``, its decoder (fast, falling back to generic on any error),
    its fast decoder alone, its generic decoder alone and its generated size function
    (None when the generated codecs are switched off)."""
    hints = typing.get_type_hints(cls)
    plan = [
        (f.name, *_codec_for(hints[f.name], f"{cls.__name__}.{f.name}", False)[:2])
        for f in fields(cls)
    ]
    names = [p[0] for p in plan]
    encs = [p[1] for p in plan]
    decs = [p[2] for p in plan]

    def enc(msg: Any, out: list[bytes]) -> None:
        if type(msg) is not cls:
            raise EncodeError(f"expected {cls.__name__}, got {type(msg).__name__}")
        for name, e in zip(names, encs, strict=True):
            try:
                e(getattr(msg, name), out)
            except EncodeError as err:
                raise EncodeError(f"{cls.__name__}.{name}: {err}") from None

    def dec(buf: memoryview, off: int) -> tuple[Any, int]:
        values = []
        for d in decs:
            v, off = d(buf, off)
            values.append(v)
        return cls(*values), off

    if not FAST_CODECS:
        return enc, dec, dec, dec, None
    fast_decs = [
        _codec_for(hints[f.name], f"{cls.__name__}.{f.name}", True)[1] for f in fields(cls)
    ]
    sizes = [_size_for(hints[f.name], f"{cls.__name__}.{f.name}") for f in fields(cls)]
    item_codecs = {tp: _PRIMS[tp] for tp in (int, str, bytes)}
    fenc, fdec, size = _codegen.generate(
        cls,
        list(zip(encs, fast_decs, sizes, strict=True)),
        _FAST,
        item_codecs,
        _SIZES,
        (enc, dec),
    )
    return fenc, fdec, fdec.fast, dec, size  # type: ignore[attr-defined]


# ---------------------------------------------------------------- frames


def encode_body(msg: Any) -> bytes:
    try:
        _, enc, _ = _CODECS[type(msg)]
    except KeyError:
        raise EncodeError(f"{type(msg).__name__} is not a registered wire message") from None
    out: list[bytes] = []
    enc(msg, out)
    return b"".join(out)


def encoded_size(msg: Any) -> int:
    """``len(encode_body(msg))``, and raising what it raises, counted without building the
    bytes when the message's generated size function takes the values it holds."""
    size = _SIZES.get(type(msg))
    if size is not None:
        try:
            return size(msg)
        except Exception:  # a value it does not count: the encoder decides
            pass
    return len(encode_body(msg))


def encode(msg: Any, *, sender: str, cluster_id: int = 0) -> bytes:
    """Encode ``msg`` (a registered message) into one frame."""
    try:
        type_id, enc, _ = _CODECS[type(msg)]
    except KeyError:
        raise EncodeError(f"{type(msg).__name__} is not a registered wire message") from None
    sender_b = sender.encode()
    if len(sender_b) > 255:
        raise EncodeError(f"sender id {sender!r} longer than 255 bytes")
    out: list[bytes] = []
    enc(msg, out)
    body = b"".join(out)
    if len(body) > MAX_FRAME:
        raise EncodeError(f"message body of {len(body)} bytes exceeds {MAX_FRAME}")
    return b"".join(
        (
            _HEAD.pack(MAGIC, WIRE_VERSION, type_id, cluster_id & 0xFFFFFFFF, len(sender_b)),
            sender_b,
            _U32.pack(len(body)),
            body,
        )
    )


def decode(data: bytes | bytearray | memoryview) -> Frame:
    """Decode one frame; raise :class:`DecodeError` (only) for anything malformed."""
    buf = memoryview(data)
    if buf.ndim != 1 or buf.itemsize != 1:
        buf = buf.cast("B")
    if len(buf) < _HEAD.size:
        raise DecodeError(f"frame of {len(buf)} bytes is shorter than the {_HEAD.size}-byte header")
    magic, version, type_id, cluster, slen = _HEAD.unpack_from(buf, 0)
    if magic != MAGIC:
        raise DecodeError(f"bad magic {bytes(magic)!r}, expected {MAGIC!r}")
    if version != WIRE_VERSION:
        raise DecodeError(f"unsupported wire version {version}, expected {WIRE_VERSION}")
    cls = _BY_TYPE.get(type_id)
    if cls is None:
        raise DecodeError(f"unknown message type {type_id:#06x}")
    off = _HEAD.size
    _need(buf, off, slen)
    try:
        sender = bytes(buf[off : off + slen]).decode()
    except UnicodeDecodeError:
        raise DecodeError("sender id is not valid UTF-8") from None
    off += slen
    _need(buf, off, 4)
    (length,) = _U32.unpack_from(buf, off)
    off += 4
    if off + length != len(buf):
        raise DecodeError(f"body length {length} does not match the {len(buf) - off} bytes left")
    _, _, dec = _CODECS[cls]
    try:
        msg, end = dec(buf, off)
    except DecodeError:
        raise
    except (struct.error, ValueError, TypeError, IndexError, OverflowError) as e:
        raise DecodeError(f"malformed {cls.__name__} body: {e}") from None
    if end != len(buf):
        raise DecodeError(f"{len(buf) - end} trailing bytes after {cls.__name__} body")
    return Frame(type_id, cluster, sender, msg)
