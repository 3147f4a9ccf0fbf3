"""Comparing Arrow types with the trace schema: exact match, compatible, and display names."""

from __future__ import annotations

import pyarrow as pa

__all__ = ["compatible", "same_type", "type_name"]


def type_name(dtype: pa.DataType) -> str:
    """A short name for ``dtype``: ``int64``, ``string``, ``list<string>``, ..."""
    if _is_list(dtype):
        return f"{_list_kind(dtype)}<{type_name(dtype.value_type)}>"
    return str(dtype)


def same_type(found: pa.DataType, expected: pa.DataType) -> bool:
    """Whether ``found`` is ``expected``, ignoring the name of a list's item field.

    Parquet files written by Spark call the list item ``element``, Arrow calls it
    ``item``; both are the same ``list<string>``.
    """
    if pa.types.is_list(expected):
        return pa.types.is_list(found) and same_type(found.value_type, expected.value_type)
    return found.equals(expected)


def compatible(found: pa.DataType, expected: pa.DataType) -> bool:
    """Whether a column of type ``found`` may be cast to ``expected`` without changing meaning.

    Accepted: any integer type for an integer column (the cast checks for overflow),
    ``large_string``, ``string_view`` and dictionary-encoded strings for a string
    column, any list flavour of a compatible item type for ``list<string>``, and the
    ``null`` type (a column that is null in every row) for any column.
    """
    if pa.types.is_null(found) or same_type(found, expected):
        return True
    if pa.types.is_dictionary(found):
        return compatible(found.value_type, expected)
    if pa.types.is_integer(expected):
        return pa.types.is_integer(found)
    if pa.types.is_string(expected):
        return _is_string_like(found)
    if pa.types.is_list(expected):
        return _is_list(found) and compatible(found.value_type, expected.value_type)
    return False


def _is_string_like(dtype: pa.DataType) -> bool:
    return (
        pa.types.is_string(dtype)
        or pa.types.is_large_string(dtype)
        or getattr(pa.types, "is_string_view", _never)(dtype)
    )


def _is_list(dtype: pa.DataType) -> bool:
    return (
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
        or getattr(pa.types, "is_list_view", _never)(dtype)
        or getattr(pa.types, "is_large_list_view", _never)(dtype)
    )


def _list_kind(dtype: pa.DataType) -> str:
    if pa.types.is_large_list(dtype):
        return "large_list"
    if pa.types.is_fixed_size_list(dtype):
        return f"fixed_size_list[{dtype.list_size}]"
    if pa.types.is_list(dtype):
        return "list"
    return str(dtype).split("<", 1)[0]


def _never(_dtype: pa.DataType) -> bool:
    return False
