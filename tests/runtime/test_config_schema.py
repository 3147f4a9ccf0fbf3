"""The cluster file's tables are typed by a schema (pydantic models); what it refuses is
said as before: the file, the key, and what the key should hold."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from ringcast.runtime.config import ConfigError, parse_config

GOOD = """[cluster]
name = "t"
protocol = "basic"
key_file = "k.key"

[[node]]
id = "A"
addresses = ["127.0.0.1:7001"]
"""


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('name = "t"', 'name = ""', "f.toml: cluster.name: expected a non-empty string, got ''"),
        ('name = "t"\n', "", "f.toml: cluster.name: missing (required)"),
        (
            'key_file = "k.key"',
            'key_file = "k.key"\nudp_offload = 1',
            "f.toml: cluster.udp_offload: expected true or false, got 1",
        ),
        (
            'key_file = "k.key"',
            'key_file = "k.key"\norigin_ns = -1',
            "f.toml: cluster.origin_ns: expected a non-negative integer, got -1",
        ),
        (
            'key_file = "k.key"',
            'key_file = "k.key"\nlog_level = "loud"',
            "f.toml: cluster.log_level: 'loud' is not one of debug, info, warning, error",
        ),
        (
            "[[node]]",
            "[nope]\n[[node]]",
            "f.toml: nope: unknown table (expected cluster, settings, network, node)",
        ),
        (
            'addresses = ["127.0.0.1:7001"]',
            "addresses = []",
            'f.toml: node[0].addresses: expected a non-empty list of "host:port"',
        ),
        (
            'addresses = ["127.0.0.1:7001"]',
            'addresses = ["127.0.0.1:7001"]\ncolour = 2',
            "f.toml: node[0].colour: unknown key (known: addresses, id, join, status)",
        ),
        (
            'addresses = ["127.0.0.1:7001"]',
            'addresses = ["127.0.0.1:7001"]\njoin = "true"',
            "f.toml: node[0].join: expected true or false, got 'true'",
        ),
        (
            '[[node]]\nid = "A"\naddresses = ["127.0.0.1:7001"]\n',
            "",
            "f.toml: node: at least one [[node]] table is required",
        ),
    ],
)
def test_a_refused_key_is_named_with_what_it_should_hold(old: str, new: str, message: str) -> None:
    assert old in GOOD
    raw = tomllib.loads(GOOD.replace(old, new, 1))
    with pytest.raises(ConfigError) as e:
        parse_config(raw, base=Path("/tmp"), source="f.toml")
    assert str(e.value) == message


def test_the_good_file_passes_with_its_defaults() -> None:
    cfg = parse_config(tomllib.loads(GOOD), base=Path("/tmp"), source="f.toml")
    assert (cfg.transport, cfg.security, cfg.run_id, cfg.trace_rotate_ns) == (
        "udpu",
        "hmac",
        "t",
        5_000_000_000,
    )
