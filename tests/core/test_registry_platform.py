"""Protocol facts live in the protocol's spec; families are found through entry points."""

from __future__ import annotations

import importlib.metadata

import pytest

from ringcast.lab import properties
from ringcast.protocols import registry
from ringcast.protocols.registry import ENTRY_POINT_GROUP, ProtocolSpec


def _factory(ctx):  # pragma: no cover - never built
    raise AssertionError


def test_every_builtin_family_is_an_entry_point_naming_its_spec() -> None:
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    assert {"basic", "raincore", "totem"} <= set(eps)
    for name, ep in eps.items():
        assert ep.load() is registry.get(name)


def test_the_lab_reads_claims_and_scopes_from_the_spec() -> None:
    totem = registry.get("totem")
    assert properties.claims("totem") == totem.claims
    assert properties.order_scope("totem") == "view"
    assert properties.order_scope("raincore") == "run"
    assert properties.converge_on("raincore") == "members"
    assert properties.total_orders("raincore") is None
    assert properties.total_orders("totem") == ("agreed", "safe")
    # a protocol this process does not know: the default claims
    assert properties.claims("no-such-protocol") == registry.DEFAULT_CLAIMS
    assert properties.claims("totem", {"totem": ["fifo"]}) == {"fifo"}


def test_a_spec_claiming_an_unknown_property_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown property 'telepathy'"):
        ProtocolSpec("x", _factory, claims=frozenset({"telepathy"}))
    with pytest.raises(ValueError, match="order_scope"):
        ProtocolSpec("x", _factory, order_scope="galaxy")


def test_kinds_are_the_hosts_and_the_protocols_own() -> None:
    raincore = registry.get("raincore")
    assert set(registry.HOST_KINDS) <= set(raincore.kinds)
    assert "911" in raincore.kinds and "911" not in registry.HOST_KINDS


def test_every_builtin_family_names_its_failure_detection_timeout() -> None:
    """The hostile generator scales its faults by it, so every family can be soaked."""
    assert (
        registry.get("raincore").timeout_ns()
        == registry.get("raincore").settings["hungry_timeout"].default
    )
    assert registry.get("tribes").timeout_ns({"member_drop_time": "300ms"}) == 300_000_000
    # GMS has no single setting: heartbeat period x missed heartbeats, plus the probe's wait
    gms = registry.get("gms")
    assert gms.timeout_ns() == 50_000_000 * 4 + 150_000_000
    assert gms.timeout_ns({"heartbeat_interval": "10ms", "heartbeat_misses": 3}) == 180_000_000
    assert (
        gms.timeout_ns(
            {"heartbeat_interval": "10ms", "heartbeat_misses": 3, "suspect_verify_timeout": 0}
        )
        == 30_000_000
    )
    for name in registry.installed_names():  # not what other tests registered by hand
        if name != "basic":
            assert registry.get(name).timeout_ns() is not None, name


def test_a_timeout_naming_no_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="timeout names no setting 'nap'"):
        ProtocolSpec("x", _factory, timeout="nap")
