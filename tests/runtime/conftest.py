"""Shared helpers for the runtime tests: loopback clusters in a temporary directory."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ringcast.protocols import registry
from ringcast.runtime.cluster import free_port
from ringcast.runtime.config import ClusterConfig, load_config, render_config
from ringcast.runtime.security import write_key_file

# Protocols registered now (raincore and totem register themselves when present).
PROTOCOLS = registry.names()
TOTAL_ORDER = [p for p in PROTOCOLS if p in ("raincore", "totem")]


def make_config(
    directory: Path,
    nodes: list[str],
    protocol: str,
    *,
    settings: Mapping[str, Any] | None = None,
    security: str = "hmac",
    name: str = "test",
    trace_format: str = "jsonl",
    addresses: Mapping[str, str] | None = None,
) -> ClusterConfig:
    """Write a loopback cluster file (ephemeral ports) and a key; return the loaded config."""
    directory.mkdir(parents=True, exist_ok=True)
    key = directory / "cluster.key"
    if not key.exists():
        write_key_file(key)
    entries = [(n, [(addresses or {}).get(n) or f"127.0.0.1:{free_port()}"], None) for n in nodes]
    text = render_config(
        name=name,
        protocol=protocol,
        nodes=entries,
        settings=settings,
        security=security,
        trace_format=trace_format,
    )
    path = directory / "cluster.toml"
    path.write_text(text)
    return load_config(path)


async def until(pred: Callable[[], bool], timeout: float, what: str) -> None:
    """Await ``pred()`` becoming true, checking on every loop turn, at most ``timeout`` s."""

    async def poll() -> None:
        while not pred():
            await asyncio.sleep(0.005)

    try:
        await asyncio.wait_for(poll(), timeout)
    except TimeoutError:
        pytest.fail(f"timed out after {timeout}s waiting for {what}")
