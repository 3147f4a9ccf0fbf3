"""The replicated key-value store example converges on every replica."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

from .conftest import TOTAL_ORDER

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kvstore.py"


def _load_example():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("ringcast_example_kvstore", EXAMPLE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not TOTAL_ORDER, reason="no total-order protocol registered yet")
@pytest.mark.parametrize("protocol", TOTAL_ORDER)
def test_kvstore_replicas_agree(tmp_path: Path, protocol: str) -> None:
    kv = _load_example()
    maps = asyncio.run(kv.demo(tmp_path, protocol, writes=15))
    assert len(maps) == 3
    assert maps[0] == maps[1] == maps[2]
    assert set(maps[0]) == {f"key{k}" for k in range(5)}
