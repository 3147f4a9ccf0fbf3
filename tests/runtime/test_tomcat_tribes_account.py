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
