from __future__ import annotations

from pathlib import Path

import pytest

from ringcast.runtime.config import ConfigError, load_config

GOOD = """
[cluster]
name = "demo"
protocol = "basic"
key_file = "k.key"

[settings]
heartbeat_interval = "20ms"

[[node]]
id = "A"
addresses = ["127.0.0.1:7001"]
status = "127.0.0.1:8001"

[[node]]
id = "B"
addresses = ["127.0.0.1:7002"]
join = true
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.toml"
    p.write_text(text)
    return p


def test_good_config(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, GOOD))
    assert cfg.name == "demo" and cfg.protocol == "basic"
    assert cfg.settings["heartbeat_interval"] == 20_000_000
    assert cfg.settings["max_tries"] == 5  # default filled in
    # a suspicion is confirmed by a direct probe by default; a cluster file may turn it off
    assert cfg.settings["suspect_verify_timeout"] == 150_000_000
    assert (
        load_config(
            write(tmp_path, GOOD.replace('"20ms"', '"20ms"\nsuspect_verify_timeout = 0'))
        ).settings["suspect_verify_timeout"]
        == 0
    )
    assert cfg.members == ("A",) and cfg.peers == ("A", "B")
    assert cfg.node("A").status == ("127.0.0.1", 8001)
    assert cfg.key_file == tmp_path.resolve() / "k.key"
    assert cfg.networks == 1 and cfg.transport == "udpu" and cfg.security == "hmac"


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ('protocol = "basic"', 'protocol = "nope"', "cluster.protocol"),
        (
            'heartbeat_interval = "20ms"',
            'heartbeat_interval = "fast"',
            "settings.heartbeat_interval",
        ),
        ('heartbeat_interval = "20ms"', "bogus = 1", "settings.bogus"),
        ('key_file = "k.key"', 'key_file = "k.key"\nsecurity = "rot13"', "cluster.security"),
        ('key_file = "k.key"', "", "cluster.key_file"),
        ('key_file = "k.key"', 'key_file = "k.key"\ncolour = 1', "cluster.colour"),
        (
            'addresses = ["127.0.0.1:7002"]',
            'addresses = ["127.0.0.1:7001"]',
            "node[1].addresses[0]",
        ),
        (
            'addresses = ["127.0.0.1:7002"]',
            'addresses = ["127.0.0.1:99999"]',
            "node[1].addresses[0]",
        ),
        (
            'addresses = ["127.0.0.1:7002"]',
            'addresses = ["host.example:1"]',
            "node[1].addresses[0]",
        ),
        ('id = "B"', 'id = "A"', "node[1].id"),
        ('id = "B"', 'id = "has space"', "node[1].id"),
        ("join = true", "join = 3", "node[1].join"),
        ('key_file = "k.key"', 'key_file = "k.key"\norigin_clock = "tai"', "cluster.origin_clock"),
        (
            'key_file = "k.key"',
            'key_file = "k.key"\ntrace_write_through = "yes"',
            "cluster.trace_write_through",
        ),
        ('key_file = "k.key"', 'key_file = "k.key"\ntransport = "multicast"', "network"),
    ],
)
def test_bad_config_names_the_key(tmp_path: Path, old: str, new: str, needle: str) -> None:
    assert old in GOOD
    with pytest.raises(ConfigError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        load_config(write(tmp_path, GOOD.replace(old, new, 1)))


def test_missing_and_broken_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such cluster file"):
        load_config(tmp_path / "absent.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[cluster\nname="))
    with pytest.raises(ConfigError, match="at least one"):
        load_config(write(tmp_path, '[cluster]\nname="x"\nprotocol="basic"\nkey_file="k"\n'))


def test_multicast_config(tmp_path: Path) -> None:
    text = (
        GOOD.replace('key_file = "k.key"', 'key_file = "k.key"\ntransport = "multicast"', 1)
        + '\n[[network]]\nmulticast = "239.192.0.9:5405"\n'
    )
    cfg = load_config(write(tmp_path, text))
    assert cfg.multicast == (("239.192.0.9", 5405),)
    with pytest.raises(ConfigError, match=r"network\[0\].multicast"):
        load_config(write(tmp_path, text.replace("239.192.0.9", "10.0.0.1")))
