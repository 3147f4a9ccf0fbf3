"""Tomcat 6.0.14's NonBlockingCoordinator, as the class's published source shows it,
against the Tomcat that Debian installs (10.1's tomcat10-tribes.jar), read from its
bytecode (ringcast.references.tribes.bytecode): three points of the account still hold,
one was fixed. docs/references.md says so; this keeps it true.

The reader is tried on planted listings too, so that a point it reports is one it can
tell apart."""

from __future__ import annotations

import pytest

from ringcast.references.install import ReferenceUnavailable
from ringcast.references.tribes import bytecode


@pytest.fixture(scope="module")
def listings() -> tuple[str, str]:
    try:
        return bytecode.javap(bytecode.COORDINATOR), bytecode.javap(bytecode.ORDER)
    except ReferenceUnavailable as e:
        pytest.skip(str(e))


def test_tomcat_10_still_has_three_of_the_points_and_fixed_the_signed_order(
    listings: tuple[str, str],
) -> None:
    found = {p.name: p.holds for p in bytecode.read_points(*listings)}
    assert found == {
        "halt and release do nothing": True,
        "15 s waits": True,
        "a foreign token dies at the leader": True,
        "signed bytes in AbsoluteOrder": False,
    }


def test_the_reader_tells_a_changed_class_apart(listings: tuple[str, str]) -> None:
    coord, order = listings
    # halt() given a body, the timeout changed, the leader's branch forwarding the
    # token, the comparator without its masks: each point read the other way
    halted = coord.replace(
        "  protected void halt();\n    Code:\n       0: return",
        "  protected void halt();\n    Code:\n       0: aload_0\n       1: return",
    )
    assert halted != coord
    retimed = coord.replace("waitForCoordMsgTimeout = 15000l;", "waitForCoordMsgTimeout = 5000l;")
    forwarding = coord.replace("11: goto          28", "11: goto          14")
    assert forwarding != coord
    signed = order.replace("sipush        255", "nop")
    changed = {
        "halt and release do nothing": bytecode.read_points(halted, order),
        "15 s waits": bytecode.read_points(retimed, order),
        "a foreign token dies at the leader": bytecode.read_points(forwarding, order),
        "signed bytes in AbsoluteOrder": bytecode.read_points(coord, signed),
    }
    base = {p.name: p.holds for p in bytecode.read_points(coord, order)}
    for name, pts in changed.items():
        now = {p.name: p.holds for p in pts}
        assert now[name] is not base[name], name
        assert {k: v for k, v in now.items() if k != name} == {
            k: v for k, v in base.items() if k != name
        }, name


def test_a_send_waits_for_an_ack_three_seconds_and_is_sent_again_once() -> None:
    """What lets Tomcat Tribes deliver a message twice (docs/references.md): the default
    send is acknowledged, the ack is awaited 3 s, and a failed send goes out once more;
    and the reader reads a changed default as changed."""
    try:
        channel, sender = bytecode.javap(bytecode.CHANNEL), bytecode.javap(bytecode.SENDER)
    except ReferenceUnavailable as e:
        pytest.skip(str(e))
    assert bytecode.read_send_defaults(channel, sender) == {
        "options": 2,
        "use_ack": 1,
        "timeout_ms": 3000,
        "max_retry_attempts": 1,
    }
    no_retry = sender.replace("iconst_1\n      66: putfield", "iconst_0\n      66: putfield")
    assert "iconst_0\n      66: putfield" in no_retry  # the planted change took
    assert bytecode.read_send_defaults(channel, no_retry)["max_retry_attempts"] == 0
    no_ack = channel.replace("SEND_OPTIONS_DEFAULT = 2;", "SEND_OPTIONS_DEFAULT = 0;")
    assert bytecode.read_send_defaults(no_ack, sender)["use_ack"] == 0
